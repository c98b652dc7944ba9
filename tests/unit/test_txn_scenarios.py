"""The transactions' scenarios (contract v4) as schedule files: txn-delayed-end,
txn-unclean-marker and txn-coordinator-loss parse and play by `--nemesis NAME`;
the role `coordinator`, the name C and `partition = "coordinator"` resolve from
an observed state as Kafka places a transactional.id (pure functions, and a
played schedule on the guided tests' model, one world per partition); what they
need of the run ([needs]: the txn workload, unclean leader election on exactly
when ELR is off) is set unless the user chose otherwise and refused, in one line
and before anything starts, when the run chose otherwise."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fakes import AnsweringRecorder, FakeAdmin, FakeObserver, FakePageCache, cluster_of
from shipped_play import FAST, fast_text
from test_nemesis_guided import TOPOLOGY, Wire, World

from elr_harness.cluster.kraft import TRANSACTION_STATE_TOPIC
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ClusterConfig, RunConfig, TopicConfig, WorkloadConfig
from elr_harness.core.errors import BadInput
from elr_harness.nemesis.coordinator import Coordinator
from elr_harness.nemesis.faults.base import NotNow
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.needs import WITH_ELR_OFF, Needs
from elr_harness.nemesis.registry import SCENARIOS, parse_nemesis
from elr_harness.nemesis.schedule.file import (
    check_partitions,
    parse_schedule,
    read_schedule,
    shipped_schedules,
)
from elr_harness.nemesis.schedule.played import Played
from elr_harness.nemesis.schedule.step import COORDINATOR_PARTITION
from elr_harness.nemesis.schedule.writer import schedule_toml
from elr_harness.nemesis.targets import (
    Role,
    choose_target,
    coordinator_of,
    java_string_hash,
    transaction_partition,
)

TXN = ("txn-delayed-end", "txn-unclean-marker", "txn-coordinator-loss")
#: The first transactional producer's id with the Java client (workloads.txn_workload).
TXN_ID = "elr-txn-java-0"


# -- the files -----------------------------------------------------------------------


@pytest.mark.parametrize("name", TXN)
def test_each_file_ships_parses_and_is_a_scenario_that_needs_the_txn_workload(name):
    schedule = read_schedule(shipped_schedules()[name])
    assert schedule.help and schedule.steps
    assert schedule.needs.workloads == ("txn",)
    plan = parse_nemesis(name)
    assert plan.scripted is SCENARIOS[name] and plan.played_file is not None
    assert plan.needs == schedule.needs and plan.ends_by_itself
    # --schedule NAME and --nemesis NAME take the same settings and layers
    by_file = parse_nemesis("none", name)
    assert [s.path for s in by_file.cluster_settings] == \
        [s.path for s in plan.cluster_settings]
    assert by_file.layers == plan.layers
    # its waits name only what its steps bind (L, C, A, B) and roles it knows
    for step in schedule.steps:
        assert step.partition in (None, COORDINATOR_PARTITION)


def test_what_each_file_does_in_order():
    steps = {n: read_schedule(shipped_schedules()[n]).steps for n in TXN}
    delayed = steps["txn-delayed-end"]
    assert [(s.fault, s.target) for s in delayed if s.fault] == [
        ("pause", "C"), ("slow-network", "C"), ("pause", "C")]
    assert read_schedule(shipped_schedules()["txn-delayed-end"]).needs.short_kafka_timeouts \
        is False  # a 4 s freeze stays within Kafka's own session timeout
    marker = steps["txn-unclean-marker"]
    assert [(s.fault, s.target) for s in marker if s.fault] == [
        ("partition", "follower"), ("pause", "follower"), ("page-cache-loss", "L")]
    assert [s.end for s in marker if s.end] == ["T0", "T1", "T2"]
    assert next(s for s in marker if s.watch).watch.text == "A leads"
    loss = steps["txn-coordinator-loss"]
    assert [s.name for s in loss] == ["setup", "setup-txn", "T0", "T1", "T2", "T3", "T4",
                                      "T5"]
    # unclean-last-replica's steps, on the coordinator's partition, with C for L
    last = read_schedule(shipped_schedules()["unclean-last-replica"]).steps
    assert [(s.fault, s.target, s.end) for s in loss if s.fault or s.end] == [
        (s.fault, "C" if s.target == "L" else s.target, s.end)
        for s in last if s.fault or s.end]
    assert all(s.partition == COORDINATOR_PARTITION for s in loss[1:])


def test_a_step_may_name_the_coordinator_and_its_partition():
    text = ('[[step]]\nname = "P"\npartition = "coordinator"\nfault = "pause"\n'
            'target = "coordinator"\nas = "K"\nuntil = "K fenced and C not in isr"\n'
            'within_s = 5\n[[step]]\nend = "P"\n')
    schedule = parse_schedule(text, "s.toml")
    step = schedule.steps[0]
    assert step.partition == COORDINATOR_PARTITION and step.partition_text == "coordinator"
    assert step.target == Role.COORDINATOR.value and step.bind == "K"
    check_partitions(schedule, {"t": 3})  # found as it plays, not one of the topics'
    again = parse_schedule(schedule_toml(schedule.help, schedule.steps), "again.toml")
    assert again.steps == schedule.steps


@pytest.mark.parametrize(("step", "said"), [
    ('fault = "kill"\ntarget = "leader"\nas = "C"\n', "`as`: 'C' is bound already"),
    ('fault = "controller-kill"\ntarget = "coordinator"\n',
     "controller-kill acts on a controller: aim it at `active-controller` or a controller "
     "node (controller-N), not 'coordinator'"),
    ('fault = "kill"\ntarget = "coordinator"\npartition = "coordinators"\n',
     "`partition`: 'coordinators' is no partition: topic-N, or 'coordinator'"),
    ('fault = "kill"\ntarget = "leader"\nas = "coordinator"\n', "`as`: a name of"),
])
def test_a_bad_coordinator_step_is_one_input_error(step, said):
    with pytest.raises(BadInput) as caught:
        parse_schedule("[[step]]\n" + step, "s.toml")
    assert said in str(caught.value) and "\n" not in str(caught.value)


# -- where Kafka keeps a transactional.id --------------------------------------------


def test_javas_string_hash_and_kafkas_partition_for_a_transactional_id():
    assert java_string_hash("") == 0 and java_string_hash("hello") == 99162322
    assert java_string_hash("elr-txn-java-0") == 807077482
    # Integer.MIN_VALUE: Kafka's Utils.abs gives 0, not a negative partition
    assert java_string_hash("polygenelubricants") == -(1 << 31)
    assert transaction_partition("polygenelubricants", 3) == 0
    assert transaction_partition("hello", 50) == 99162322 % 50
    assert transaction_partition(TXN_ID, 3) == 807077482 % 3 == 1
    assert java_string_hash("é€") == (0xE9 * 31 + 0x20AC)  # UTF-16 units
    with pytest.raises(ValueError):
        transaction_partition(TXN_ID, 0)


def _txn_states(leaders: dict[int, int]) -> list[PartitionState]:
    return [PartitionState(TRANSACTION_STATE_TOPIC, p, leader, 1, (1, 2, 3), (), (), 40,
                           replicas=(1, 2, 3)) for p, leader in leaders.items()]


def test_the_coordinator_is_its_partitions_observed_leader():
    data = PartitionState("t", 1, 3, 1, (1, 2, 3), (), (), 10)
    states = [data, *_txn_states({0: 3, 1: 2, 2: 1})]
    assert coordinator_of(states, TXN_ID, TRANSACTION_STATE_TOPIC, 3) == (1, 2)
    # the count observed wins over the default
    five = _txn_states({p: p % 3 + 1 for p in range(5)})
    number = 807077482 % 5
    assert coordinator_of(five, TXN_ID, TRANSACTION_STATE_TOPIC, 3) == (number,
                                                                        number % 3 + 1)
    # not observed, or leaderless: no leader to name
    assert coordinator_of([data], TXN_ID, TRANSACTION_STATE_TOPIC, 3) == (1, None)
    assert coordinator_of(_txn_states({1: -1}), TXN_ID, TRANSACTION_STATE_TOPIC, 3) == \
        (0, None)  # one partition observed: it holds every id


def test_the_finder_asks_the_cluster_only_when_nothing_observed_names_a_leader():
    asked: list[str] = []

    def ask(txn_id: str) -> int | None:
        asked.append(txn_id)
        return 3

    finder = Coordinator(TXN_ID, ask)
    assert finder.broker(_txn_states({0: 1, 1: 2, 2: 3})) == 2 and asked == []
    assert finder.broker([]) == 3 and asked == [TXN_ID]
    assert finder.partition([]) == (TRANSACTION_STATE_TOPIC, 1)
    with pytest.raises(NotNow, match="no broker leads __transaction_state-1"):
        Coordinator(TXN_ID, lambda _id: None).broker([])
    with pytest.raises(NotNow, match="no broker leads"):
        Coordinator(TXN_ID, lambda _id: 1 // 0).broker([])  # no broker answers
    with pytest.raises(NotNow, match="no transactional producer"):
        Coordinator(None).partition([])
    with pytest.raises(ValueError, match="drawn by no mix"):
        choose_target(Role.COORDINATOR, [], TOPOLOGY, __import__("random").Random(1))


# -- played on the model: one world per partition ------------------------------------


@dataclasses.dataclass
class Partition(World):
    """One partition of the guided tests' model, under its own name, warmed up."""

    topic: str = "t"
    number: int = 0
    elr_on: bool = True

    def state(self) -> PartitionState:
        return replace(super().state(), topic=self.topic, partition=self.number,
                       high_watermark=500, elr_feature=1 if self.elr_on else 0,
                       elr=super().state().elr if self.elr_on else ())

    def back(self, broker: int) -> None:
        leaderless = self.leader == -1
        super().back(broker)
        if not self.elr_on and leaderless and self.leader == -1 and broker not in self.fenced:
            self.leader, self.isr = broker, [broker]  # unclean leader election on


@dataclasses.dataclass
class Worlds:
    """The first topic's partition 0 (L leads) and the coordinator's partition of
    TXN_ID (C leads), moved together by each fault."""

    data: Partition
    coordinator: Partition

    @classmethod
    def of(cls, data_leader: int = 1, coordinator_leader: int = 2,
           elr_on: bool = True) -> Worlds:
        number = transaction_partition(TXN_ID, 3)
        return cls(Partition(leader=data_leader, elr_on=elr_on),
                   Partition(leader=coordinator_leader, topic=TRANSACTION_STATE_TOPIC,
                             number=number, elr_on=elr_on))

    def states(self) -> list[PartitionState]:
        others = [replace(self.coordinator.state(), partition=p)
                  for p in range(3) if p != self.coordinator.number]
        return [self.data.state(), self.coordinator.state(), *others]

    def answer(self, line: dict[str, Any]) -> None:
        for world in (self.data, self.coordinator):
            world.answer(line)
            if not world.elr_on:  # the feature off: no ELR
                world.elr.clear()


def _played(name: str, worlds: Worlds, transactional_id: str | None = TXN_ID
            ) -> tuple[Played, FaultInjector]:
    cluster = cluster_of()
    cluster.leader = 1002
    injector = FaultInjector(cluster, AnsweringRecorder(worlds.answer),  # type: ignore[arg-type]
                             page_cache=FakePageCache(), admin=FakeAdmin(  # type: ignore[arg-type]
                                 min_isrs={None: 2}), connect=Wire(worlds.data))
    worlds.data.injector = worlds.coordinator.injector = injector

    def controller_view(topic: str) -> list[PartitionState]:
        return [s for s in worlds.states() if s.topic == topic]

    injector.cluster.controller_view = controller_view  # type: ignore[attr-defined]
    text = fast_text(name, within_s=0.5).replace("high-watermark at least 50",
                                                 "high-watermark at least 1")
    played = Played(parse_schedule(text, f"{name}.toml"), injector,
                    FakeObserver(worlds.states), "t", 7, 3, 2, log=lambda _m: None,
                    topology=TOPOLOGY, active_controller=lambda: 1002, start_within_s=0.5,
                    timings=FAST, scenario=name, transactional_id=transactional_id)
    return played, injector


def _play(played: Played) -> dict:
    result: dict = {}
    played.run(time.monotonic() + 600, threading.Event(), result)
    return result


def _faults(injector: FaultInjector) -> list[tuple[str, list[str]]]:
    return [(str(x["fault"]), x["nodes"]) for x in injector.recorder.lines  # type: ignore
            if x.get("f") == "fault" and x["type"] == "ok"]


def test_coordinator_loss_plays_the_last_replicas_steps_on_cs_partition():
    """C (broker-2) leads the coordinator's partition, L (broker-1) the data one: the
    followers drawn are the coordinator partition's (L is one of them there), C's
    power is lost, and ELR on elects B when the cut heals."""
    worlds = Worlds.of()
    played, injector = _played("txn-coordinator-loss", worlds)
    result = _play(played)
    record = result["schedule"]
    names = record["names"]
    assert names["L"] == "broker-1" and names["C"] == "broker-2"
    assert {names["A"], names["B"]} == {"broker-1", "broker-3"}
    made = _faults(injector)
    assert [k for k, _ in made] == ["partition", "partition", "page-cache-loss", "heal",
                                    "start"]
    played_steps = {s["step"]: s for s in record["steps"]}
    assert [played_steps[t]["target"] for t in ("T0", "T1", "T2")] == [
        names["A"], names["B"], "broker-2"]
    assert made[2] == ("page-cache-loss", ["broker-2"]) and made[4] == ("start", ["broker-2"])
    assert [o["reached"] for o in result["steps"]] == [True] * 8, result["steps"]
    steps = {o["step"]: o for o in result["steps"]}
    b = int(names["B"].removeprefix("broker-"))
    assert steps["T4"]["observed"]["leader"] == b  # ELR on: B, never C
    assert record["partition"] == "t-0"  # the schedule's own, where L was found
    assert played_steps["T2"]["read"] == "controller"


def test_unclean_marker_on_the_model_with_elr_on_and_off():
    """ELR on: A, back alone, is never elected and B is, once thawed. ELR off (unclean
    election on): A is elected as soon as it is back, and leads on."""
    worlds = Worlds.of(data_leader=1, coordinator_leader=1)
    played, injector = _played("txn-unclean-marker", worlds)
    result = _play(played)
    names = result["schedule"]["names"]
    assert names["L"] == names["C"] == "broker-1"
    a, b = names["A"], names["B"]
    assert {a, b} == {"broker-2", "broker-3"}  # C is no draw's obstacle on t-0
    assert [k for k, _ in _faults(injector)] == ["partition", "pause", "page-cache-loss",
                                                 "heal", "resume", "start"]
    steps = {o["step"]: o for o in result["steps"]}
    assert all(o["reached"] for o in result["steps"]), result["steps"]
    assert steps["T3-hold"]["watched"]["seen"] is False  # A never elected
    off = Worlds.of(elr_on=False)
    played, injector = _played("txn-unclean-marker", off)
    result = _play(played)
    steps = {o["step"]: o for o in result["steps"]}
    assert all(o["reached"] for o in result["steps"]), result["steps"]
    assert steps["T3-hold"]["watched"]["seen"] is True  # ELR off: A leads already


def test_a_follower_drawn_on_the_data_partition_is_not_the_coordinator_while_it_can():
    """C a follower of t-0: A (cut off while transactions commit) is the other one, so
    the coordinator goes on committing; B, the only follower left, is C."""
    for seed in range(5):
        worlds = Worlds.of(data_leader=1, coordinator_leader=2)
        played, injector = _played("txn-unclean-marker", worlds)
        played.rng.seed(seed)
        names = _play(played)["schedule"]["names"]
        assert (names["C"], names["A"], names["B"]) == ("broker-2", "broker-3", "broker-2")


def test_delayed_end_pauses_the_coordinator_not_the_data_leader():
    worlds = Worlds.of(data_leader=1, coordinator_leader=3)
    played, injector = _played("txn-delayed-end", worlds)
    result = _play(played)
    assert result["schedule"]["names"]["C"] == "broker-3"
    assert _faults(injector)[:2] == [("pause", ["broker-3"]), ("resume", ["broker-3"])]
    assert [k for k, _ in _faults(injector)] == ["pause", "resume", "slow-network",
                                                 "unthrottle", "pause", "resume"]
    assert all(o["reached"] for o in result["steps"]), result["steps"]


def test_without_transactions_a_step_that_names_the_coordinator_is_skipped():
    worlds = Worlds.of()
    played, injector = _played("txn-coordinator-loss", worlds, transactional_id=None)
    result = _play(played)
    record = result["schedule"]
    assert "C" not in record["names"] and _faults(injector) == []
    skipped = [s for s in record["steps"] if "skipped" in s]
    assert skipped and all("no transactional producer" in s["skipped"] for s in skipped)
    assert not any(o["reached"] for o in result["steps"][1:])


def test_the_coordinator_role_is_the_coordinator_when_the_step_acts():
    """`target = "coordinator"` reads the coordinator's partition as last observed; C
    stays the node it was at the start; a step on the coordinator's partition reads
    that partition, its `follower` drawn there."""
    worlds = Worlds.of(coordinator_leader=2)
    played, _ = _played("txn-delayed-end", worlds)
    played.names.update({"L": "broker-1", "C": "broker-2"})
    played.start_of["C"] = (TRANSACTION_STATE_TOPIC, transaction_partition(TXN_ID, 3))
    worlds.coordinator.leader = 3  # the coordinator moved after the start
    steps = parse_schedule('[[step]]\nfault = "pause"\ntarget = "coordinator"\n'
                           '[[step]]\nfault = "pause"\ntarget = "C"\n'
                           '[[step]]\npartition = "coordinator"\nfault = "pause"\n'
                           'target = "follower"\n', "s.toml").steps
    assert played._target(steps[0]) == "broker-3"
    assert played._target(steps[1]) == "broker-2"
    played.topic, played.partition = played._where(steps[2])
    assert (played.topic, played.partition) == (TRANSACTION_STATE_TOPIC, 1)
    # followers of the coordinator's partition (led by 3 now): L is drawn there (it is
    # the start's leader of t-0 only, and no other is left), C never (the start's
    # leader of this partition)
    assert {played._target(steps[2]) for _ in range(20)} == {"broker-1"}
    # on t-0, C is avoided while another follower is there, then drawn
    played.topic, played.partition = played.home
    assert {played._target(steps[2]) for _ in range(20)} == {"broker-3"}
    worlds.data.isr = [1, 2]
    assert {played._target(steps[2]) for _ in range(20)} == {"broker-2"}


# -- what the run needs --------------------------------------------------------------


def test_needs_parse_the_workloads_and_unclean_leader_election():
    body = '[[step]]\nuntil = "isr full"\nwithin_s = 1\n'
    needs = parse_schedule('[needs]\nworkloads = ["txn"]\nunclean_leader_election = '
                           '"elr-off"\n' + body, "s.toml").needs
    assert needs == Needs(workloads=("txn",), unclean_leader_election=WITH_ELR_OFF)
    assert needs.run_workloads == ("plain", "txn")
    assert needs.unclean_for(True) is False and needs.unclean_for(False) is True
    fixed = parse_schedule("[needs]\nunclean_leader_election = true\n" + body, "s").needs
    assert fixed.unclean_for(True) is True and fixed.unclean_for(False) is True
    for table, said in [('workloads = ["eos"]', "workloads: ['eos'] is not a list"),
                        ('workloads = ["txn", "txn"]', "is not a list of workloads, each"),
                        ("workloads = []", "workloads: [] is not"),
                        ('workloads = "txn"', "workloads: 'txn' is not"),
                        ('unclean_leader_election = "sometimes"',
                         "unclean_leader_election: 'sometimes' is not true, false or "
                         "'elr-off'")]:
        with pytest.raises(BadInput) as caught:
            parse_schedule(f"[needs]\n{table}\n" + body, "s.toml")
        assert said in str(caught.value), str(caught.value)


def test_the_settings_follow_the_runs_elr():
    settings = {s.path: s for s in Needs(workloads=("txn",),
                                         unclean_leader_election=WITH_ELR_OFF).settings()}
    assert settings["workload.workloads"].value_in(RunConfig(), {}) == ("plain", "txn")
    unclean = settings["topic.unclean_leader_election"]
    assert unclean.chosen_by == "topic.unclean_leader_election"
    for elr in (True, False):
        sections = {"cluster": ClusterConfig(elr=elr)}
        assert unclean.value_in(RunConfig(), sections) is (not elr)
    with pytest.raises(ValueError):
        type(unclean)("x.y")  # neither a value nor what it follows


def test_a_run_that_chose_otherwise_is_refused_naming_the_flags():
    needs = Needs(workloads=("txn",), unclean_leader_election=WITH_ELR_OFF)
    base = {"brokers": 3, "log_dirs": 1, "min_insync_replicas": [2]}
    needs.refuse("n", **base, workloads=("plain", "txn"), elr=True,
                 unclean_leader_election=[False])
    needs.refuse("n", **base, workloads=("txn",), elr=False, unclean_leader_election=[True])
    with pytest.raises(BadInput, match=r"--nemesis n needs --workload with txn \(e\.g\. "
                                       r"--workload plain,txn\), --unclean-leader-election "
                                       r"on with --elr off \(\[needs\]\)"):
        needs.refuse("n", **base, workloads=("plain",), elr=False,
                     unclean_leader_election=[False], flag="--nemesis")
    with pytest.raises(BadInput, match="--schedule n needs --unclean-leader-election off "
                                       "with --elr on"):
        needs.refuse("n", **base, workloads=("txn",), elr=True,
                     unclean_leader_election=[True])
    Needs().refuse("n", **base)  # nothing needed, nothing refused


def _configs(tmp_path: Path, *argv: str):
    from elr_harness.cli.main import build_parser
    from elr_harness.run.config import run_configs
    from elr_harness.run.flags import given_flags

    args_list = ["run", *argv, "--store", str(tmp_path)]
    parser = build_parser()
    args = parser.parse_args(args_list)
    args.given = given_flags(parser, args_list)
    return run_configs(args)


def test_the_scenarios_set_the_workload_and_unclean_election_unless_chosen(tmp_path):
    from elr_harness.run.spec import RunSpec, validate

    for name in TXN:
        cluster, topic, workload, run, _ = _configs(tmp_path, "--nemesis", name)
        assert workload.workloads == ("plain", "txn") and cluster.guard_internal_topics
        assert topic.unclean_leader_election is False
        plan = validate(RunSpec(cluster, [topic], workload, run))
        assert plan.scenario == name
    cluster, topic, workload, *_ = _configs(tmp_path, "--nemesis", "txn-unclean-marker",
                                            "--elr", "off")
    assert topic.unclean_leader_election is True and not cluster.elr
    # txn-delayed-end keeps Kafka's own timeouts; the others shorten them
    assert _configs(tmp_path, "--nemesis", "txn-delayed-end")[0].timings == \
        ClusterConfig().timings
    assert _configs(tmp_path, "--nemesis", "txn-coordinator-loss")[0].timings != \
        ClusterConfig().timings
    # the user's choice stays (refused before the run when it lacks txn, below)
    assert _configs(tmp_path, "--nemesis", "txn-delayed-end", "--workload",
                    "txn")[2].workloads == ("txn",)
    cluster, topic, workload, run, _ = _configs(tmp_path, "--nemesis", "txn-unclean-marker",
                                                "--workload", "plain")
    with pytest.raises(BadInput, match="--nemesis txn-unclean-marker needs --workload with "
                                       "txn"):
        validate(RunSpec(cluster, [topic], workload, run))
    assert validate(RunSpec(ClusterConfig(), [TopicConfig()], WorkloadConfig(),
                            replace(RunConfig(), nemesis="unclean-last-replica")))


def _harness(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    work = tmp_path / "cwd"
    work.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "elr_harness.cli", "run", *args],
                          capture_output=True, text=True, timeout=300, cwd=work,
                          env={**os.environ, "ELR_HARNESS_CACHE": str(tmp_path / "cache"),
                               "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"})


@pytest.mark.parametrize(("args", "words"), [
    (("--nemesis", "txn-unclean-marker", "--workload", "plain"),
     "--nemesis txn-unclean-marker needs --workload with txn (e.g. --workload plain,txn)"),
    (("--nemesis", "txn-unclean-marker", "--elr", "off", "--unclean-leader-election", "off"),
     "--nemesis txn-unclean-marker needs --unclean-leader-election on with --elr off"),
    (("--nemesis", "txn-unclean-marker", "--unclean-leader-election", "on"),
     "needs --unclean-leader-election off with --elr on"),
    (("--schedule", "txn-coordinator-loss", "--workload", "plain"),
     "--schedule txn-coordinator-loss needs --workload with txn"),
])
def test_a_bad_combination_exits_2_in_one_line_before_any_container(tmp_path, args, words):
    proc = _harness(tmp_path, *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert words in " ".join(proc.stderr.split()), proc.stderr
    assert "Traceback" not in proc.stderr and "Docker" not in proc.stderr
    assert list((tmp_path / "cwd").iterdir()) == []


def test_run_help_names_the_scenarios(tmp_path):
    proc = _harness(tmp_path, "--nemesis", "txn-unclean-marker", "--help")
    assert proc.returncode == 0
    for name in TXN:
        assert name in proc.stdout
