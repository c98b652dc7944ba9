"""Every scripted scenario as a schedule file (#55), shipped in the package: each
parses, says what it needs of the cluster ([needs]), and plays on a model of
KIP-966 the way the scenario's Python does: the same faults on the same roles,
the same waits seen. KAFKA-19522's file is played on the same model of 4.0.x and
4.1 as the Python scenario's own test (test_fenced_last_leader)."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from fakes import (
    AnsweringRecorder,
    FakeCluster,
    FakeObserver,
    specs,
)
from shipped_play import fast_text
from test_fenced_last_leader import GREP, Broker
from test_fenced_last_leader import World as Kafka19522
from test_schedule_file import _player

from elr_harness.core.config import RunConfig, ScenarioTimings
from elr_harness.core.errors import BadInput
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.needs import Needs
from elr_harness.nemesis.registry import SCENARIOS, parse_nemesis
from elr_harness.nemesis.schedule.file import parse_schedule, read_schedule, shipped_schedules
from elr_harness.nemesis.schedule.played import Played
from elr_harness.nemesis.targets import Topology

#: The scenarios the issue asks as files (elr-downgrade's feature dance stays Python).
AS_FILES = ("unclean-last-replica", "unclean-last-replica-alone", "fenced-last-leader",
            "min-isr-drop", "slow-follower", "disk-failure")
#: The transactions' scenarios (contract v4), files from the start (test_txn_scenarios).
TXN_FILES = ("txn-delayed-end", "txn-unclean-marker", "txn-coordinator-loss")
FAST = ScenarioTimings(registration_poll_s=0.01, controller_poll_s=0.01)


def _fast(name: str) -> str:
    """The shipped file with its warm-up a full ISR, its holds and waits short."""
    return fast_text(name, within_s=0.5)


def _play(played: Played) -> dict:
    result: dict = {}
    played.run(time.monotonic() + 600, threading.Event(), result)
    return result["schedule"]


def _faults(injector: FaultInjector) -> list[tuple[str, list[str]]]:
    return [(str(x["fault"]), x["nodes"]) for x in injector.recorder.lines  # type: ignore
            if x.get("f") == "fault" and x["type"] == "ok"]


def test_every_scenario_the_issue_names_ships_as_a_file_of_a_known_scenario():
    shipped = shipped_schedules()
    assert sorted(shipped) == sorted(AS_FILES + TXN_FILES)
    for name, path in shipped.items():
        assert name in SCENARIOS
        schedule = read_schedule(path)
        assert schedule.steps and schedule.help


def test_a_shipped_file_is_played_by_its_name_and_a_missing_one_names_them():
    assert read_schedule(Path("min-isr-drop")).needs.min_insync_replicas == 3
    with pytest.raises(BadInput, match="no such file .*fenced-last-leader"):
        read_schedule(Path("min-isr-dropped"))


KAFKAS_OWN = {"short_kafka_timeouts": False}


@pytest.mark.parametrize(("name", "needs"), [
    ("fenced-last-leader", Needs(brokers=4, min_insync_replicas=1, **KAFKAS_OWN)),
    ("min-isr-drop", Needs(min_insync_replicas=3, **KAFKAS_OWN)),
    ("disk-failure", Needs(log_dirs=2, **KAFKAS_OWN)),
    ("slow-follower", Needs(**KAFKAS_OWN)),
    ("unclean-last-replica", Needs()),
])
def test_what_each_file_needs_of_the_cluster_is_what_its_python_asked(name, needs):
    """The cluster settings of `--schedule NAME` are those of `--nemesis NAME`: the
    same brokers, min ISR, log dirs, and Kafka timeouts shortened or not."""
    assert read_schedule(Path(name)).needs == needs
    by_file = {s.path: s.value(RunConfig()) for s in parse_nemesis("none", name)
               .cluster_settings}
    by_python = {s.path: s.value(RunConfig()) for s in parse_nemesis(name).cluster_settings}
    assert by_file == by_python
    assert parse_nemesis("none", name).layers == parse_nemesis(name).layers
    plan = parse_nemesis("none", name)
    chosen = {s.path: s.value(RunConfig()) for s in plan.cluster_settings
              if s.path.split(".")[0] in ("cluster", "topic") and "timings" not in s.path}
    for field, value in vars(needs).items():
        if value is not None and field != "short_kafka_timeouts":
            path = {"brokers": "cluster.brokers", "log_dirs": "cluster.log_dirs",
                    "min_insync_replicas": "topic.min_insync_replicas"}[field]
            assert chosen[path] == value


def test_a_run_that_chose_otherwise_is_refused_naming_the_flag():
    needs = read_schedule(Path("fenced-last-leader")).needs
    with pytest.raises(BadInput, match=r"needs --brokers 4 \(or more\), "
                                       r"--min-insync-replicas 1 \(\[needs\]\)"):
        needs.refuse("f.toml", brokers=3, log_dirs=1, min_insync_replicas=[2])
    needs.refuse("f.toml", brokers=5, log_dirs=1, min_insync_replicas=[1])


@pytest.mark.parametrize(("needs", "said"), [
    ("[needs]\ncores = 4\n", "[needs] has no field 'cores'; known: brokers"),
    ("[needs]\nbrokers = 2\n", "[needs] brokers: 2 is not an integer 3..1000"),
    ("[needs]\nlog_dirs = true\n", "[needs] log_dirs: True is not an integer 1..16"),
    ("[needs]\nshort_kafka_timeouts = 1\n", "short_kafka_timeouts: 1 is not true or false"),
    ("needs = 4\n", "`needs` must be a table"),
])
def test_a_bad_needs_table_is_an_input_error(needs, said):
    body = '[[step]]\nuntil = "isr full"\nwithin_s = 1\n'
    with pytest.raises(BadInput, match=re.escape(said)):
        parse_schedule(needs + body, "s.toml")


@pytest.mark.parametrize(("step", "said"), [
    ('until = "isr full"\nread = "zookeeper"\nwithin_s = 1\n', "`read`: 'zookeeper'"),
    ('read = "controller"\nfault = "kill"\ntarget = "leader"\n', "`read`: says where a wait"),
    ('until = "L registered and isr full"\nwithin_s = 1\n', "`X registered` stands alone"),
    ('until = "L registered"\nread = "controller"\nwithin_s = 1\n',
     "a registration is read in the broker's own log"),
])
def test_a_bad_read_or_registration_names_the_field(step, said):
    with pytest.raises(BadInput, match=re.escape(said)):
        parse_schedule("[[step]]\n" + step, "s.toml")


@pytest.mark.parametrize("buggy", [True, False], ids=["4.0.x", "4.1+"])
def test_the_fenced_last_leader_file_plays_as_its_python_on_kafka_19522s_model(buggy):
    """The Python's own test: the same faults on the same brokers, L paused once its
    log says it registered; L seen leading while fenced only on the buggy model."""
    world = Kafka19522(buggy)
    cluster = FakeCluster({s.name: Broker(s, world) for s in specs(controllers=0, brokers=4)})

    def answer(line: dict) -> None:
        # the model keys L's restart to the Python's step F3; here it is the end of
        # F2, recorded under the step whose fault it ends
        step = line["detail"]["step"].removeprefix("schedule:")
        step = "F3" if (line["fault"], step) == ("start", "F2") else step
        world.answer({**line, "detail": {**line["detail"], "step": step}})

    injector = FaultInjector(cluster, AnsweringRecorder(answer))  # type: ignore[arg-type]
    played = Played(parse_schedule(_fast("fenced-last-leader"), "f.toml"), injector,
                    # each sample a new one, as the observer takes them
                    FakeObserver(lambda: [replace(world.state)]), "t", 7, 3, 1,
                    log=lambda _m: None,
                    topology=Topology.of(cluster.nodes.values()),
                    active_controller=lambda: None, start_within_s=0.5, timings=FAST)
    record = _play(played)
    a, b = record["names"]["A"], record["names"]["B"]
    assert record["names"]["L"] == "broker-1" and {a, b} == {"broker-2", "broker-3"}
    assert _faults(injector) == [
        ("kill", [a]), ("kill", [b]), ("kill", ["broker-1"]),
        ("start", ["broker-1"]), ("pause", ["broker-1"]), ("resume", ["broker-1"]),
        ("start", [a]), ("start", [b])]
    seen = {s["step"]: s.get("seen") for s in record["steps"]}
    assert seen["F3"] is True and seen["F4"] is buggy
    assert {" ".join(GREP)} == set(cluster.nodes["broker-1"].commands)


def _on_the_model(name: str):
    """The shipped file `name`, made fast, on the guided tests' model (min ISR 3)."""
    return _player(parse_schedule(_fast(name), f"{name}.toml"), min_isr=3, timings=FAST)


def test_the_slow_follower_file_throttles_a_then_cuts_b_then_ends_both():
    played, injector, world = _on_the_model("slow-follower")
    record = _play(played)
    a, b = record["names"]["A"], record["names"]["B"]
    assert a != b and "broker-1" not in (a, b)
    assert [k for k, _ in _faults(injector)] == ["slow-network", "partition", "heal",
                                                 "unthrottle"]
    assert _faults(injector)[0][1] == [a]
    assert [s.get("seen") for s in record["steps"]] == [True, True, True, None, True]
    assert sorted(world.isr) == [1, 2, 3]


def test_the_min_isr_drop_file_reads_the_controller_where_no_broker_sees_fresh():
    """While L and B are stopped and A is cut off, the waits read the active
    controller's metadata log, and each reading is an `observe` line of the history."""
    played, injector, world = _on_the_model("min-isr-drop")
    asked: list[str] = []

    def controller_view(topic: str):
        asked.append(topic)
        return [world.state()]

    injector.cluster.controller_view = controller_view  # type: ignore[attr-defined]
    record = _play(played)
    steps = {s["step"]: s for s in record["steps"]}
    assert [k for k, _ in _faults(injector)][:4] == ["partition", "min-isr-change", "stop",
                                                     "stop"]
    assert steps["T2-b"]["read"] == "controller" and steps["T2-b"]["seen"] is True
    assert steps["T3-hold"]["read"] == "controller"
    assert steps["T3-hold"]["watched"]["seen"] is False  # A never elected on the model
    assert asked and set(asked) == {"t"}
    observed = [x for x in injector.recorder.lines  # type: ignore[attr-defined]
                if x.get("source") == "controller"]
    assert len(observed) >= len(asked)
    assert {steps["T2"]["target"], steps["T2-b"]["target"]} == {"broker-1",
                                                                record["names"]["B"]}


def test_a_guided_runs_schedule_toml_is_a_file_that_plays_its_faults_again():
    """Every round of a guided run on the model (every aim once), written as its run
    writes schedule.toml: it parses, each wait is the condition the round waited for
    and says whether it saw it, and played on a fresh model it makes the same faults
    on the same nodes, in the same order, without the guided run's draws."""
    import tomllib

    from test_nemesis_guided import World, _guided, _rounds, faults

    from elr_harness.core.history import COVERAGE_STATES
    from elr_harness.nemesis.schedule.writer import recorded_toml

    # a seed whose rounds draw 13 kinds, none that waits out a real controller's
    # leader balancing on its end (bounce-leader)
    guided, injector, _ = _guided(seed=3)
    _rounds(guided, len(COVERAGE_STATES))
    text = recorded_toml(guided.played())
    tables = tomllib.loads(text)["step"]
    # played again with short waits: the model moves at once
    schedule = parse_schedule(re.sub(r"within_s = [0-9.]+", "within_s = 0.01", text),
                              "schedule.toml")
    waits = [t for t in tables if "until" in t]
    assert waits and all(isinstance(t["played"]["seen"], bool) for t in waits)
    assert {t["partition"] for t in tables} == {"t-0"}
    # as many brokers as the run had, and Kafka's own timeouts as a guided run has them
    assert schedule.needs == Needs(brokers=3, short_kafka_timeouts=False)
    assert any(t["until"].startswith("no leader and broker-") for t in waits)
    made = [(kind, nodes) for kind, nodes, _ in faults(injector)
            if kind not in ("heal", "start", "resume", "unthrottle")]

    replayed, again, _ = _player(schedule, World(min_isr=2), timings=FAST)
    _play(replayed)
    assert [(kind, nodes) for kind, nodes, _ in faults(again)
            if kind not in ("heal", "start", "resume", "unthrottle")] == made


def test_a_registration_wait_on_the_name_its_own_step_binds_counts_from_the_binding():
    """`as = "A"` and `until = "A registered"` in one step: A is known only once the
    step chose it; its registrations are counted from there, not a crash."""
    world = Kafka19522(buggy=False)
    cluster = FakeCluster({s.name: Broker(s, world) for s in specs(controllers=0, brokers=4)})
    injector = FaultInjector(cluster, AnsweringRecorder(lambda _line: None))  # type: ignore
    text = ('[[step]]\nname = "F0"\nfault = "pause"\ntarget = "follower"\nas = "A"\n'
            'until = "A registered"\nwithin_s = 0.2\n')
    played = Played(parse_schedule(text, "f.toml"), injector,
                    FakeObserver(lambda: [replace(world.state)]), "t", 7, 3, 1,
                    log=lambda _m: None, topology=Topology.of(cluster.nodes.values()),
                    active_controller=lambda: None, start_within_s=0.5, timings=FAST)
    (step,) = _play(played)["steps"]
    assert step["seen"] is False and "error" not in step
    asked = cluster.nodes[step["target"]].commands
    assert asked and set(asked) == {" ".join(GREP)}  # its own log, polled
