"""`harness shrink` (#55): ddmin finds a 1-minimal subset; a candidate is kept at k
of n replays and its replays stop once that is decided; a candidate that is no
valid schedule costs no run; a killed shrink resumes without repeating a replay;
BUG.md says the version, the steps, the rate, the evidence and the command.

The replays here are a model (each replay "reproduces" when the candidate holds
the steps the model says the bug needs), not clusters: the cluster side is
`harness replay`'s, run for real in the note."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from elr_harness.core.errors import BadInput
from elr_harness.hunt import shrink
from elr_harness.hunt.shrink import anomaly_of, ddmin

RUN_SCHEDULE = """help = "a run"

[[step]]
name = "T0"
fault = "partition"
target = "follower"
as = "A"
until = "A not in isr"
within_s = 30

[[step]]
name = "noise"
fault = "pause"
target = "controller-1"

[[step]]
name = "T1"
fault = "partition"
target = "follower"
as = "B"
hold_s = 4

[[step]]
name = "T2"
fault = "page-cache-loss"
target = "L"

[[step]]
name = "T3"
end = "T1"

[[step]]
name = "T4"
end = "T2"
until = "B leads"
within_s = 30
"""


def test_ddmin_finds_a_one_minimal_subset():
    calls: list[list[str]] = []

    def needs(*wanted):
        def reproduces(items):
            calls.append(items)
            return set(wanted) <= set(items)
        return reproduces

    items = [f"s{i}" for i in range(8)]
    assert ddmin(items, needs("s2", "s5")) == ["s2", "s5"]
    assert ddmin(items, needs("s7")) == ["s7"]
    assert ddmin(items, needs(*items)) == items
    assert ddmin(["a"], needs("a")) == ["a"]


def test_the_anomaly_shrunk_for_is_data_loss_first():
    assert anomaly_of(["elr-invariant", "lost-write", "hwm-regression"]) == "lost-write"
    assert anomaly_of(["zeta", "alpha"]) == "alpha"


def _run_dir(tmp_path: Path, valid: bool = False) -> Path:
    run = tmp_path / "run"
    run.mkdir(parents=True)
    (run / "schedule.toml").write_text(RUN_SCHEDULE)
    (run / "test.json").write_text(json.dumps({
        "cli_args": ["run", "--schedule", "x.toml", "--elr", "off"],
        "kafka_version": "4.4.0", "kafka_dist": "maven:4.4.0", "elr_enabled": False,
        "topics": {"elr-test": {"partitions": 3, "replication_factor": 3,
                                "min_insync_replicas": 2}}}))
    (run / "results.json").write_text(json.dumps({
        "valid": valid, "bad_anomaly_types": [] if valid else ["lost-write", "hwm-regression"]}))
    return run


class Model:
    """Replays as a model: INVALID with lost-write when the candidate's schedule
    holds every step in `needed` (and T1's hold is at least `hold`); each replay's
    run directory gets a results.json and a history the bug report reads."""

    def __init__(self, tmp_path: Path, needed=("T1", "T2"), hold: float = 0.0,
                 flaky_every: int = 0, confirm_hits: int | None = None) -> None:
        self.tmp, self.needed, self.hold, self.flaky_every = tmp_path, needed, hold, flaky_every
        #: how many confirming replays hit at most (None: as many as the steps say)
        self.confirm_hits = confirm_hits
        self.confirming = 0
        self.runs: list[list[str]] = []

    def hits(self, steps: list[dict], names: list[str]) -> bool:
        hold = next((s.get("hold_s", 0.0) for s in steps if s["name"] == "T1"), 0.0)
        return set(self.needed) <= set(names) and hold >= self.hold

    def __call__(self, args: list[str], cell_dir: Path, file_name: str) -> dict:
        import tomllib

        schedule = Path(args[args.index("--schedule") + 1])
        steps = tomllib.loads(schedule.read_text())["step"]
        names = [s["name"] for s in steps]
        self.runs.append(names)
        hit = self.hits(steps, names)
        if self.flaky_every and len(self.runs) % self.flaky_every == 0:
            hit = False
        if "confirm" in cell_dir.parts and self.confirm_hits is not None:
            self.confirming += 1
            hit = hit and self.confirming <= self.confirm_hits
        run_dir = cell_dir / file_name
        run_dir.mkdir(parents=True)
        (run_dir / "results.json").write_text(json.dumps({
            "valid": not hit, "bad_anomaly_types": ["lost-write"] if hit else [],
            "anomalies": {"lost-write": {"count": 7, "examples": [{
                "topic": "elr-test", "partition": 0, "value": 3, "ops": [1, 2],
                "description": "acks=all send of value 3 (offset 3) was acknowledged but "
                               "is not in the final log of elr-test-0"}]}}}))
        (run_dir / "history.jsonl").write_text("\n".join(json.dumps(op) for op in [
            {"time": 0, "f": "observe", "type": "ok", "topic": "elr-test", "partition": 0,
             "leader": 1, "isr": [1, 2, 3], "elr": [], "last_known_elr": [], "fenced": []},
            {"time": 10**9, "f": "fault", "type": "ok", "fault": "page-cache-loss",
             "nodes": ["broker-1"], "detail": {"step": "schedule:T2"}},
            {"time": 2 * 10**9, "f": "observe", "type": "ok", "topic": "elr-test",
             "partition": 0, "leader": -1, "isr": [], "elr": [2], "last_known_elr": [1],
             "fenced": [1]}]) + "\n")
        started = 1_795_900_000  # 2026-11-28T...: whole seconds, as test.json has it
        (run_dir / "test.json").write_text(json.dumps({
            "started_at": datetime.fromtimestamp(started, UTC).isoformat(),
            "phases": [{"name": "workload + nemesis", "start_s": 10.0}]}))
        (run_dir / "nodes" / "controller-1").mkdir(parents=True)
        (run_dir / "nodes" / "controller-1" / "metadata-log.json").write_text(json.dumps([
            {"type": "TOPIC_RECORD", "timestamp_ms": started * 1000,
             "data": {"name": "elr-test", "topicId": "T"}},
            {"type": "PARTITION_CHANGE_RECORD", "timestamp_ms": (started + 12) * 1000,
             "data": {"topicId": "T", "partitionId": 0, "leader": -1}},
            {"type": "PARTITION_CHANGE_RECORD", "timestamp_ms": (started + 13) * 1000,
             "data": {"topicId": "T", "partitionId": 1, "leader": 2}},
            {"type": "BROKER_REGISTRATION_CHANGE_RECORD", "timestamp_ms": (started + 11) * 1000,
             "data": {"brokerId": 1, "brokerEpoch": 4, "fenced": 1}}]))
        return {"exit": 1 if hit else 0, "log": "", "seconds": 1.0,
                "verdict": "invalid" if hit else "valid", "run_dir": str(run_dir),
                "bad": ["lost-write"] if hit else [], "states": [], "first_invalid_s": None}


def test_a_shrink_keeps_the_steps_the_bug_needs_and_writes_bug_md(tmp_path, monkeypatch):
    model = Model(tmp_path)
    monkeypatch.setattr(shrink, "run_child", model)
    assert shrink.start(_run_dir(tmp_path), tmp_path / "store", 2, 3, None, 5) == 0
    [out] = (tmp_path / "store" / "shrink").iterdir()
    state = json.loads((out / "shrink.json").read_text())
    assert state["anomaly"] == "lost-write"
    # T1 and T2, and the ends and binds they need: T3 ends T1, T4 ends T2 (a
    # candidate without them ... still ran, since ending is optional) - 1-minimal
    assert state["smallest"]["steps"] == ["T1", "T2"]
    assert state["smallest"]["holds"] == {"T1": 0.0}
    assert state["confirmed"]["hits"] == 5
    # every candidate ran at most n replays, and stopped once decided
    for tried in state["candidates"].values():
        assert tried.get("ill_formed") or 1 <= len(tried["runs"]) <= 3
        if tried.get("kept"):
            assert len(tried["runs"]) == 2
    # a candidate that is no schedule (T3 ends T1, left out) cost no run
    ill = [t for t in state["candidates"].values() if t.get("ill_formed")]
    assert ill and all("runs" not in t for t in ill)
    assert all("T3" not in names or "T1" in names for names in model.runs)
    bug = (out / "BUG.md").read_text()
    assert bug.startswith("# lost-write on Kafka 4.4.0 (ELR off): 2 steps, reproduced 5 of "
                          "5 times")
    assert "1. `T1`: partition on follower (now B)" in bug
    assert "2. `T2`: page-cache-loss on L" in bug
    assert "acks=all send of value 3" in bug
    assert "fault page-cache-loss broker-1 (ok, schedule:T2)" in bug
    assert "leader -1 ISR [] ELR [2] LastKnownELR [1] fenced [1]" in bug
    # the controller's own records of the partition (not of partition 1), on the
    # timeline's clock
    assert '    2.0 s  PARTITION_CHANGE_RECORD {"leader": -1}' in bug
    assert '    1.0 s  BROKER_REGISTRATION_CHANGE_RECORD {"brokerId": 1' in bug
    assert '"leader": 2' not in bug
    assert f"--schedule {out / 'schedule.toml'}" in bug and "--elr off" in bug


def test_a_killed_shrink_resumes_without_repeating_a_replay(tmp_path, monkeypatch):
    model = Model(tmp_path)

    def dies_after(count: int):
        def run(args, cell_dir, file_name):
            if len(model.runs) >= count:
                raise KeyboardInterrupt
            return model(args, cell_dir, file_name)
        return run

    monkeypatch.setattr(shrink, "run_child", dies_after(4))
    with pytest.raises(KeyboardInterrupt):
        shrink.start(_run_dir(tmp_path), tmp_path / "store", 2, 3, None, 2)
    [out] = (tmp_path / "store" / "shrink").iterdir()
    before = len(model.runs)
    monkeypatch.setattr(shrink, "run_child", model)
    assert shrink.resume(out) == 0
    state = json.loads((out / "shrink.json").read_text())
    recorded = sum(len(t.get("runs", [])) for t in state["candidates"].values()) + \
        len(state["confirmed"]["runs"])
    assert recorded == len(model.runs) and len(model.runs) > before


def test_a_valid_run_or_an_anomaly_it_lacks_is_refused(tmp_path):
    with pytest.raises(BadInput, match="is not INVALID"):
        shrink.start(_run_dir(tmp_path / "a", valid=True), tmp_path / "store", 2, 3, None)
    with pytest.raises(BadInput, match="--anomaly 'fenced-leader' is not one of"):
        shrink.start(_run_dir(tmp_path / "b"), tmp_path / "store", 2, 3, "fenced-leader")
    assert not (tmp_path / "store").exists()


def test_a_schedule_that_does_not_reproduce_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(shrink, "run_child", Model(tmp_path, needed=("nothing",)))
    assert shrink.start(_run_dir(tmp_path), tmp_path / "store", 2, 3, None) == 2
    [out] = (tmp_path / "store" / "shrink").iterdir()
    assert json.loads((out / "shrink.json").read_text())["ended"] == "does not reproduce"


def _shrunk(tmp_path: Path, monkeypatch, schedule: str, model: Model) -> tuple[Path, dict]:
    """A run of `schedule` shrunk (k = 2 of n = 3, one confirming replay) on the model's
    replays: the shrink's folder and its shrink.json."""
    run = _run_dir(tmp_path)
    (run / "schedule.toml").write_text(schedule)
    monkeypatch.setattr(shrink, "run_child", model)
    assert shrink.start(run, tmp_path / "store", 2, 3, None, 1) == 0
    [out] = (tmp_path / "store" / "shrink").iterdir()
    return out, json.loads((out / "shrink.json").read_text())


ROUNDS = """help = "a guided run's rounds"

[[step]]
name = "warm-up"
until = "isr full"
within_s = 10

[[step]]
name = "r1-a"
fault = "pause"
target = "broker-2"

[[step]]
name = "r1-b"
end = "r1-a"

[[step]]
name = "T1"
fault = "partition"
target = "broker-3"

[[step]]
name = "T2"
fault = "page-cache-loss"
target = "broker-1"

[[step]]
name = "r2-c"
end = "T1"

[[step]]
name = "r2-d"
end = "T2"

[[step]]
name = "r2-e"
until = "isr full"
within_s = 10

[[step]]
name = "r3-a"
fault = "kill"
target = "broker-2"

[[step]]
name = "r3-b"
end = "r3-a"
"""


def test_a_schedule_is_cut_by_its_self_contained_groups_first(tmp_path, monkeypatch):
    """A guided run's rounds each end what they start: the shrink keeps or drops a
    round whole before it tries single steps, so the bug's round is found with few
    candidates, and the steps inside it after."""
    from elr_harness.nemesis.schedule.file import parse_schedule

    steps = parse_schedule(ROUNDS, "s.toml").steps
    assert shrink.groups(steps) == [["warm-up"], ["r1-a", "r1-b"],
                                    ["T1", "T2", "r2-c", "r2-d", "r2-e"], ["r3-a", "r3-b"]]
    model = Model(tmp_path)
    _, state = _shrunk(tmp_path, monkeypatch, ROUNDS, model)
    assert state["smallest"]["steps"] == ["T1", "T2"]
    tried = [t["steps"] for t in state["candidates"].values() if "runs" in t]
    round2 = ["T1", "T2", "r2-c", "r2-d", "r2-e"]
    # whole groups, then the steps of the one kept: 7 candidates, 15 replays (steps
    # alone from the start: 15 candidates, 25 replays)
    assert tried == [[s.name for s in steps], ["warm-up", "r1-a", "r1-b"],
                     [*round2, "r3-a", "r3-b"], round2, ["T1", "T2"], ["T1"], ["T2"]]
    assert len(model.runs) == 15


RING = """help = "a mix's run"

[placement]
leader = "broker-1"
replicas = ["broker-1", "broker-2", "broker-3"]

[[step]]
name = "m1-partition"
fault = "partition"
cut = { "broker-1" = ["broker-2", "broker-3"], "broker-2" = ["broker-1", "controller-1"], \
"broker-3" = ["broker-1"], "controller-1" = ["broker-2"] }
hold_s = 3

[[step]]
name = "T2"
fault = "page-cache-loss"
target = "broker-1"
"""


class CutModel(Model):
    """The bug needs broker-1 cut from broker-2 while T2 acts, nothing else of the cut."""

    def hits(self, steps: list[dict], names: list[str]) -> bool:
        cut = next((s.get("cut", {}) for s in steps if s["name"] == "m1-partition"), {})
        return "T2" in names and "broker-2" in cut.get("broker-1", [])


def test_fewer_targets_a_cut_keeps_only_the_nodes_the_bug_needs(tmp_path, monkeypatch):
    import tomllib

    out, state = _shrunk(tmp_path, monkeypatch, RING, CutModel(tmp_path))
    assert state["smallest"]["steps"] == ["m1-partition", "T2"]
    assert state["smallest"]["cuts"] == {"m1-partition": ["broker-1", "broker-2"]}
    written = tomllib.loads((out / "schedule.toml").read_text())["step"][0]
    assert written["cut"] == {"broker-1": ["broker-2"], "broker-2": ["broker-1"]}
    bug = (out / "BUG.md").read_text()
    assert "m1-partition's cut to broker-1, broker-2" in bug
    assert "1. `m1-partition`: partition: broker-1 drops broker-2; broker-2 drops broker-1" \
        in bug
    assert "named as the run placed them: broker-1 led, the replicas were broker-1, " \
        "broker-2, broker-3; a replay plays each on the node in the same place" in bug
    assert "[placement]" in (out / "schedule.toml").read_text()  # the shrunk file keeps it


def test_a_shrink_whose_confirming_replays_fall_short_is_not_confirmed(tmp_path, monkeypatch):
    """ddmin's replays hit, the confirming ones mostly miss: 3 of 5 is below the 2 of 3
    a candidate was kept at, so the shrink ends "not confirmed", exit 1, and writes no
    BUG.md that would call the schedule a reproducer."""
    monkeypatch.setattr(shrink, "run_child", Model(tmp_path, confirm_hits=3))
    assert shrink.start(_run_dir(tmp_path), tmp_path / "store", 2, 3, None, 5) == 1
    [out] = (tmp_path / "store" / "shrink").iterdir()
    state = json.loads((out / "shrink.json").read_text())
    assert state["ended"] == "not confirmed"
    assert state["smallest"]["steps"] == ["T1", "T2"]
    assert (state["confirmed"]["hits"], len(state["confirmed"]["runs"])) == (3, 5)
    assert state["confirmed"]["confirmed"] is False
    assert not (out / "BUG.md").exists()
    assert (out / "schedule.toml").is_file(), "the smallest candidate is kept to look at"
    # resumed, it says the same and replays nothing more
    model = Model(tmp_path, confirm_hits=3)
    monkeypatch.setattr(shrink, "run_child", model)
    assert shrink.resume(out) == 1 and model.runs == []
    # at the rate it was kept at (4 of 5 >= 2 of 3) it is confirmed
    assert shrink.confirmed(4, 5, 2, 3) and not shrink.confirmed(3, 5, 2, 3)
    assert shrink.confirmed(2, 3, 2, 3) and not shrink.confirmed(0, 0, 1, 1)


def test_mixed_replays_keep_a_candidate_at_k_of_n_and_stop_once_decided(tmp_path, monkeypatch):
    """Every third replay misses whatever its steps: candidates see hit-miss mixes, and
    each is kept exactly when k of its replays hit, its replays stopping once that is
    decided (never more than n)."""
    model = Model(tmp_path, flaky_every=3)
    monkeypatch.setattr(shrink, "run_child", model)
    code = shrink.start(_run_dir(tmp_path), tmp_path / "store", 2, 3, None, 3)
    [out] = (tmp_path / "store" / "shrink").iterdir()
    state = json.loads((out / "shrink.json").read_text())
    mixed = 0
    for tried in state["candidates"].values():
        if tried.get("ill_formed"):
            continue
        hits = [r["hit"] for r in tried["runs"]]
        assert tried["kept"] == (sum(hits) >= 2), tried
        assert len(hits) <= 3
        # stopped at the replay that decided it: before it, still open
        before = hits[:-1]
        assert sum(before) < 2 and sum(before) + (3 - len(before)) >= 2, tried
        mixed += len(set(hits)) == 2
    assert mixed >= 2, "the model gave candidates both outcomes"
    assert state["smallest"]["steps"] == ["T1", "T2"]
    confirmed = state["confirmed"]
    assert confirmed["hits"] == sum(r["hit"] for r in confirmed["runs"])
    assert code == (0 if confirmed["confirmed"] else 1)
    assert (out / "BUG.md").exists() == confirmed["confirmed"]


def test_a_hold_the_bug_needs_whole_is_not_shortened(tmp_path, monkeypatch):
    """T1's 4 s hold is what the bug needs: none and half are tried, both fail, and
    the smallest schedule keeps the whole hold."""
    import tomllib

    monkeypatch.setattr(shrink, "run_child", Model(tmp_path, hold=4.0))
    assert shrink.start(_run_dir(tmp_path), tmp_path / "store", 2, 3, None, 2) == 0
    [out] = (tmp_path / "store" / "shrink").iterdir()
    state = json.loads((out / "shrink.json").read_text())
    assert state["smallest"]["holds"] == {}
    tried_holds = [t["holds"] for t in state["candidates"].values() if t.get("holds")]
    assert {"T1": 0.0} in tried_holds and {"T1": 2.0} in tried_holds
    steps = tomllib.loads((out / "schedule.toml").read_text())["step"]
    assert next(s for s in steps if s["name"] == "T1")["hold_s"] == 4.0
    assert "`T1`: partition on follower (now B); hold 4 s" in (out / "BUG.md").read_text()


WORDY = """help = "every field of a step"

[[step]]
name = "T0"
fault = "slow-network"
target = "follower"
as = "A"
settings = { away_rate_kbit = 64, away_loss = 0.1 }
until = "A not in isr"
within_s = 60

[[step]]
name = "C"
fault = "kill"
target = "coordinator"
partition = "coordinator"

[[step]]
name = "T1"
fault = "stop"
target = "leader"
partition = "elr-test-2"
until = "no leader"
read = "controller"
within_s = 30

[[step]]
name = "T1-hold"
watch = "A leads"
read = "controller"
hold_s = 5
"""


def test_bug_md_says_every_field_of_a_step_and_its_partition(tmp_path, monkeypatch):
    monkeypatch.setattr(shrink, "run_child", Model(tmp_path, needed=("T0", "C", "T1",
                                                                      "T1-hold")))
    run = _run_dir(tmp_path)
    (run / "schedule.toml").write_text(WORDY)
    assert shrink.start(run, tmp_path / "store", 1, 1, None, 1) == 0
    [out] = (tmp_path / "store" / "shrink").iterdir()
    bug = (out / "BUG.md").read_text()
    assert "On the first topic's partition 0 (a step that names another says so)" in bug
    assert "`T0`: slow-network on follower (now A), settings away_rate_kbit 64, " \
           "away_loss 0.1; wait" in bug
    assert "wait until A not in isr (at most 60 s, read from the observer)" in bug
    assert "`C`: kill on coordinator (on the transaction coordinator's " \
           "__transaction_state partition)" in bug
    assert "`T1`: stop on leader (on partition elr-test-2); wait until no leader (at most " \
           "30 s, read from the active controller's metadata)" in bug
    assert "`T1-hold`: no fault; hold 2.5 s; watch for A leads through the hold (read from " \
           "the active controller's metadata; recorded if seen)" in bug


@pytest.mark.parametrize(("change", "said"), [
    (lambda s: s.pop("anomaly"), "`anomaly` is missing"),
    (lambda s: s.update(k="2"), "`k` is not a count from 1 to 20"),
    (lambda s: s.update(k=3, n=2), "`k` is more than `n`"),
    (lambda s: s.update(args=["--seed", None]), "`args` is not the runs' flags"),
    (lambda s: s.update(bad="lost-write"), "`bad` is not a list of anomaly names"),
    (lambda s: s.update(anomaly="fenced-leader"), "`anomaly` is not one of `bad`"),
    (lambda s: s.update(candidates={"x": {"steps": [1]}}), "candidate 'x' is not a "
     "candidate's record"),
    (lambda s: s.update(confirmed={"runs": [{"hit": "yes"}]}), "`confirmed` is not"),
    (lambda s: s.update(schedule="[[step]\n"), "`schedule` is not a schedule"),
])
def test_a_damaged_shrink_json_is_refused_naming_its_field(tmp_path, monkeypatch, change,
                                                           said):
    """--resume read shrink.json as it found it: a missing or mistyped key was an
    internal error (KeyError, TypeError) or a replay of a flag nobody typed."""
    model = Model(tmp_path)
    monkeypatch.setattr(shrink, "run_child", model)
    assert shrink.start(_run_dir(tmp_path), tmp_path / "store", 2, 3, None, 1) == 0
    [out] = (tmp_path / "store" / "shrink").iterdir()
    state = json.loads((out / "shrink.json").read_text())
    change(state)
    (out / "shrink.json").write_text(json.dumps(state))
    runs = len(model.runs)
    with pytest.raises(BadInput, match=r"--resume .*: shrink\.json: " + re.escape(said)):
        shrink.resume(out)
    assert len(model.runs) == runs, "nothing replayed"
