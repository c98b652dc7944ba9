"""`harness soak` without Kafka: the plan's rotation, the record of a finished run
as its run directory says it, --keep, the exit code, junit.xml read back by a
JUnit parser, and index.html's links. tests/integration/test_soak.py runs it on
real Kafka."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from elr_harness.cli.main import build_parser
from elr_harness.core.config import SoakConfig
from elr_harness.core.errors import BadInput
from elr_harness.report.soak_index import render_soak_index
from elr_harness.soak.junit import write_junit
from elr_harness.soak.plan import (
    DEFAULT_PLAN,
    PlanEntry,
    planned_run,
    read_plan,
    validate_plan,
    workload_seconds,
)
from elr_harness.soak.results import keep, run_record
from elr_harness.soak.runner import Soak


def test_every_entry_meets_every_release_with_its_own_seed():
    plan = (PlanEntry("a", ()), PlanEntry("b", ()))
    runs = [planned_run(plan, ("4.1.1", "4.4.0"), 10, i) for i in range(5)]
    assert [(r.entry.name, r.kafka_version, r.seed) for r in runs] == [
        ("a", "4.1.1", 10), ("b", "4.1.1", 11), ("a", "4.4.0", 12), ("b", "4.4.0", 13),
        ("a", "4.1.1", 14)]
    assert runs[1].command() == "harness run --seed 11 --kafka-version 4.1.1"


def test_a_scenario_is_expected_to_take_its_typical_time_not_its_cap():
    config = SoakConfig()
    assert workload_seconds(DEFAULT_PLAN[0], config) == config.scenario_workload_s
    assert workload_seconds(DEFAULT_PLAN[1], config) == config.scenario_workload_s
    assert workload_seconds(DEFAULT_PLAN[2], config) == 90.0
    assert workload_seconds(PlanEntry("x", ("--time-limit=45",)), config) == 45.0
    assert workload_seconds(PlanEntry("x", ("--nemesis", "kill")), config) == 60.0


def test_the_default_plan_is_valid_run_flags(tmp_path):
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    validate_plan(DEFAULT_PLAN, run_parser, tmp_path / "store")
    assert not (tmp_path / "store").exists(), "validating makes nothing"
    assert [e.name for e in DEFAULT_PLAN] == [
        "unclean-last-replica", "unclean-last-replica-alone", "mix-all", "guided"]


def test_a_guided_run_is_handed_the_states_the_soak_reached_so_far(tmp_path):
    """Only a guided entry gets --reached (the soak's coverage so far), and a plan
    entry may not set it itself."""
    guided = planned_run(DEFAULT_PLAN, ("latest",), 1, 3)
    assert guided.entry.name == "guided"
    argv = guided.run_args(tmp_path, "elr", None, ["elr-not-empty", "elected-from-elr"])
    assert argv[argv.index("--reached") + 1] == "elr-not-empty,elected-from-elr"
    assert "--reached" not in guided.run_args(tmp_path, "elr", None, [])
    mix = planned_run(DEFAULT_PLAN, ("latest",), 1, 2)
    assert "--reached" not in mix.run_args(tmp_path, "elr", None, ["elr-not-empty"])
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    with pytest.raises(BadInput, match="--reached is set by the soak"):
        validate_plan((PlanEntry("g", ("--nemesis", "guided", "--reached", "elr-not-empty")),),
                      run_parser, tmp_path / "store")


def test_the_soak_hands_its_coverage_to_a_guided_child(tmp_path):
    state = _state(["valid", "valid"])
    state["runs"][0]["coverage"] = {"elr-not-empty": 3, "elected-from-elr": 0}
    state["runs"][1]["coverage"] = {"isr-below-min-isr": 1}
    state["plan"] = [{"name": e.name, "args": list(e.args)} for e in DEFAULT_PLAN]
    soak = Soak(tmp_path, state)
    argv = soak.child_argv(planned_run(DEFAULT_PLAN, ("latest",), 1, 3), tmp_path / "m")
    assert argv[argv.index("--reached") + 1] == "isr-below-min-isr,elr-not-empty"


def test_the_known_bugs_plan_is_valid_and_with_the_default_reaches_every_kind(tmp_path):
    """plans/known-bugs.toml: run flags the run accepts; it and the default plan
    together ask for every fault kind and every scripted scenario."""
    from elr_harness.nemesis.faults import FAULT_KINDS
    from elr_harness.nemesis.registry import parse_nemesis
    from elr_harness.nemesis.scenarios import SCENARIOS

    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    plan = read_plan(Path(__file__).parents[2] / "plans" / "known-bugs.toml")
    validate_plan(plan, run_parser, tmp_path / "store")
    asked: set[str] = set()
    for entry in (*plan, *DEFAULT_PLAN):
        nemesis = entry.args[entry.args.index("--nemesis") + 1]
        if nemesis in SCENARIOS:
            asked.add(nemesis)
        else:
            asked |= set(parse_nemesis(nemesis).faults)
    assert (set(FAULT_KINDS) | set(SCENARIOS)) - asked == set()


@pytest.mark.parametrize(("text", "message"), [
    ("[[entry]]\nname = 'a'\nargs = ['--nemesis', 'bogus']\n", "plan entry 'a': "),
    ("[[entry]]\nname = 'a'\nargs = ['--time-limit', 'x']\n", "plan entry 'a': "),
    ("[[entry]]\nname = 'a'\nargs = ['--seed', '3']\n", "--seed is set by the soak"),
    ("[[entry]]\nname = 'a'\nargs = ['--kafka-version=4.1.1']\n", "--kafka-version is set"),
])
def test_a_bad_entry_is_refused_before_anything_runs(tmp_path, text, message):
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    with pytest.raises(BadInput, match=message):
        validate_plan(read_plan(plan), run_parser, tmp_path)


@pytest.mark.parametrize(("text", "message"), [
    ("not = [toml", "not TOML"),
    ("", "no \\[\\[entry\\]\\] tables"),
    ("[[entry]]\nargs = []\n", "`name` must be a short text"),
    ("[[entry]]\nname = 'a'\nargs = 'x'\n", "`args` must be a list of strings"),
    ("[[entry]]\nname = 'a'\n[[entry]]\nname = 'a'\n", "two entries are named 'a'"),
    ("[[entry]]\nname = 'a'\nnemesis = 'kill'\n", "unknown key 'nemesis'"),
    ("[soak]\n", "unknown key 'soak'"),
])
def test_a_bad_plan_file_is_one_line(tmp_path, text, message):
    plan = tmp_path / "plan.toml"
    plan.write_text(text)
    with pytest.raises(BadInput, match=message):
        read_plan(plan)


def _run_dir(tmp_path: Path, valid, error=None, interrupted=False) -> Path:
    run_dir = tmp_path / "store" / "t" / "20261125T000000"
    (run_dir / "nodes" / "broker-1").mkdir(parents=True)
    (run_dir / "nodes" / "broker-1" / "server.log").write_text("log")
    (run_dir / "history.jsonl").write_text("{}\n")
    (run_dir / "history.parquet").mkdir()
    (run_dir / "history.parquet" / "part-0.parquet").write_bytes(b"x" * 100)
    test = {"kafka_version": "4.4.0", "reproduce": "harness run --seed 3 --kafka-version 4.4.0"}
    if error:
        test["error"] = error
    test["interrupted"] = interrupted
    (run_dir / "test.json").write_text(json.dumps(test))
    if valid is not None:
        (run_dir / "report.html").write_text("<html>")
        (run_dir / "results.json").write_text(json.dumps({
            "valid": valid, "reason": "why",
            "anomalies": {"lost-write": {"count": 40, "bad": 0 if valid else 12,
                                         "by_acks": {"all": 0 if valid else 12, "1": 28}}}}))
    return run_dir


def _record(tmp_path, run_dir, exit_code, keep_policy="no-cache"):
    marker = tmp_path / "0000.run-dir"
    if run_dir is not None:
        marker.write_text(f"{run_dir}\n")
    log = tmp_path / "0000.log"
    log.write_text("· resolving\nharness: Docker engine is not running\n")
    planned = planned_run(DEFAULT_PLAN, ("latest",), 3, 0)
    return run_record(planned, exit_code, marker, log, 95.0, SoakConfig(keep=keep_policy))


def test_an_invalid_run_is_recorded_from_its_results_and_keeps_everything(tmp_path):
    run_dir = _run_dir(tmp_path, valid=False)
    record = _record(tmp_path, run_dir, 1)
    assert record["status"] == "invalid"
    assert record["bad_anomalies"] == {"lost-write": 12}
    assert record["lost_write_by_acks"] == {"all": 12, "1": 28}
    assert record["kafka_version"] == "4.4.0"
    assert record["reproduce"] == "harness run --seed 3 --kafka-version 4.4.0"
    assert record["kept"] == "all" and (run_dir / "history.parquet").is_dir()


def test_a_valid_run_drops_only_its_parquet_cache_by_default(tmp_path):
    run_dir = _run_dir(tmp_path, valid=True)
    record = _record(tmp_path, run_dir, 0)
    assert record["status"] == "valid" and record["bad_anomalies"] == {}
    assert not (run_dir / "history.parquet").exists()
    assert (run_dir / "history.jsonl").is_file() and (run_dir / "nodes").is_dir()
    assert record["disk_bytes"] == sum(
        p.stat().st_size for p in run_dir.rglob("*") if p.is_file())


def test_keep_failing_leaves_a_valid_run_its_verdict_and_report(tmp_path):
    run_dir = _run_dir(tmp_path, valid=True)
    assert keep(run_dir, "failing", "valid") == "test.json, results.json, report.html"
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "report.html", "results.json", "test.json"]
    invalid = _run_dir(tmp_path / "b", valid=False)
    assert keep(invalid, "failing", "invalid") == "all"
    assert (invalid / "history.parquet").is_dir()


def test_errors_and_interrupts_are_told_apart_from_verdicts(tmp_path):
    assert _record(tmp_path, None, 2)["error"] == "harness: Docker engine is not running"
    crashed = _record(tmp_path, _run_dir(tmp_path / "c", None, error="node died"), 2)
    assert (crashed["status"], crashed["error"]) == ("error", "node died")
    cut = _record(tmp_path, _run_dir(tmp_path / "d", None, interrupted=True), 2)
    assert cut["status"] == "interrupted"


def _state(statuses, stopped="duration used up"):
    runs = [{"index": i, "entry": "e", "seed": i, "kafka_version_requested": "latest",
             "kafka_version": "4.4.0", "status": s, "duration_s": 10.0,
             "reproduce": f"harness run --seed {i}", "log": "/x/runs/0000.log",
             "reason": "r", "error": "boom" if s == "error" else None,
             "bad_anomalies": {"lost-write": 2} if s == "invalid" else {},
             "lost_write_by_acks": {"all": 2 if s == "invalid" else 0}}
            for i, s in enumerate(statuses)]
    return {"soak_version": 1, "command": "harness soak", "started_at": "2026-11-25T10:00:00+00:00",
            "store": "/x", "cluster_name": "elr", "config": {
                **SoakConfig().__dict__, "kafka_versions": ["latest"]},
            "plan": [{"name": "e", "args": []}], "used_s": 10.0 * len(runs), "runs": runs,
            "abandoned": [], "current": None, "ended_at": "2026-11-25T11:00:00+00:00",
            "stopped_because": stopped}


@pytest.mark.parametrize(("statuses", "stopped", "code"), [
    (["valid", "valid"], "duration used up", 0),
    (["valid", "invalid", "error"], "duration used up", 1),
    (["valid", "unknown"], "duration used up", 2),
    (["valid", "error"], "duration used up", 2),
    (["valid"], "interrupted (Ctrl-C)", 2),
    ([], "duration used up", 2),
])
def test_the_exit_code_is_the_worst_verdict(tmp_path, statuses, stopped, code):
    assert Soak(tmp_path, _state(statuses, stopped)).exit_code() == code


def test_junit_xml_reads_back_with_one_case_per_run(tmp_path):
    state = _state(["valid", "invalid", "error", "unknown", "interrupted"])
    write_junit(state, tmp_path / "junit.xml")
    xml = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    [suite] = list(xml)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (5, 1, 2, 1)
    cases = list(suite)
    assert [c.classname for c in cases] == ["e"] * 5
    assert cases[0].name == "seed 0 kafka 4.4.0" and cases[0].is_passed
    [failure] = cases[1].result
    assert isinstance(failure, Failure) and failure.message == "2 lost-write"
    assert "harness run --seed 1" in failure.text
    assert isinstance(cases[2].result[0], Error) and cases[2].result[0].message == "boom"
    assert isinstance(cases[3].result[0], Skipped)
    assert isinstance(cases[4].result[0], Error)


def test_the_index_links_every_report_relative_to_the_soak(tmp_path):
    state = _state(["valid", "invalid"])
    for run in state["runs"]:
        run["report"] = str(tmp_path / "store" / "t" / f"run{run['index']}" / "report.html")
    page = render_soak_index(state, tmp_path / "store" / "soak" / "1")
    assert 'href="../../t/run0/report.html"' in page
    assert 'href="../../t/run1/report.html"' in page
    assert "INVALID" in page and "data:image/png;base64," in page


# -- the soak's own process: Ctrl-C and kill -9, with a child that is not Kafka --
# (the child stands in for `harness run` only to count the signals it gets;
# tests/integration/test_soak.py does the same with real runs)

_CHILD = """
import json, pathlib, signal, sys, time
said, marker, run_dir = map(pathlib.Path, sys.argv[1:4])
run_dir.mkdir(parents=True)
(run_dir / "test.json").write_text(json.dumps({"kafka_version": "4.4.0"}))
marker.write_text(str(run_dir))
def on_sigint(*_):
    with said.open("a") as f:
        f.write("SIGINT\\n")
    time.sleep(0.5)  # a run heals and tears down; a second SIGINT would show here
    (run_dir / "test.json").write_text(json.dumps({"interrupted": True}))
    sys.exit(2)
signal.signal(signal.SIGINT, on_sigint)
with said.open("a") as f:
    f.write("started\\n")
time.sleep(120)
"""

#: The soak without the CLI around it, so its child can stand in for a run. It
#: takes Ctrl-C as the CLI's main does (cli/main.py, _noting_interrupts): a suite
#: started in the background (scripts/test.sh's `&`) starts its processes with
#: SIGINT ignored, and a plain Python then never raises KeyboardInterrupt.
_DRIVER = """
import json, signal, sys
from pathlib import Path
from elr_harness.soak.runner import Soak
signal.signal(signal.SIGINT, signal.default_int_handler)
soak_dir = Path(sys.argv[1])
state = json.loads((soak_dir / "state.json").read_text())
class Stand(Soak):
    def child_argv(self, planned, marker):
        return [sys.executable, "-c", CHILD, str(soak_dir / "child.txt"), str(marker),
                str(soak_dir / "store" / "t" / f"run{planned.index}")]
    def _tear_down_leftovers(self):
        (soak_dir / "teardown.txt").write_text("called")
sys.exit(Stand(soak_dir, state).go())
"""


def _start_driver(tmp_path):
    state = _state([])
    del state["ended_at"], state["stopped_because"]
    state["store"] = str(tmp_path / "store")
    state["config"].update(duration_s=600.0, progress_every_s=1.0, interrupt_grace_s=30.0)
    (tmp_path / "store").mkdir()
    (tmp_path / "state.json").write_text(json.dumps(state))
    driver = subprocess.Popen(
        [sys.executable, "-c", f"CHILD = {_CHILD!r}\n{_DRIVER}", str(tmp_path)],
        start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    said = tmp_path / "child.txt"
    deadline = time.monotonic() + 60
    while not (said.is_file() and "started" in said.read_text()):
        assert time.monotonic() < deadline and driver.poll() is None, driver.stdout.read()
        time.sleep(0.1)
    return driver, said


def test_ctrl_c_reaches_the_run_once_and_the_summary_is_written(tmp_path):
    driver, said = _start_driver(tmp_path)
    os.killpg(driver.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole foreground group
    out, _ = driver.communicate(timeout=60)
    assert driver.returncode == 2, out
    assert said.read_text() == "started\nSIGINT\n", "one SIGINT, handed on by the soak"
    assert "interrupted: the run heals, collects and tears down first" in out, out
    soak = json.loads((tmp_path / "soak.json").read_text())
    assert soak["stopped_because"] == "interrupted (Ctrl-C)"
    [run] = soak["runs"]
    assert run["status"] == "interrupted" and run["run_dir"].endswith("run0")
    assert soak["current"] is None
    assert (tmp_path / "teardown.txt").is_file(), "the cluster of a cut run is removed"
    [suite] = list(JUnitXml.fromfile(str(tmp_path / "junit.xml")))
    assert (suite.tests, suite.errors) == (1, 1)


def test_a_run_gets_sigint_when_the_soak_is_killed(tmp_path):
    driver, said = _start_driver(tmp_path)
    state = json.loads((tmp_path / "soak.json").read_text())
    assert state["current"]["index"] == 0, "soak.json names the run in flight"
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=30)
    deadline = time.monotonic() + 30
    while "SIGINT" not in said.read_text():
        assert time.monotonic() < deadline, "the orphaned run was never told to stop"
        time.sleep(0.1)
    assert said.read_text() == "started\nSIGINT\n"


@pytest.mark.parametrize("plan_file", sorted((Path(__file__).parents[2] / "plans").glob(
    "*.toml")), ids=lambda p: p.name)
def test_every_shipped_plan_is_valid(tmp_path, plan_file):
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    plan = read_plan(plan_file)
    assert plan
    validate_plan(plan, run_parser, tmp_path / "store")


def test_a_soak_on_real_hosts_hands_its_nodes_file_to_every_run(tmp_path):
    planned = planned_run(DEFAULT_PLAN, ("4.4.0",), 1, 0)
    args = planned.run_args(tmp_path / "store", "elr", tmp_path / "hosts.yaml")
    assert args[-2:] == ["--nodes-file", str(tmp_path / "hosts.yaml")]
    assert "--nodes-file" not in planned.run_args(tmp_path / "store", "elr")
    with pytest.raises(BadInput, match="--nodes-file is set by the soak"):
        run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
        validate_plan((PlanEntry("x", ("--nodes-file", "h.yaml")),), run_parser, tmp_path)


# -- the soak's own checker: runs record with --no-check, the soak checks them --


def test_a_soak_run_records_only_and_the_soak_checks_it(tmp_path):
    planned = planned_run(DEFAULT_PLAN, ("4.4.0",), 1, 0)
    argv = Soak(tmp_path, _state([])).child_argv(planned, tmp_path / "runs" / "0000.run-dir")
    assert argv[argv.index("run"):][:3] == ["run", "--nemesis", "unclean-last-replica"]
    assert "--no-check" in argv and argv[-2:] == ["--record-run-dir",
                                                 str(tmp_path / "runs" / "0000.run-dir")]


def _recorded_run(tmp_path: Path, index: int = 0) -> dict:
    """A soak dir whose soak.json names run `index` as recorded, not checked."""
    store = tmp_path / "store"
    run_dir = store / "t" / f"run{index}"
    run_dir.mkdir(parents=True)
    (run_dir / "history.jsonl").write_text("{}\n")
    (run_dir / "test.json").write_text(json.dumps(
        {"kafka_version": "4.4.0", "ended_at": "2026-11-25T10:01:00+00:00",
         "interrupted": False, "reproduce": "harness run --seed 3"}))
    (tmp_path / "runs").mkdir()
    marker = tmp_path / "runs" / f"{index:04d}.run-dir"
    marker.write_text(f"{run_dir}\n")
    (tmp_path / "runs" / f"{index:04d}.log").write_text("recorded\n")
    state = _state(["valid"] * index)
    del state["ended_at"], state["stopped_because"]
    state["store"] = str(store)
    state["config"].update(duration_s=1.0)  # no further run fits: nothing is started
    state["unchecked"] = {"index": index, "marker": str(marker), "run_dir": str(run_dir),
                          "log": str(tmp_path / "runs" / f"{index:04d}.log"),
                          "record_s": 80.0}
    (tmp_path / "soak.json").write_text(json.dumps(state))
    return state


class _FakeChecker:
    """Stands in for the Spark checker (tests/unit/test_soak.py's real one is below):
    writes a verdict and notes what soak.json said while it checked."""

    def __init__(self, soak_dir: Path, valid=True, interrupt=False):
        self.soak_dir, self.valid, self.interrupt = soak_dir, valid, interrupt
        self.checked, self.closed, self.state_seen = [], 0, []

    def check(self, run_dir, log_path, spark_master):
        self.state_seen.append(json.loads((self.soak_dir / "soak.json").read_text()))
        if self.interrupt:
            raise KeyboardInterrupt
        self.checked.append((run_dir, log_path, spark_master))
        (run_dir / "results.json").write_text(json.dumps(
            {"valid": self.valid, "reason": "r", "anomalies": {}}))
        (run_dir / "report.html").write_text("<html>")
        return 0 if self.valid else 1

    def close(self):
        self.closed += 1


@pytest.mark.parametrize("ended", [False, True], ids=["killed", "ctrl-c"])
def test_resume_checks_a_run_recorded_but_not_checked(tmp_path, monkeypatch, ended):
    import elr_harness.soak.runner as soak_module

    state = _recorded_run(tmp_path, index=1)
    if ended:  # a Ctrl-C during its check ended the soak
        state.update(ended_at="2026-11-25T11:00:00+00:00",
                     stopped_because="interrupted (Ctrl-C)")
        (tmp_path / "soak.json").write_text(json.dumps(state))
    fake = _FakeChecker(tmp_path, valid=False)
    monkeypatch.setattr(soak_module, "SoakChecker", lambda: fake)
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    assert soak_module.resume(tmp_path, run_parser) == 1
    [(run_dir, log_path, master)] = fake.checked
    assert run_dir == tmp_path / "store" / "t" / "run1"
    assert log_path == tmp_path / "runs" / "0001.log" and master is None
    saved = json.loads((tmp_path / "soak.json").read_text())
    assert saved["unchecked"] is None and fake.closed == 1
    assert [r["status"] for r in saved["runs"]] == ["valid", "invalid"]
    assert saved["runs"][1]["index"] == 1 and saved["runs"][1]["exit_code"] == 1
    assert saved["runs"][1]["duration_s"] >= 80.0, "recording time counts"
    assert saved["runs"][1]["report"] == str(run_dir / "report.html")
    if not ended:
        assert saved["stopped_because"].startswith("duration used up")


def test_ctrl_c_during_a_check_keeps_the_run_unchecked_and_saves_the_soak(tmp_path,
                                                                           monkeypatch):
    import elr_harness.soak.runner as soak_module

    state = _recorded_run(tmp_path)
    fake = _FakeChecker(tmp_path, interrupt=True)
    monkeypatch.setattr(soak_module, "SoakChecker", lambda: fake)
    assert Soak(tmp_path, state).go() == 2
    [seen] = fake.state_seen
    assert seen["unchecked"]["index"] == 0 and seen["current"] is None, \
        "soak.json said 'recorded, not checked' before the check began (kill -9 safe)"
    saved = json.loads((tmp_path / "soak.json").read_text())
    assert saved["stopped_because"] == "interrupted (Ctrl-C)" and saved["runs"] == []
    assert saved["unchecked"]["index"] == 0, "--resume checks it"
    assert fake.closed == 1


def test_soak_json_with_a_bad_unchecked_run_is_damaged(tmp_path):
    from elr_harness.soak.state import Damaged, check_state

    state = _recorded_run(tmp_path)
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    check_state(state, run_parser)
    state["unchecked"]["index"] = 5  # not the next run
    with pytest.raises(Damaged, match="unchecked.index"):
        check_state(state, run_parser)
    state["unchecked"]["index"] = 0
    state["current"] = {"index": 0, "pid": 1234, "marker": "m"}
    with pytest.raises(Damaged, match="both set"):
        check_state(state, run_parser)


_RECORDING_CHILD = """
import json, pathlib, sys
from synthetic import SyntheticSpec, write_run_dir
marker, run_dir = pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
index = int(sys.argv[4])
write_run_dir(run_dir, SyntheticSpec(lines=3000, seed=index))
test = json.loads((run_dir / "test.json").read_text())
test.update(ended_at="2026-11-25T10:01:00+00:00", interrupted=False)
(run_dir / "test.json").write_text(json.dumps(test))
marker.write_text(str(run_dir))
sys.exit(2)  # what `harness run --no-check` exits with
"""

_CHECKING_DRIVER = """
import json, sys
from pathlib import Path
from elr_harness.soak.runner import Soak
soak_dir = Path(sys.argv[1])
state = json.loads((soak_dir / "state.json").read_text())
class Stand(Soak):
    def child_argv(self, planned, marker):
        real = super().child_argv(planned, marker)
        with (soak_dir / "argv.txt").open("a") as f:
            f.write(json.dumps(real) + "\\n")
        return [sys.executable, "-c", CHILD, "", str(marker),
                str(soak_dir / "store" / "t" / f"run{planned.index}"), str(planned.index)]
    def _why_stop(self):
        return "three runs" if len(self.state["runs"]) == 3 else None
sys.exit(Stand(soak_dir, state).go())
"""


def test_one_spark_session_checks_every_run_of_the_soak(tmp_path):
    """Three recorded runs, checked by the soak with the real checker: each ends
    with results.json and report.html, and every check names the same Spark
    application (one JVM start for the soak, not one per run)."""
    state = _state([])
    del state["ended_at"], state["stopped_because"]
    state["store"] = str(tmp_path / "store")
    (tmp_path / "store").mkdir()
    (tmp_path / "state.json").write_text(json.dumps(state))
    tests_dir = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tests_dir.parent), str(tests_dir), os.environ.get("PYTHONPATH", "")])}
    driver = subprocess.run(
        [sys.executable, "-c", f"CHILD = {_RECORDING_CHILD!r}\n{_CHECKING_DRIVER}",
         str(tmp_path)], cwd=tests_dir.parent, env=env, capture_output=True, text=True,
        timeout=900)
    assert driver.returncode == 0, driver.stdout[-3000:] + driver.stderr[-3000:]
    assert "WARNING" not in driver.stdout + driver.stderr, "the JVM's notices stay in its log"
    argvs = [json.loads(line) for line in (tmp_path / "argv.txt").read_text().splitlines()]
    assert len(argvs) == 3 and all("--no-check" in argv for argv in argvs)
    soak = json.loads((tmp_path / "soak.json").read_text())
    assert [r["status"] for r in soak["runs"]] == ["valid"] * 3, soak["runs"]
    assert soak["unchecked"] is None and soak["current"] is None
    applications = []
    for run in soak["runs"]:
        run_dir = Path(run["run_dir"])
        results = json.loads((run_dir / "results.json").read_text())
        assert results["valid"] is True and run["report"] == str(run_dir / "report.html")
        assert (run_dir / "report.html").read_text().startswith("<!DOCTYPE html>")
        log = Path(run["log"]).read_text()
        [line] = [line for line in log.splitlines() if "Spark application" in line]
        applications.append(line.split("Spark application ")[1].split()[0])
        assert f"(check {run['index'] + 1} of this soak's checker, 1 session(s) started)" \
            in log, log
    assert len(set(applications)) == 1, applications


def test_a_whole_run_cut_by_ctrl_c_before_its_check_is_left_for_resume(tmp_path, monkeypatch):
    import elr_harness.soak.runner as soak_module

    state = _recorded_run(tmp_path)
    pending = state.pop("unchecked")
    state["unchecked"] = None
    fake = _FakeChecker(tmp_path)
    monkeypatch.setattr(soak_module, "SoakChecker", lambda: fake)
    soak = Soak(tmp_path, state)
    planned = planned_run(soak.plan, ("latest",), 3, 0)
    soak._recorded(planned, 2, Path(pending["marker"]), Path(pending["log"]), 12.0,
                   check=False)
    saved = json.loads((tmp_path / "soak.json").read_text())
    assert saved["unchecked"]["run_dir"] == pending["run_dir"] and saved["runs"] == []
    assert fake.checked == [] and fake.state_seen == []


def test_a_soak_on_its_own_subnet_hands_it_to_every_run_and_checks_it_on_resume(tmp_path):
    state = _state(["valid"])
    state["subnet"] = "10.213.122.0/24"
    argv = Soak(tmp_path, state).child_argv(planned_run(DEFAULT_PLAN, ("latest",), 1, 0),
                                            tmp_path / "m")
    assert argv[argv.index("--subnet") + 1] == "10.213.122.0/24"
    from elr_harness.soak.state import Damaged, check_state

    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    state["subnet"] = "10.213.122.0/33"
    with pytest.raises(Damaged, match="subnet"):
        check_state(state, run_parser)


def test_max_runs_stops_the_soak_once_that_many_runs_are_done(tmp_path):
    state = _state(["valid"])
    state["store"] = str(tmp_path)
    state["config"].update(duration_s=86400.0, max_runs=2)
    soak = Soak(tmp_path, state)
    assert soak._why_stop() is None, "one run done, a day left: the second starts"
    state["runs"].append({**state["runs"][0], "index": 1})
    assert soak._why_stop() == "2 runs done (--max-runs 2)"
    state["config"]["max_runs"] = None
    assert Soak(tmp_path, state)._why_stop() is None, "no bound: only the duration stops it"


@pytest.mark.parametrize(("done", "started"), [(1, 1), (2, 0)])
def test_a_resumed_soak_keeps_its_max_runs(tmp_path, monkeypatch, done, started):
    """soak.json keeps --max-runs: a soak killed after `done` of its 2 runs starts
    only what is left when resumed, however much of its duration is left."""
    import elr_harness.soak.runner as soak_module

    state = _state(["valid"] * done)
    del state["ended_at"], state["stopped_because"]
    state["store"] = str(tmp_path / "store")
    (tmp_path / "store").mkdir()
    state["config"].update(duration_s=86400.0, max_runs=2)
    (tmp_path / "soak.json").write_text(json.dumps(state))
    begun = []

    def one_run(self, planned):
        begun.append(planned.index)
        self.state["runs"].append({**self.state["runs"][0], "index": planned.index})

    monkeypatch.setattr(soak_module.Soak, "_one_run", one_run)
    monkeypatch.setattr(soak_module, "SoakChecker", lambda: _FakeChecker(tmp_path))
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    assert soak_module.resume(tmp_path, run_parser) == 0
    assert begun == list(range(done, done + started))
    saved = json.loads((tmp_path / "soak.json").read_text())
    assert len(saved["runs"]) == 2 and saved["stopped_because"] == "2 runs done (--max-runs 2)"


def test_max_runs_is_a_count_from_one(tmp_path):
    parser = build_parser()
    assert parser.parse_args(["soak", "--max-runs", "2"]).max_runs == 2
    assert parser.parse_args(["soak"]).max_runs is None
    for bad in ("0", "-1", "2.5", "x", "10000000"):
        with pytest.raises(SystemExit) as stop:
            parser.parse_args(["soak", "--max-runs", bad])
        assert stop.value.code == 2
    from elr_harness.soak.state import Damaged, check_state

    run_parser = parser._subparsers._group_actions[0].choices["run"]
    state = _state(["valid"])
    for good in (None, 1, 3):
        state["config"]["max_runs"] = good
        check_state(state, run_parser)
    for bad in (0, "2", 2.5, True):
        state["config"]["max_runs"] = bad
        with pytest.raises(Damaged, match="config.max_runs"):
            check_state(state, run_parser)
