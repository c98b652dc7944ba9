"""disk-failure's settings: two log dirs per broker and the page-cache layer
unless the user says otherwise, and one log dir refused before anything starts
(Kafka would stop the broker, not take one dir offline); the step that fails
L's dir finds the one dir holding the partition; its file's T1-hold watches for L
in the ELR or leading."""

from __future__ import annotations

import pytest
from fakes import FakeObserver, cluster_of, injector_rig, specs
from run_flags import run_configs_of
from shipped_play import fast_text

from elr_harness.core.errors import HarnessError
from elr_harness.nemesis.faults.disk_fault import dir_holding
from elr_harness.nemesis.needs import Layer
from elr_harness.nemesis.scenarios import SCENARIOS
from elr_harness.nemesis.schedule.file import parse_schedule
from elr_harness.run.spec import RunSpec, validate


def _configs(tmp_path, *flags: str):
    return run_configs_of(tmp_path, "disk-failure", *flags)


def test_brokers_get_two_log_dirs_under_the_page_cache_layer(tmp_path):
    cluster, topic, workload, run, checker = _configs(tmp_path)
    assert cluster.log_dirs == 2
    assert SCENARIOS["disk-failure"].layers == frozenset({Layer.PAGE_CACHE})
    validate(RunSpec(cluster, [topic], workload, run, checker))


def test_one_log_dir_is_refused(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("[cluster]\nlog_dirs = 1\n")
    cluster, topic, workload, run, checker = _configs(tmp_path, "--config", str(config))
    assert cluster.log_dirs == 1
    with pytest.raises(HarnessError, match="needs two log dirs per broker"):
        validate(RunSpec(cluster, [topic], workload, run, checker))


def _injector(fail: str | None):
    """broker-1's `test -d` of a log dir fails when it names `fail` (that dir does
    not hold the partition); the fake cluster's two log dirs, as Kafka names them."""
    injector, _ = injector_rig(cluster_of(specs(controllers=1, brokers=1),
                                          broker_1={"fail": fail, "holds_in": None}))
    return injector


TESTS = ["test -d /data/kafka/dir-0/t-0", "test -d /data/kafka/dir-1/t-0"]


def test_the_failed_dir_is_the_one_holding_the_partition():
    injector = _injector(fail="/data/kafka/dir-0/t-0")
    assert dir_holding(injector, "broker-1", "t-0") == "/data/kafka/dir-1"
    assert injector.cluster.nodes["broker-1"].commands == TESTS


@pytest.mark.parametrize("fail", ["/t-0", None], ids=["no dir", "two dirs"])
def test_no_dir_or_two_dirs_holding_it_is_no_answer_not_a_guess(fail):
    injector = _injector(fail)
    assert dir_holding(injector, "broker-1", "t-0") is None
    assert injector.cluster.nodes["broker-1"].commands == TESTS


@pytest.mark.parametrize("fail", ["/t-0", None], ids=["no dir", "two dirs"])
def test_a_step_that_cannot_tell_the_dir_fails_none_and_says_why(fail):
    """disk-failure's step fails L's dir that holds the partition: when no one dir is
    found to hold it, no dir fails (none is drawn instead), and the history's info
    line says why."""
    import random
    import threading

    from fakes import FakePageCache, topology_of

    from elr_harness.nemesis.faults import disk_fault
    from elr_harness.nemesis.faults.base import Use
    from elr_harness.nemesis.faults.disk_fault import DiskFaultSettings

    injector, recorder = injector_rig(cluster_of(specs(controllers=1, brokers=1),
                                                 broker_1={"fail": fail, "holds_in": None}),
                                      page_cache=FakePageCache())
    use = Use(injector, topology_of(injector.cluster), random.Random(1), DiskFaultSettings(),
              threading.Event(), "schedule:T1")
    with pytest.raises(HarnessError, match="no one log dir of broker-1 is found to hold "
                                           "t-0 .* none guessed"):
        disk_fault.act(use, "broker-1", holding="t-0")
    assert [(line["type"], line["fault"]) for line in recorder.lines] == [
        ("invoke", "disk-fault"), ("info", "disk-fault")]
    assert "none guessed" in recorder.lines[1]["detail"]["error"]
    assert recorder.lines[1]["detail"]["holding"] == "t-0"
    assert injector.page_cache.faults == []  # type: ignore[union-attr]


def _watched(*states):
    """The file's T1-hold alone, L bound to broker-1, on the states in turn."""
    from elr_harness.cluster.observe import PartitionState
    from elr_harness.nemesis.schedule.played import Played
    from elr_harness.nemesis.targets import Topology

    observed = [PartitionState("t", 0, leader, 5, isr, elr, (), None, (1, 2, 3))
                for leader, isr, elr in states]

    def in_turn() -> list:
        """The states in turn (each a new sample), then the last one for ever."""
        return [observed.pop(0) if len(observed) > 1 else observed[0]]

    class Polling(FakeObserver):
        """An observer's wait: each new sample in turn, until one holds or none is new."""

        def wait_for(self, predicate, timeout_s: float):  # noqa: ANN001
            for _ in range(len(states)):
                sample = self.latest()
                if predicate(sample):
                    return sample
            return None

    text = fast_text("disk-failure", hold_s=0.2)
    hold = text[text.index('[[step]]\n# producers write'):text.index('[[step]]\nname = "T2"')]
    injector = _injector(None)
    played = Played(parse_schedule(hold, "hold.toml"), injector, Polling(in_turn), "t",
                    7, 3, 2, log=lambda _m: None,
                    topology=Topology.of(injector.cluster.nodes.values()),
                    active_controller=lambda: None)
    played.names["L"] = "broker-1"
    played.play(played.schedule.steps[0])
    return played.outcomes()[0]


def test_the_hold_is_watched_for_l_in_the_elr_or_leading():
    clean = _watched((2, (2,), (3,)), (2, (2,), (3,)))
    assert clean["reached"] and clean["watched"]["seen"] is False
    named = _watched((2, (2,), (3,)), (2, (2,), (1, 3)), (2, (2,), (3,)))
    assert named["watched"]["seen"] is True and named["observed"]["elr"] == [1, 3]
    led = _watched((2, (2,), (3,)), (1, (1,), ()))
    assert led["watched"]["seen"] is True and led["observed"]["leader"] == 1
