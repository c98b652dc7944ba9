"""Schedules as data (#55): a schedule file is checked whole before anything is
played (each mistake names the line, the step and the field), and played on the
model of one partition's KIP-966 state that the guided tests use, through the real
FaultInjector: the targets resolved from the observed state, the names bound, the
waits and what each saw."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest
from fakes import AnsweringRecorder, FakeAdmin, FakeObserver, FakePageCache, cluster_of
from test_nemesis_guided import BROKERS, TOPOLOGY, Wire, World

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ScenarioTimings
from elr_harness.core.errors import BadInput
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.registry import parse_nemesis
from elr_harness.nemesis.schedule.conditions import ConditionError, parse_condition
from elr_harness.nemesis.schedule.file import ScheduleFile, parse_schedule, read_schedule
from elr_harness.nemesis.schedule.played import Played

SHIPPED = Path(__file__).resolve().parents[2] / "src" / "elr_harness" / "nemesis" / \
    "scenario_files"


def _parse(text: str):
    return parse_schedule(text, "s.toml")


def test_the_shipped_unclean_last_replica_file_is_a_valid_schedule():
    schedule = read_schedule(SHIPPED / "unclean-last-replica.toml")
    assert [s.name for s in schedule.steps] == ["setup", "T0", "T1", "T2", "T3", "T4"]
    assert schedule.kinds == ("partition", "page-cache-loss")
    assert [s.bind for s in schedule.steps if s.bind] == ["A", "B"]
    assert [s.end for s in schedule.steps if s.end] == ["T1", "T2"]


STEP = '[[step]]\nfault = "kill"\ntarget = "follower"\nas = "A"\n'


@pytest.mark.parametrize(("text", "said"), [
    ("nonsense = 1\n" + STEP, "no field 'nonsense' at the top"),
    ("help = 'x'\n", "no [[step]] tables"),
    ('[[step]]\nfault = "meteor"\ntarget = "leader"\n', "line 2: step 1 (step-1): `fault`: "
     "'meteor' is no fault kind"),
    ('[[step]]\nfault = "kill"\ntarget = "chief"\n', "line 3: step 1 (step-1): `target`: "
     "'chief' is no role"),
    ('[[step]]\nfault = "kill"\n', "line 1: step 1 (step-1): `target`: kill needs a target"),
    (STEP + '[[step]]\nname = "T1"\nfault = "stop"\ntarget = "B"\n',
     "line 8: step 2 (T1): `target`: 'B' is no role"),
    (STEP + 'until = "A floats"\nwithin_s = 5\n', "line 5: step 1 (step-1): `until`: "
     "'A floats' is no condition"),
    (STEP + 'until = "B in elr"\nwithin_s = 5\n', "`until`: 'B' is neither bound"),
    (STEP + 'watch = "A leads"\n', "line 5: step 1 (step-1): `watch`: watches through the "
     "hold: give `hold_s` too"),
    (STEP + 'watch = "A registered"\nhold_s = 5\n', "`watch`: a watch reads the partition"),
    (STEP + 'watch = "B leads"\nhold_s = 5\n', "`watch`: 'B' is neither bound"),
    (STEP + 'watch = "A floats"\nhold_s = 5\n', "`watch`: 'A floats' is no condition"),
    (STEP + 'until = "A not in isr"\n', "line 1: step 1 (step-1): `within_s`: a wait needs "
     "its bound"),
    (STEP + 'until = "A not in isr"\nwithin_s = 0\n', "line 6: step 1 (step-1): `within_s`: "
     "0 is not a number of seconds 0 < within_s <= 600"),
    (STEP + 'until = "A not in isr"\nwithin_s = 6000\n', "`within_s`: 6000 is not"),
    (STEP + 'hold_s = -1\n', "line 5: step 1 (step-1): `hold_s`: -1 is not"),
    (STEP + 'within_s = 5\n', "`within_s`: bounds a wait: give `until` too"),
    (STEP + 'colour = "red"\n', "line 5: step 1 (step-1): `colour`: no such field"),
    (STEP + '[[step]]\nend = "T9"\n', "line 6: step 2 (step-2): `end`: 'T9' is no earlier "
     "step with a fault; earlier: step-1"),
    (STEP + '[[step]]\nend = "step-1"\n[[step]]\nend = "step-1"\n', "step 3 (step-3): `end`: "
     "step 'step-1' was ended already"),
    (STEP + '[[step]]\nfault = "kill"\ntarget = "leader"\nas = "A"\n', "`as`: 'A' is bound "
     "already"),
    ('[[step]]\nfault = "kill"\ntarget = "leader"\nas = "leader"\n', "`as`: a name of"),
    ('[[step]]\nfault = "min-isr-change"\n', "`to`: min-isr-change needs `to`, an integer "
     "1..16"),
    ('[[step]]\nfault = "min-isr-change"\nto = 1\ntarget = "leader"\n', "`target`: "
     "min-isr-change acts on the cluster's config: no target"),
    ('[[step]]\nfault = "kill"\ntarget = "leader"\nto = 1\n', "`to`: kill takes no `to`"),
    ('[[step]]\nfault = "reassign"\ntarget = "follower"\n', "`target`: reassign moves a "
     "replica of a role: one of elr, isr, any"),
    ('[[step]]\nfault = "slow-network"\ntarget = "leader"\nsettings = { away_loss = 2.0 }\n',
     "line 4: step 1 (step-1): `settings`:"),
    ('[[step]]\nfault = "kill"\ntarget = "leader"\nsettings = { x = 1 }\n',
     "`settings`: kill has no settings"),
    ('[[step]]\nfault = "kill"\nend = "x"\n', "`fault`: a step has either"),
    ('[[step]]\nname = "x"\n', "`fault`: a step makes a fault"),
    ('[[step]]\nuntil = "no leader"\nwithin_s = 1\ntarget = "leader"\n',
     "`target`: a step that only waits takes none"),
    ('[[step]]\nfault = "kill"\ntarget = "leader"\n[[step]]\nfault = "kill"\n'
     'target = "broker-9"\n', None),
    ("[[step\n", "not TOML"),
    ('[placement]\nleader = "broker-1"\nreplicas = ["broker-2"]\n' + STEP,
     "[placement] leader: 'broker-1' is none of its replicas"),
    ('[placement]\nleader = "broker-1"\nreplicas = ["broker-1", "broker-1"]\n' + STEP,
     "[placement] replicas: a list of distinct brokers"),
    ('[placement]\nleader = "broker-1"\nreplicas = ["controller-1"]\n' + STEP,
     "[placement] replicas: a list of distinct brokers"),
    ('[placement]\nleader = "broker-1"\nreplicas = ["broker-1"]\ncontroller = "broker-2"\n'
     + STEP, "[placement] controller: 'broker-2' is no controller"),
    ('[placement]\nleader = "broker-1"\nreplicas = ["broker-1"]\nrack = 1\n' + STEP,
     "[placement] has no field 'rack'"),
    ('placement = 3\n' + STEP, "`placement` must be a table"),
    ('[[step]]\nfault = "kill"\ntarget = "leader"\ncut = { "broker-1" = ["broker-2"] }\n',
     "line 4: step 1 (step-1): `cut`: kill takes no cut"),
    ('[[step]]\nfault = "partition"\ntarget = "leader"\ncut = { "broker-1" = ["broker-2"] }\n',
     "line 3: step 1 (step-1): `target`: a step with a `cut` takes no target"),
    ('[[step]]\nfault = "partition"\ncut = { "broker-1" = "broker-2" }\n',
     "`cut`: broker-1: a table of node = [the peers it drops]"),
    ('[[step]]\nfault = "partition"\ncut = { "broker-1" = ["broker-1"] }\n',
     "`cut`: broker-1: a table of node"),
    ('[[step]]\nfault = "partition"\ncut = { "router" = ["broker-1"] }\n',
     "`cut`: 'router' is no node name"),
    ('[[step]]\nfault = "partition"\ncut = {}\n', "`cut`: a table of node"),
    ('[[step]]\nfault = "min-isr-change"\nto = 1\nscope = "galaxy"\n',
     "line 4: step 1 (step-1): `scope`: 'galaxy': one of topic, cluster"),
    ('[[step]]\nfault = "min-isr-change"\nto = 1\nscope = "cluster"\npartition = "t-1"\n',
     "`scope`: the cluster default is no partition's"),
    ('[[step]]\nfault = "kill"\ntarget = "leader"\nscope = "cluster"\n',
     "`scope`: kill takes no scope"),
    ('[[step]]\nfault = "partition"\ncut = { "broker-1" = ["broker-9"] }\n', None),
])
def test_each_mistake_is_one_input_error_naming_line_step_and_field(text, said):
    if said is None:  # a node the file cannot know of: checked against the cluster's
        _parse(text)
        return
    with pytest.raises(BadInput) as caught:
        _parse(text)
    assert said in str(caught.value), str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_missing_file_and_a_nemesis_beside_it_are_input_errors(tmp_path):
    with pytest.raises(BadInput, match="no such file"):
        parse_nemesis("none", str(tmp_path / "nothing.toml"))
    (tmp_path / "s.toml").write_text(STEP)
    with pytest.raises(BadInput, match="give no --nemesis with it"):
        parse_nemesis("kill", str(tmp_path / "s.toml"))
    plan = parse_nemesis("none", str(tmp_path / "s.toml"))
    assert plan.faults == ("kill",) and plan.test_name == "schedule-s" and plan.ends_by_itself


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _bom(path: Path) -> None:
    path.write_bytes(b"\xef\xbb\xbf" + STEP.encode())


def _big(path: Path) -> None:
    with path.open("w") as out:
        out.write(STEP)
        out.write("# " + "x" * (16 * 1024 * 1024) + "\n")


def _deep(path: Path) -> None:
    path.write_text("help = " + "[" * 5000 + "]" * 5000 + "\n" + STEP)


def _many(path: Path) -> None:
    path.write_text("".join(f'[[step]]\nname = "s{i}"\nuntil = "isr full"\nwithin_s = 1\n'
                            for i in range(50_001)))


@pytest.mark.parametrize(("make", "said"), [
    (_fifo, "s.toml: not a regular file"),
    (_zero, "s.toml: not a regular file"),
    (_bom, "s.toml: starts with a UTF-8 byte order mark \\(BOM\\)"),
    (_big, "s.toml: 16777[0-9]+ bytes, more than the 16777216 accepted"),
    (_deep, "s.toml: not TOML \\(nested too deep\\)"),
    (_many, "s.toml: 50001 steps, more than the 50000 a schedule may hold"),
], ids=["fifo", "dev-zero", "bom", "16 MB", "nested 5000 deep", "50,001 steps"])
def test_a_schedule_file_is_read_with_the_guards_of_every_settings_file(tmp_path, make, said):
    """A FIFO hung for good, /dev/zero ate memory, a BOM was 'Invalid statement', 50 MB
    was read whole and nesting was a RecursionError: each is now one input error."""
    path = tmp_path / "s.toml"
    make(path)
    with pytest.raises(BadInput, match="--schedule .*" + said):
        read_schedule(path)


def test_the_steps_checked_so_far_keep_what_later_steps_look_up():
    """Each step gathered its earlier steps' names, binds and ends anew (20,000 steps
    took 18.7 s to check); Earlier keeps them as steps are added (the time is
    benchmarks/bad_input_sweep.py's figure, not a test's)."""
    from elr_harness.nemesis.schedule.step import Earlier

    earlier = Earlier()
    text = "".join(f'[[step]]\nname = "s{i}"\nfault = "pause"\ntarget = "broker-1"\n'
                   f'[[step]]\nname = "e{i}"\nend = "s{i}"\n' for i in range(50))
    parsed = parse_schedule(text, "s.toml")
    for step in parsed.steps:
        earlier.append(step)
    assert len(earlier.names) == 100 and set(earlier.faulted) == {f"s{i}" for i in range(50)}
    assert earlier.ended == set(earlier.faulted) and earlier.binds == set()


@pytest.mark.parametrize("text", ["", "A", "A in", "isr below", "A in isr or B in",
                                  "isr is [A", "high-watermark at least"])
def test_a_condition_is_one_of_its_forms(text):
    with pytest.raises(ConditionError):
        parse_condition(text)


def test_conditions_read_the_observed_partition():
    state = PartitionState("t", 0, -1, 3, (2,), (3,), (1,), 400, replicas=(1, 2, 3),
                           fenced=(3,), min_isr=2, elr_feature=1)
    names = {"L": 1, "A": 2, "B": 3}

    def holds(text: str) -> bool:
        return parse_condition(text).holds(state, names.__getitem__, 3, 2)

    assert holds("no leader and A in isr and B in elr and L in last-known-elr")
    assert holds("isr below min-isr and isr is [A] and B fenced and A unfenced")
    assert holds("elr not empty and high-watermark at least 400 and L not in isr")
    assert not holds("isr full") and not holds("A leads") and not holds("elr empty")
    assert not holds("high-watermark at least 401") and not holds("B unfenced")
    unknown = dataclasses.replace(state, fenced=None)
    assert not parse_condition("B unfenced").holds(unknown, names.__getitem__, 3, 2)
    assert not parse_condition("B fenced").holds(unknown, names.__getitem__, 3, 2)


def test_a_condition_of_alternatives_holds_when_one_of_them_does():
    """`or` joins alternatives, each of atoms joined by `and` (which binds first), and
    `elr on` / `elr off` read the ELR feature the answering node finalized: a file
    can say what each mode must show (ELR on, B is elected; off, L)."""
    state = PartitionState("t", 0, 3, 3, (3,), (), (), 400, elr_feature=1)
    names = {"L": 1, "A": 2, "B": 3}

    def holds(text: str, on=state) -> bool:
        return parse_condition(text).holds(on, names.__getitem__, 3, 2)

    mode = "elr on and B leads or elr off and L leads"
    assert holds(mode) and holds("elr on") and not holds("elr off")
    assert not holds(mode, dataclasses.replace(state, leader=1))  # ELR on: L is wrong
    off = dataclasses.replace(state, leader=1, elr_feature=0)
    assert holds(mode, off) and holds("elr off", off) and not holds("elr on", off)
    unknown = dataclasses.replace(state, elr_feature=None)
    assert not holds("elr on", unknown) and not holds("elr off", unknown)
    assert not holds("A leads or L leads") and holds("A leads or B leads")
    assert [len(g) for g in parse_condition(mode).alternatives] == [2, 2]
    with pytest.raises(ConditionError):
        parse_condition("L registered or B leads")  # read in L's log: it stands alone
    with pytest.raises(ConditionError):
        parse_condition("B leads or")


@dataclasses.dataclass
class WarmWorld(World):
    """The model with records committed (its warm-up seen)."""

    def state(self) -> PartitionState:
        return dataclasses.replace(super().state(), high_watermark=500)


def _player(schedule: str | ScheduleFile, world: World | None = None, min_isr: int = 2,
            timings: ScenarioTimings | None = None) -> tuple[Played, FaultInjector, World]:
    """A schedule (a file's text, or parsed) played on the model through a real
    FaultInjector, the topic's min ISR `min_isr` (the model's own stays its default)."""
    world = world or WarmWorld()
    cluster = cluster_of()
    cluster.leader = 1002
    injector = FaultInjector(cluster, AnsweringRecorder(world.answer),  # type: ignore[arg-type]
                             page_cache=FakePageCache(), admin=FakeAdmin(  # type: ignore[arg-type]
                                 min_isrs={None: min_isr}), connect=Wire(world))
    world.injector = injector
    observer = FakeObserver(lambda: [world.state()])
    parsed = _parse(schedule) if isinstance(schedule, str) else schedule
    played = Played(parsed, injector, observer, "t", 7, 3, min_isr, log=lambda _m: None,
                    topology=TOPOLOGY, active_controller=lambda: 1002, timings=timings)
    return played, injector, world


def _play(played: Played) -> dict:
    import threading
    import time

    result: dict = {}
    played.run(time.monotonic() + 600, threading.Event(), result)
    return result


def _shipped_on_the_model(name: str):
    """The shipped file, made fast, on the model, whose controller reads the world."""
    from shipped_play import fast_text

    played, injector, world = _player(fast_text(name, within_s=0.5))
    injector.cluster.controller_view = lambda _topic: [world.state()]  # type: ignore
    return played, injector, world


def test_the_unclean_last_replica_file_plays_its_steps_on_the_model():
    played, injector, world = _shipped_on_the_model("unclean-last-replica")
    record = _play(played)["schedule"]
    steps = {s["step"]: s for s in record["steps"]}
    assert record["names"]["L"] == "broker-1"
    a, b = steps["T0"]["target"], steps["T1"]["target"]
    assert {a, b} == {"broker-2", "broker-3"} and steps["T2"]["target"] == "broker-1"
    assert [s.get("seen") for s in record["steps"]] == [True] * 6
    assert steps["T2"]["read"] == "controller" and steps["T2"]["observed"]["leader"] == -1
    # the faults as the history has them: the cuts, the power loss, the heal, the start
    kinds = [(str(line["fault"]), line["nodes"]) for line in injector.recorder.lines
             if line.get("f") == "fault" and line["type"] == "ok"]
    assert [k for k, _ in kinds] == ["partition", "partition", "page-cache-loss", "heal",
                                     "start"]
    assert kinds[2][1] == ["broker-1"] and kinds[4][1] == ["broker-1"]
    # B, the ELR member, was elected when the cut healed; then L came back
    assert world.leader == BROKERS[b]
    assert steps["T4"]["observed"]["leader"] == BROKERS[b]


def test_the_alone_variant_restarts_l_while_a_and_b_are_still_cut_off():
    """On the model (a KIP-966 that keeps an uncleanly restarted broker out of the
    ELR), L's restart is seen alone, never elected through the watch, and B is
    elected once the cut heals."""
    played, injector, world = _shipped_on_the_model("unclean-last-replica-alone")
    record = _play(played)["schedule"]
    kinds = [str(line["fault"]) for line in injector.recorder.lines
             if line.get("f") == "fault" and line["type"] == "ok"]
    assert kinds == ["partition", "partition", "page-cache-loss", "start", "heal"]
    steps = {s["step"]: s for s in record["steps"]}
    assert [s["step"] for s in record["steps"]] == [
        "setup", "T0", "T1", "T2", "T3", "T3-hold", "T3-controller", "T4"]
    assert all(s["seen"] for s in record["steps"] if "until" in s)
    assert steps["T3-hold"]["watched"]["seen"] is False
    assert world.leader == BROKERS[steps["T1"]["target"]]


def test_a_wait_that_does_not_see_its_condition_says_what_it_saw_and_goes_on():
    text = STEP + 'until = "A leads"\nwithin_s = 1\n[[step]]\nend = "step-1"\n'
    played, injector, _ = _player(text)
    record = _play(played)["schedule"]
    first, second = record["steps"]
    assert first["seen"] is False
    assert first["saw"].startswith("leader L, ISR [L, ") and "fenced [A]" in first["saw"]
    assert second["end"] == "step-1" and "error" not in second


def test_a_schedule_without_a_full_isr_to_start_from_plays_nothing():
    played, injector, _ = _player(STEP, WarmWorld(isr=[1, 2], stuck=True))
    record = _play(played)["schedule"]
    assert record["skipped"] and record["steps"] == []
    assert [line for line in injector.recorder.lines if line.get("f") == "fault"] == []


def test_a_stop_ends_the_schedule_before_its_next_step():
    import threading
    import time

    played, injector, _ = _player(STEP)
    stop = threading.Event()
    stop.set()
    result: dict = {}
    played.run(time.monotonic() + 600, stop, result)
    assert result["schedule"]["stopped_before"] == "step-1"
    assert [line for line in injector.recorder.lines if line.get("f") == "fault"] == []


def test_the_schedule_a_run_played_is_a_schedule_file_that_plays_it_again():
    from shipped_play import fast_text

    from elr_harness.nemesis.schedule.writer import played_toml

    # waits short: the model has no controller to answer T2's
    text = fast_text("unclean-last-replica", within_s=0.5)
    text += '\n[[step]]\nfault = "slow-network"\ntarget = "A"\n' \
            'settings = { away_loss = 0.5, away_rate_kbit = 64 }\n'
    played, _, _ = _player(text)
    record = _play(played)["schedule"]
    written = played_toml(played.schedule, record)
    again = _parse(written)
    assert [dataclasses.replace(s, number=0) for s in again.steps] == \
        [dataclasses.replace(s, number=0) for s in played.schedule.steps]
    import tomllib

    steps = tomllib.loads(written)["step"]
    assert steps[1]["played"]["target"] == record["steps"][1]["target"]
    assert steps[1]["played"]["seen"] is True and steps[4]["played"]["end"] == "T1"
    # and it plays as the file did
    played_again, _, world = _player(written)
    assert [s.get("seen") for s in _play(played_again)["schedule"]["steps"]] == \
        [s.get("seen") for s in record["steps"]]


def test_a_node_the_cluster_lacks_ends_the_schedule_before_any_fault():
    """With a nodes file the names are the user's: checked when the run starts."""
    played, injector, _ = _player('[[step]]\nfault = "kill"\ntarget = "broker-9"\n')
    record = _play(played)["schedule"]
    assert "'broker-9' is no node of the cluster" in record["error"]
    assert record["steps"] == []
    assert [line for line in injector.recorder.lines if line.get("f") == "fault"] == []


def test_a_cut_naming_a_node_the_cluster_lacks_ends_the_schedule_before_any_fault():
    played, injector, _ = _player('[[step]]\nfault = "partition"\n'
                                  'cut = { "broker-1" = ["broker-9"] }\n')
    record = _play(played)["schedule"]
    assert "'broker-9' is no node of the cluster" in record["error"]
    assert [line for line in injector.recorder.lines if line.get("f") == "fault"] == []


def test_a_cut_is_made_as_written_and_the_cluster_scope_changes_the_default():
    played, injector, _ = _player(
        '[[step]]\nname = "ring"\nfault = "partition"\n'
        'cut = { "broker-1" = ["broker-2"], "broker-2" = ["broker-1", "broker-3"] }\n'
        '[[step]]\nend = "ring"\n[[step]]\nname = "m"\nfault = "min-isr-change"\nto = 1\n'
        'scope = "cluster"\n[[step]]\nend = "m"\n')
    _play(played)
    ok = [line for line in injector.recorder.lines if line.get("f") == "fault"
          and line["type"] == "ok"]
    assert ok[0]["detail"]["grudge"] == {"broker-1": ["broker-2"],
                                         "broker-2": ["broker-1", "broker-3"]}
    assert (ok[2]["fault"], ok[2]["detail"]["topic"], ok[2]["detail"]["to"]) == \
        ("min-isr-change", None, 1)
    assert ok[3]["detail"].get("restore") is True


PLACED = """[placement]
leader = "broker-2"
replicas = ["broker-2", "broker-3", "broker-1"]
controller = "controller-1"

[[step]]
name = "K"
fault = "kill"
target = "broker-3"
until = "broker-3 not in isr"
within_s = 5

[[step]]
name = "C"
fault = "partition"
cut = { "broker-2" = ["controller-1"] }

[[step]]
end = "C"

[[step]]
end = "K"
"""


def test_a_placed_file_plays_each_node_in_its_place_on_this_cluster():
    """The run placed its leader on broker-2, its first follower on broker-3; here the
    leader is broker-1 and the active controller controller-2: every node a step
    names is the one in the same place here, in targets, cuts and waits."""
    played, injector, _ = _player(PLACED)
    record = _play(played)["schedule"]
    assert record["renamed"] == {"broker-2": "broker-1", "broker-3": "broker-2",
                                 "broker-1": "broker-3", "controller-1": "controller-2",
                                 "controller-2": "controller-1"}
    kill, wait = record["steps"][0]["target"], record["steps"][0]["seen"]
    assert (kill, wait) == ("broker-2", True)
    ok = [line for line in injector.recorder.lines if line.get("f") == "fault"
          and line["type"] == "ok"]
    assert ok[1]["detail"]["grudge"] == {"broker-1": ["controller-2"]}
    from elr_harness.nemesis.schedule.writer import played_toml

    again = _parse(played_toml(played.schedule, record))
    assert again.placement == played.schedule.placement  # a replay places it the same


def test_a_role_with_no_broker_to_draw_says_what_stood_in():
    """`target = "elr"` while the ELR is empty: an unbound broker stands in, and the
    step's played record says so (`substituted`), not only the node."""
    text = 'help = "h"\n[[step]]\nfault = "pause"\ntarget = "elr"\n' \
           '[[step]]\nend = "step-1"\n'
    played, injector, _ = _player(text)
    record = _play(played)["schedule"]
    first = record["steps"][0]
    assert first["target"] in {"broker-2", "broker-3"}, first  # L is bound: never drawn
    assert first["substituted"] == ("the role elr had no broker to draw (elr []); drawn "
                                    "from the unbound brokers instead")
    # a role with brokers to draw substitutes nothing
    played, _, _ = _player('help = "h"\n[[step]]\nfault = "pause"\ntarget = "follower"\n'
                           '[[step]]\nend = "step-1"\n')
    assert "substituted" not in _play(played)["schedule"]["steps"][0]


@pytest.mark.parametrize(("kind", "target", "said"), [
    ("controller-kill", "follower", "controller-kill acts on a controller: aim it at "
     "`active-controller` or a controller node (controller-N), not 'follower'"),
    ("controller-kill", "broker-1", "not 'broker-1'"),
    ("controller-partition", "L", "controller-partition acts on a controller"),
    ("page-cache-loss", "controller-1", "page-cache-loss acts on a broker only: aim it at a "
     "broker's role or node, not 'controller-1'"),
    ("disk-fault", "active-controller", "disk-fault acts on a broker only"),
    ("isolate-from-controllers", "controller-2", "isolate-from-controllers acts on a "
     "broker only"),
])
def test_a_kind_aimed_at_the_other_class_of_node_is_refused_in_its_words(kind, target, said):
    with pytest.raises(BadInput, match="`target`: .*" + re.escape(said)):
        _parse(f'[[step]]\nfault = "{kind}"\ntarget = "{target}"\n')


@pytest.mark.parametrize(("kind", "target"), [
    ("controller-kill", "controller-2"), ("controller-kill", "active-controller"),
    ("kill", "controller-1"), ("pause", "elr"), ("slow-network", "controller-1"),
    ("page-cache-loss", "broker-2"), ("disk-fault", "isr")])
def test_a_kind_aimed_at_its_own_class_of_node_is_taken(kind, target):
    assert _parse(f'[[step]]\nfault = "{kind}"\ntarget = "{target}"\n').steps[0].target == target
