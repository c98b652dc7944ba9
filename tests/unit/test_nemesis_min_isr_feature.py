"""min-isr-change and feature-change (#33): the packages' seeded draws, the exact
Kafka tool commands their modules run through the injector, how their lines end,
the report's pairing, and the page-cache loss the mix skips while ELR is off.

Unit tests of the logic around the faults: the nodes are fakes that record each
command and answer as Kafka's tools do. That the commands change Kafka (and that
the controller clears ELR) is tests/integration/test_fault_min_isr_feature.py's job.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from fakes import FakeCluster, FakeNode, ListRecorder
from test_nemesis_mix import FULL, SHRUNK, mix, rig, state

from elr_harness.cluster.admin_tools import (
    ELR_FEATURE,
    AdminError,
    AdminRefused,
    AdminTools,
    failure,
    parse_feature_level,
    parse_min_isr,
)
from elr_harness.cluster.node import ExecResult, NodeSpec, Role
from elr_harness.core.errors import HarnessError
from elr_harness.core.fault_meanings import ENDED_BY
from elr_harness.core.history import RESTORE, RESTORED_BY_SELF, Fault, restores
from elr_harness.nemesis.faults import PACKAGES, feature_change, min_isr_change, page_cache_loss
from elr_harness.nemesis.injector import FaultInjector, FaultRefused
from elr_harness.report.faults import FaultEvent, pair_faults

TOOLS = AdminTools("org.apache.kafka.tools.ConfigCommand",
                   "org.apache.kafka.tools.FeatureCommand",
                   "10.0.0.11:9092,10.0.0.12:9092", "10.0.0.1:9093,10.0.0.2:9093",
                   timeout_s=60.0)
JAVA = ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
        "-XX:SharedArchiveFile=/opt/harness/kafka-classes.jsa", "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off", "-cp", "/opt/kafka/libs/*"]
CONFIGS = [*JAVA, "org.apache.kafka.tools.ConfigCommand",
           "--bootstrap-server", "10.0.0.11:9092,10.0.0.12:9092"]
FEATURES = [*JAVA, "org.apache.kafka.tools.FeatureCommand",
            "--bootstrap-controller", "10.0.0.1:9093,10.0.0.2:9093"]

#: What Kafka 4.4's tools print (seen on the integration cluster).
TOPIC_DESCRIBED = (
    "Dynamic configs for topic minisr are:\n"
    "  min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
    "min.insync.replicas=2, DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1, "
    "DEFAULT_CONFIG:min.insync.replicas=1}\n"
    "  unclean.leader.election.enable=false sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
    "unclean.leader.election.enable=false, STATIC_BROKER_CONFIG:unclean.leader.election."
    "enable=false, DEFAULT_CONFIG:unclean.leader.election.enable=false}\n")
DEFAULT_DESCRIBED = (
    "Default configs for brokers in the cluster are:\n"
    "  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
    "min.insync.replicas=1}\n")


def _feature(name: str, low: str, high: str, level: str) -> str:
    """One line of `kafka-features describe` as 4.4.0 pads it."""
    return (f"Feature: {name:<40}SupportedMinVersion: {low:<16}SupportedMaxVersion: "
            f"{high:<16}FinalizedVersionLevel: {level:<16}Epoch: 9\n")


FEATURES_DESCRIBED = (_feature(ELR_FEATURE, "0", "1", "1")
                      + _feature("group.version", "0", "1", "1")
                      + _feature("metadata.version", "3.3-IV3", "4.4-IV2", "4.4-IV2"))


# -- parsing what the tools print ------------------------------------------------------

def test_the_min_isr_is_read_from_the_entitys_own_line_not_a_synonym():
    assert parse_min_isr(TOPIC_DESCRIBED) == 2
    assert parse_min_isr(DEFAULT_DESCRIBED) == 1
    assert parse_min_isr("Dynamic configs for topic t are:\n") is None


def test_a_feature_level_is_its_finalized_level_and_a_dash_is_zero():
    assert parse_feature_level(FEATURES_DESCRIBED, ELR_FEATURE) == 1
    assert parse_feature_level(_feature(ELR_FEATURE, "0", "1", "0"), ELR_FEATURE) == 0
    assert parse_feature_level(_feature(ELR_FEATURE, "0", "1", "-"), ELR_FEATURE) == 0
    assert parse_feature_level(FEATURES_DESCRIBED, "share.version") is None


@pytest.mark.parametrize(("output", "refused"), [
    # what 4.4.0 printed for a level it does not support, and a min ISR of 0
    ("Could not upgrade eligible.leader.replicas.version to 7. The update failed for all "
     "features since the following feature had an error: Invalid update version 7 for "
     "feature eligible.leader.replicas.version. Local controller 1001 only supports "
     "versions 0-1\n1 out of 1 operation(s) failed.\n", True),
    ("\tat org.apache.kafka.tools.ConfigCommand.main(ConfigCommand.java:140)\n"
     "Caused by: org.apache.kafka.common.errors.InvalidConfigurationException: Invalid "
     "value 0 for configuration min.insync.replicas: Value must be at least 1\n", True),
    ("Caused by: org.apache.kafka.common.errors.UnsupportedEndpointTypeException: This "
     "Admin API is not yet supported when communicating directly with the controller "
     "quorum.", False),
    ("Could not downgrade eligible.leader.replicas.version to 0. The request timed out.", False),
    ("org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node", False),
    ("", False),  # killed by its bound: nothing said
])
def test_a_refusal_is_told_from_an_unknown_outcome(output, refused):
    error = failure("controller-1", [*CONFIGS, "--describe"], 1, output)
    assert isinstance(error, AdminError)
    assert isinstance(error, AdminRefused) == refused


# -- the kinds' commands, on fake nodes ------------------------------------------------

class ToolNode(FakeNode):
    """A node that answers Kafka's tools as a cluster at min ISR 2, ELR on, would."""

    def __init__(self, spec: NodeSpec, answers: list[ExecResult] | None = None) -> None:
        super().__init__(spec)
        self.answers = answers

    def exec(self, cmd: list[str] | str, timeout_s: float = 60.0) -> ExecResult:
        if isinstance(cmd, str) or "java" not in cmd:
            return ExecResult(0, "")  # iptables of a heal: not what these tests ask about
        self.commands.append(cmd)
        assert timeout_s == TOOLS.timeout_s
        if self.answers:
            return self.answers.pop(0)
        if "describe" in cmd:
            return ExecResult(0, FEATURES_DESCRIBED)
        if "--describe" in cmd:
            return ExecResult(0, DEFAULT_DESCRIBED if "--entity-default" in cmd
                              else TOPIC_DESCRIBED)
        return ExecResult(0, "done\n")


@pytest.fixture
def tools() -> tuple[FaultInjector, ListRecorder, dict[str, ToolNode]]:
    specs = [NodeSpec("controller-1", Role.CONTROLLER, 101, "10.0.0.1"),
             NodeSpec("controller-2", Role.CONTROLLER, 102, "10.0.0.2"),
             *(NodeSpec(f"broker-{i}", Role.BROKER, i, f"10.0.0.{10 + i}") for i in (1, 2, 3))]
    nodes = {s.name: ToolNode(s) for s in specs}
    recorder = ListRecorder()
    return FaultInjector(FakeCluster(nodes), recorder, admin=TOOLS), recorder, nodes


def _lines(recorder: ListRecorder) -> list[tuple[str, str, dict[str, Any]]]:
    return [(str(x["type"]), str(x["fault"]), x["detail"]) for x in recorder.lines]


def changes(injector: FaultInjector, kind: str) -> dict[Any, tuple[int, int]]:
    """What the kind's own record holds in force: target -> (before, now)."""
    return injector.kept(kind, dict)


def test_min_isr_change_reads_and_alters_the_topic_then_restores_it(tools):
    injector, recorder, nodes = tools
    assert min_isr_change.current(injector, "elr-test") == 2
    why = {"mix": "min-isr-change", "role": None}
    min_isr_change.change(injector, "elr-test", 1, 2, detail=why)
    min_isr_change.restore(injector, "elr-test", detail=why)
    entity = ["--entity-type", "topics", "--entity-name", "elr-test"]
    assert nodes["controller-1"].commands == [
        [*CONFIGS, *entity, "--describe"],
        [*CONFIGS, *entity, "--alter", "--add-config", "min.insync.replicas=1"],
        [*CONFIGS, *entity, "--alter", "--add-config", "min.insync.replicas=2"]]
    assert _lines(recorder) == [
        ("invoke", "min-isr-change", {"topic": "elr-test", "from": 2, "to": 1, **why}),
        ("ok", "min-isr-change", {"topic": "elr-test", "from": 2, "to": 1, **why}),
        ("invoke", "min-isr-change", {"topic": "elr-test", "from": 1, "to": 2, **why,
                                      RESTORE: True}),
        ("ok", "min-isr-change", {"topic": "elr-test", "from": 1, "to": 2, **why,
                                  RESTORE: True})]
    assert all(x["nodes"] == [] and x["process"] == -1 for x in recorder.lines)
    assert changes(injector, "min-isr-change") == {}


def test_the_cluster_default_is_the_brokers_dynamic_default(tools):
    injector, recorder, nodes = tools
    assert min_isr_change.current(injector, None) == 1
    min_isr_change.change(injector, None, 3, 1)
    assert nodes["controller-1"].commands[-1] == [
        *CONFIGS, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config",
        "min.insync.replicas=3"]
    assert recorder.lines[-1]["detail"] == {"topic": None, "from": 1, "to": 3}
    assert changes(injector, "min-isr-change") == {None: (1, 3)}


def test_feature_change_downgrades_to_zero_and_restore_upgrades_back(tools):
    injector, recorder, nodes = tools
    assert feature_change.level(injector, ELR_FEATURE) == 1
    feature_change.change(injector, ELR_FEATURE, 0, 1)
    assert injector.protection_off
    feature_change.restore(injector, ELR_FEATURE)
    assert not injector.protection_off and changes(injector, "feature-change") == {}
    assert nodes["controller-1"].commands == [
        [*FEATURES, "describe"],
        [*FEATURES, "downgrade", "--feature", "eligible.leader.replicas.version=0"],
        [*FEATURES, "upgrade", "--feature", "eligible.leader.replicas.version=1"]]
    assert [(t, d) for t, _, d in _lines(recorder)] == [
        ("invoke", {"feature": ELR_FEATURE, "from": 1, "to": 0}),
        ("ok", {"feature": ELR_FEATURE, "from": 1, "to": 0}),
        ("invoke", {"feature": ELR_FEATURE, "from": 0, "to": 1, RESTORE: True}),
        ("ok", {"feature": ELR_FEATURE, "from": 0, "to": 1, RESTORE: True})]


def test_the_tools_run_in_a_node_that_is_up_not_paused_and_least_cut_off(tools):
    injector, _, nodes = tools
    injector.down.add("controller-1")
    injector.paused.add("controller-2")
    injector.grudge = {"broker-1": ["controller-1"]}
    min_isr_change.change(injector, "elr-test", 3, 2)
    ran = [name for name, node in nodes.items() if node.commands]
    assert ran == ["broker-2"]


def test_a_refused_change_ends_fail_and_is_not_in_force(tools):
    injector, recorder, nodes = tools
    nodes["controller-1"].answers = [ExecResult(1, "InvalidConfigurationException: no")]
    with pytest.raises(AdminRefused):
        min_isr_change.change(injector, "elr-test", 3, 2)
    assert [t for t, _, _ in _lines(recorder)] == ["invoke", "fail"]
    assert "InvalidConfigurationException" in recorder.lines[-1]["detail"]["error"]
    assert changes(injector, "min-isr-change") == {}
    injector.heal_all()
    assert not [x for x in recorder.lines[2:] if x["fault"] == Fault.MIN_ISR_CHANGE]


def test_an_unknown_outcome_ends_info_and_the_final_heal_restores_it(tools):
    injector, recorder, nodes = tools
    nodes["controller-1"].answers = [ExecResult(137, "")]
    with pytest.raises(AdminError):
        feature_change.change(injector, ELR_FEATURE, 0, 1)
    assert [t for t, _, _ in _lines(recorder)] == ["invoke", "info"]
    assert injector.protection_off, "it may have happened: ELR counts as off"
    injector.heal_all()
    restore = [x for x in recorder.lines if x["fault"] == Fault.FEATURE_CHANGE][-1]
    assert (restore["type"], restore["detail"]) == (
        "ok", {"feature": ELR_FEATURE, "from": 0, "to": 1, "step": "final-heal", RESTORE: True})
    assert nodes["controller-1"].commands[-1] == [
        *FEATURES, "upgrade", "--feature", "eligible.leader.replicas.version=1"]
    assert not injector.protection_off


def test_no_page_cache_loss_while_elr_is_off_and_elr_stays_on_while_one_is_down(tools):
    injector, recorder, _ = tools
    injector.page_cache = object()  # never reached: refused before anything runs
    feature_change.change(injector, ELR_FEATURE, 0, 1)
    before = len(recorder.lines)
    with pytest.raises(FaultRefused, match="ELR feature is off"):
        page_cache_loss.power_loss(injector, "broker-1")
    assert len(recorder.lines) == before, "nothing recorded for a refused fault"
    feature_change.restore(injector, ELR_FEATURE)
    injector.lost_page_cache.add("broker-2")
    with pytest.raises(FaultRefused, match="broker-2 lost its page cache"):
        feature_change.change(injector, ELR_FEATURE, 0, 1)
    injector.start("broker-2")
    feature_change.change(injector, ELR_FEATURE, 0, 1)
    assert injector.protection_off


# -- the packages' seeded draws ----------------------------------------------------------

TWO_TOPICS = FULL + [state(0, 3, (3, 1, 2), topic="u")]


def _draws(kind: str, seed: int, states=TWO_TOPICS) -> list[dict[str, Any]]:
    """The details of the lines of one fault the mix injected (each `ok`), and of
    its end. The cluster: min ISR 2 on every topic and the default, ELR on."""
    injector, recorder = rig()
    undo = mix(injector, states, kinds=[kind], seed=seed).inject(kind)
    if undo is not None:
        undo()
    return [x["detail"] for x in recorder.done]


def test_min_isr_change_the_same_seed_draws_the_same_topic_from_and_to():
    seen = set()
    for seed in range(40):
        first = _draws("min-isr-change", seed)
        assert first == _draws("min-isr-change", seed)
        change, restore = first
        assert change["topic"] in (None, "t", "u") and change["from"] == 2
        assert change["to"] in (1, 3) and RESTORE not in change
        assert restore == {**change, "from": change["to"], "to": 2, RESTORE: True}
        seen.add((change["topic"], change["to"]))
    # every topic, the cluster default, and both ways (raise and lower) come up
    assert seen == {(t, v) for t in (None, "t", "u") for v in (1, 3)}


def test_min_isr_change_is_skipped_where_no_min_isr_is_set_or_rf_allows_no_other():
    injector, recorder = rig()
    injector.admin.min_isrs = {}
    assert mix(injector, FULL, kinds=["min-isr-change"]).inject("min-isr-change") is None
    assert recorder.lines == []
    injector, recorder = rig()
    one = mix(injector, FULL, kinds=["min-isr-change"])
    one.replication_factor = 1
    injector.admin.min_isrs = {None: 1, "t": 1}
    assert one.inject("min-isr-change") is None and recorder.lines == []
    assert injector.admin.changes == []


def test_feature_change_turns_elr_off_and_back_on():
    change, restore = _draws("feature-change", 5)
    assert change == {"feature": ELR_FEATURE, "from": 1, "to": 0, "mix": "feature-change",
                      "role": None}
    assert restore == {**change, "from": 0, "to": 1, RESTORE: True}


def test_feature_change_waits_while_a_page_cache_loss_is_outstanding():
    logs: list[str] = []
    injector, recorder = rig()
    injector.admin.levels[ELR_FEATURE] = 0
    assert mix(injector, FULL, kinds=["feature-change"]).inject("feature-change") is None
    assert recorder.lines == []
    for lost, losses, states, why in ((["broker-1"], 1, FULL, "broker-1 lost its page cache"),
                                      ([], 1, SHRUNK, "not every ISR is full again")):
        injector, recorder = rig()
        injector.lost_page_cache, injector.page_cache_losses = set(lost), losses
        one = mix(injector, states, kinds=["feature-change"])
        one.log = logs.append
        assert one.inject("feature-change") is None and recorder.lines == []
        assert why in logs[-1] and logs[-1].startswith("feature-change skipped")
    injector, recorder = rig()
    injector.page_cache_losses = 1  # over: its broker is back in every ISR
    assert mix(injector, FULL, kinds=["feature-change"]).inject("feature-change") is not None
    assert injector.admin.changes == [("feature", ELR_FEATURE, 0)]


def test_the_mix_skips_page_cache_loss_while_the_feature_is_off_and_says_why():
    logs: list[str] = []
    injector, recorder = rig()
    both = mix(injector, FULL, kinds=["feature-change", "page-cache-loss"])
    both.log = logs.append
    undo = both.inject("feature-change")
    assert both.inject("page-cache-loss") is None
    assert logs == ["page-cache-loss skipped: the ELR feature is off: KIP-966 promises "
                    "nothing about lost unflushed data then"]
    assert [x["fault"] for x in recorder.done] == [Fault.FEATURE_CHANGE]
    undo()
    assert both.inject("page-cache-loss") is not None
    assert recorder.done[-1]["fault"] == Fault.PAGE_CACHE_LOSS


def test_a_mix_of_both_never_loses_a_page_cache_while_elr_is_off():
    """Overlapping in time the way one mix's rotation allows: each page-cache loss
    falls where the ELR feature is on."""
    stop = threading.Event()
    injector, recorder = rig(stop_after=12, stop=stop)
    mix(injector, FULL, kinds=["feature-change", "page-cache-loss", "min-isr-change"],
        seed=9, stop=stop).run(time.monotonic() + 60)
    off = False
    kinds = set()
    # off from the invoke that turns ELR off until the ok of the one that turns it on
    for line in recorder.lines:
        kinds.add(line["fault"])
        if line["fault"] == Fault.FEATURE_CHANGE and line["detail"]["to"] == 0:
            off = True
        elif line["fault"] == Fault.FEATURE_CHANGE and line["type"] == "ok":
            off = False
        assert not (off and line["fault"] == Fault.PAGE_CACHE_LOSS)
    assert {Fault.FEATURE_CHANGE, Fault.PAGE_CACHE_LOSS, Fault.MIN_ISR_CHANGE} <= kinds


# -- how the report pairs and draws them --------------------------------------------------

def _event(i: int, kind: Fault, detail: dict[str, Any], typ: str = "ok") -> FaultEvent:
    return FaultEvent(i, float(i), str(kind), (), typ, detail)


def test_a_change_lasts_until_the_restore_of_the_same_target():
    events = [_event(0, Fault.MIN_ISR_CHANGE, {"topic": "t", "from": 2, "to": 1}),
              _event(1, Fault.MIN_ISR_CHANGE, {"topic": None, "from": 2, "to": 3}),
              _event(2, Fault.MIN_ISR_CHANGE, {"topic": None, "from": 3, "to": 2,
                                               RESTORE: True}),
              _event(3, Fault.FEATURE_CHANGE, {"feature": ELR_FEATURE, "from": 1, "to": 0}),
              _event(4, Fault.MIN_ISR_CHANGE, {"topic": "t", "from": 1, "to": 2,
                                               RESTORE: True}, typ="info"),
              _event(5, Fault.FEATURE_CHANGE, {"feature": ELR_FEATURE, "from": 0, "to": 1,
                                               RESTORE: True})]
    bands = pair_faults(events)
    assert [(b.label, b.start_s, b.end_s, b.lasting) for b in bands] == [
        ("min-isr-change t 2->1", 0.0, 4.0, True),
        ("min-isr-change cluster default 2->3", 1.0, 2.0, True),
        (f"feature-change {ELR_FEATURE} 1->0", 3.0, 5.0, True)]
    assert bands[0].ended_by == "min-isr-change t 1->2"


def test_a_refused_change_draws_nothing_and_a_restore_alone_ends_nothing():
    events = [_event(0, Fault.MIN_ISR_CHANGE, {"topic": "t", "from": 2, "to": 1}, "fail"),
              _event(1, Fault.MIN_ISR_CHANGE, {"topic": "t", "from": 1, "to": 2,
                                               RESTORE: True})]
    assert pair_faults(events) == []


def test_the_contract_names_what_ends_each_change():
    for kind, key in RESTORED_BY_SELF.items():
        assert ENDED_BY[kind] == (kind,) and key in ("topic", "feature")
        assert restores(kind, {RESTORE: True}) and not restores(kind, {})
        assert PACKAGES[str(kind)].recorded == kind
    assert not restores(Fault.START, {RESTORE: True})
    assert str(Fault.MIN_ISR_CHANGE) == "min-isr-change"
    assert str(Fault.FEATURE_CHANGE) == "feature-change"


def test_the_final_heal_puts_back_every_change_even_when_one_cannot_be(tools):
    injector, recorder, nodes = tools
    feature_change.change(injector, ELR_FEATURE, 0, 1)
    min_isr_change.change(injector, "elr-test", 1, 2)
    min_isr_change.change(injector, None, 3, 1)
    nodes["controller-1"].answers = [ExecResult(1, "TimeoutException: no answer")]
    with pytest.raises(HarnessError, match="TimeoutException"):
        injector.heal_all()
    restores_ = [(x["type"], x["detail"].get("feature", x["detail"].get("topic")))
                 for x in recorder.lines[6:] if x["detail"].get(RESTORE)]
    assert restores_ == [("invoke", ELR_FEATURE), ("info", ELR_FEATURE),
                         ("invoke", None), ("ok", None), ("invoke", "elr-test"),
                         ("ok", "elr-test")]
    assert changes(injector, "feature-change") == {ELR_FEATURE: (1, 0)}
    assert changes(injector, "min-isr-change") == {}
    assert injector.protection_off, "ELR may still be off: no data-dropping fault meanwhile"


def test_a_schedules_feature_change_waits_as_a_mixs_does_until_a_loss_is_over(tools):
    """A guided round's ELR downgrade (act) keeps the mix's rule: not while a broker
    that lost unflushed data is down, nor after a loss until every ISR is full."""
    import random

    from elr_harness.nemesis.faults.base import NotNow, Use
    from elr_harness.nemesis.targets import Topology

    injector, recorder, nodes = tools
    use = Use(injector, Topology.of(n for n in nodes.values()), random.Random(1), None,
              threading.Event(), "round")
    act = PACKAGES["feature-change"].act
    injector.lost_page_cache.add("broker-2")
    with pytest.raises(NotNow, match="broker-2 lost its page cache"):
        act(use, None, states=FULL)
    injector.lost_page_cache.clear()
    injector.page_cache_losses = 1
    with pytest.raises(NotNow, match="not every ISR is full again"):
        act(use, None, states=SHRUNK)
    assert recorder.lines == []  # nothing recorded, nothing changed
    undo = act(use, None, states=FULL)
    assert injector.protection_off and changes(injector, "feature-change") == {
        ELR_FEATURE: (1, 0)}
    undo()
    assert not injector.protection_off and changes(injector, "feature-change") == {}
