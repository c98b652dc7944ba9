"""`harness soak` on real Kafka: a soak whose own process is killed with SIGKILL
mid-run and then resumed repeats no finished run, and its soak.json, junit.xml
and index.html agree with each run's results.json.

One soak covers both (a second, uninterrupted soak cost CI 5 more minutes and
checked nothing this one does not). Its plan is a short fault-free run with ELR
on, whose verdict is known (valid), so the exit code is asserted exactly.

The soak is bounded by `--max-runs 2`, not by its duration: it is killed during
its second run, and the resumed soak runs that slot again and stops, two runs
done (soak.json keeps the bound). Bounded by a duration instead, the resumed
soak ran until 600 s were used (552 s of CI); the duration here is a day, so
only the count can stop it. How a duration stops a soak is tests/unit/test_soak.py's.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest
from junitparser import JUnitXml
from scenario_runs import MECHANICS_RATE

pytestmark = pytest.mark.integration

HARNESS = str(Path(sys.executable).with_name("harness"))
#: The soak's bound (see the module's docstring).
MAX_RUNS = 2
#: its own cluster, so that it runs beside the other integration tests' (scripts/test.sh)
CLUSTER, SUBNET = "it-soak", "10.213.157.0/24"
PLAN = ('[[entry]]\nname = "no-faults"\n'
        f'args = ["--nemesis", "none", "--time-limit", "30", "--rate", "{MECHANICS_RATE}"]\n')


def _soak_dir(store: Path) -> Path:
    [soak_dir] = list((store / "soak").iterdir())
    return soak_dir


def _no_container_left() -> None:
    client = docker.from_env()
    try:
        left = client.containers.list(all=True, filters={"label": f"elr-harness.cluster={CLUSTER}"})
        assert left == [], [c.name for c in left]
    finally:
        client.close()


def _assert_summary_agrees(soak_dir: Path, exit_code: int) -> dict:
    soak = json.loads((soak_dir / "soak.json").read_text())
    runs = soak["runs"]
    assert [r["index"] for r in runs] == list(range(len(runs)))
    assert [r["seed"] for r in runs] == [7 + r["index"] for r in runs]
    assert soak["ended_at"] and soak["stopped_because"] == f"{MAX_RUNS} runs done " \
        f"(--max-runs {MAX_RUNS})"
    assert len(runs) == MAX_RUNS
    assert exit_code == 0, soak["stopped_because"]
    assert soak["unchecked"] is None, "every recorded run was checked"
    for run in runs:
        # the run recorded with --no-check; the soak's one Spark session checked it
        # and wrote what the run's own check would have
        log = Path(run["log"]).read_text()
        assert "── check (in the soak's Spark session)" in log
        assert "1 session(s) started)" in log, "one JVM start per soak process"
        assert (Path(run["run_dir"]) / "report.html").is_file()
        results = json.loads((Path(run["run_dir"]) / "results.json").read_text())
        assert run["status"] == "valid" and results["valid"] is True
        assert run["lost_write_by_acks"] == results["anomalies"].get(
            "lost-write", {}).get("by_acks", {})
        assert run["lost_write_by_acks"].get("all", 0) == 0
        assert not (Path(run["run_dir"]) / "history.parquet").exists(), "--keep no-cache"
        assert f"--seed {run['seed']}" in run["reproduce"]
        assert "--no-check" not in run["reproduce"].split(), "repeated, it gives a verdict"

    [suite] = list(JUnitXml.fromfile(str(soak_dir / "junit.xml")))
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (len(runs), 0, 0, 0)
    assert [c.name for c in suite] == [
        f"seed {r['seed']} kafka {r['kafka_version']}" for r in runs]

    index = (soak_dir / "index.html").read_text()
    links = re.findall(r'href="([^"]+/report\.html)"', index)
    assert len(links) == len(runs)
    for link in links:
        assert (soak_dir / link).resolve().is_file(), link
    _no_container_left()
    return soak


def test_a_killed_soak_resumes_without_repeating_a_finished_run(tmp_path, capsys):
    (tmp_path / "plan.toml").write_text(PLAN)
    soak_log = tmp_path / "soak.log"
    with soak_log.open("wb") as out:
        soak_proc = subprocess.Popen(
            [HARNESS, "soak", "--duration", "1d", "--max-runs", str(MAX_RUNS),
             "--plan", "plan.toml", "--seed", "7", "--name", CLUSTER, "--subnet", SUBNET],
            cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT)
    try:
        # mid-run: the cluster up and the producers going for 5 s (the first lines
        # are the observer's)
        state_file, state = _second_run_recording(tmp_path, soak_proc, soak_log)
        child = state["current"]["pid"]
        soak_proc.send_signal(signal.SIGKILL)
        soak_proc.wait(timeout=30)
    finally:
        if soak_proc.poll() is None:
            soak_proc.kill()
    first = state["runs"][0]

    resumed = subprocess.run([HARNESS, "soak", "--resume", str(state_file.parent)],
                             cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert not _alive(child), "the abandoned run's process is gone"
    soak = _assert_summary_agrees(state_file.parent, resumed.returncode)
    assert soak["runs"][0] == first, "the finished run is kept as it was, not repeated"
    [abandoned] = soak["abandoned"]
    assert abandoned["index"] == 1 and abandoned["run_dir"]
    cut = json.loads((Path(abandoned["run_dir"]) / "test.json").read_text())
    assert cut["interrupted"] is True, "the killed soak's run says it was interrupted"
    run_dirs = [r["run_dir"] for r in soak["runs"]]
    assert abandoned["run_dir"] not in run_dirs and len(set(run_dirs)) == len(run_dirs)
    with capsys.disabled():
        print(f"\n[soak of {MAX_RUNS} runs, killed and resumed] {len(soak['runs'])} runs, "
              f"{soak['used_s']:.0f} s used: {[r['status'] for r in soak['runs']]}; "
              f"the abandoned run: {abandoned.get('note', 'ended by itself')}, "
              f"{cut.get('duration_s')} s, phases {[p['name'] for p in cut.get('phases', [])]}")


def _second_run_recording(tmp_path: Path, soak_proc: subprocess.Popen,
                           soak_log: Path) -> tuple[Path, dict]:
    """soak.json and its state once the soak's second run records its history."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        time.sleep(1)
        if soak_proc.poll() is not None:
            pytest.fail(f"the soak ended (exit {soak_proc.returncode}) before its second "
                        f"run recorded anything:\n{soak_log.read_text()[-3000:]}")
        found = list((tmp_path / "store" / "soak").glob("*/soak.json"))
        if not found:
            continue
        state = json.loads(found[0].read_text())
        if len(state["runs"]) != 1 or not state["current"]:
            continue
        marker = Path(state["current"]["marker"])
        run_dir = Path(marker.read_text().strip()) if marker.is_file() else None
        history = run_dir / "history.jsonl" if run_dir else None
        if history is not None and history.is_file() and _producing_for(history, 5.0):
            return found[0], state
    pytest.fail(f"the soak's second run recorded nothing in 600 s:\n"
                f"{soak_log.read_text()[-3000:]}")


def _producing_for(history: Path, seconds: float) -> bool:
    """The history holds an `ok` send recorded `seconds` after its first line."""
    first = None
    with history.open() as lines:
        for line in lines:
            try:
                op = json.loads(line)
            except ValueError:
                return False  # the line being written
            first = op["time"] if first is None else first
            if op.get("f") == "send" and op.get("type") == "ok" and \
                    op["time"] - first >= seconds * 1e9:
                return True
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
