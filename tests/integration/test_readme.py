"""The README's commands, exactly as a new user types them: from a fresh working
directory, with the default relative store, then `harness check store/latest`.

The blind checker got past every other test because they all passed an absolute
`--store`; this one never does. It is also the scenario test of
../shared/SCENARIOS.md (unclean-last-replica, ELR on and off).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from checker_agreement import assert_reference_agrees

pytestmark = pytest.mark.integration

#: The console script of the environment the tests run in (setup.sh links it
#: into /usr/local/bin as the README's `harness`).
HARNESS = str(Path(sys.executable).with_name("harness"))


def _harness(cwd: Path, *args: str, timeout_s: float = 1200) -> subprocess.CompletedProcess:
    return subprocess.run([HARNESS, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout_s)


def _without_timings(results: dict) -> dict:
    results = json.loads(json.dumps(results))
    results["stats"].pop("checker_seconds", None)
    return results


@pytest.mark.parametrize("elr", ["on", "off"])
def test_readme_scenario_from_a_fresh_directory(tmp_path, capsys, elr):
    command = ["run", "--nemesis", "unclean-last-replica"] + (["--elr", "off"]
                                                               if elr == "off" else [])
    proc = _harness(tmp_path, *command)
    latest = tmp_path / "store" / "latest"
    assert latest.is_symlink(), proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = latest.resolve()
    test = json.loads((run_dir / "test.json").read_text())
    assert (run_dir / "results.json").exists(), (
        f"no verdict; error: {test.get('error')}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    results = json.loads((run_dir / "results.json").read_text())
    lost = results["anomalies"].get("lost-write", {}).get("by_acks",
                                                          {"all": 0, "1": 0, "0": 0})
    with capsys.disabled():
        print(f"\n[README, ELR {elr}] exit {proc.returncode}, valid={results['valid']}, "
              f"lost-write by acks: {lost}, checked: {results['checked']}")

    # the checker read the history it judged
    assert results["checked"]["sends"] > 1000
    assert results["checked"]["final_records"] > 0
    assert results["checked"]["observations"] > 0
    steps = test["nemesis_result"]["steps"]
    assert [s["step"] for s in steps] == ["setup", "T0", "T1", "T2", "T3", "T4"]
    assert all(s["reached"] for s in steps), steps
    history = [json.loads(line) for line in (run_dir / "history.jsonl").open()]
    assert any(e["f"] == "fault" and e["fault"] == "page-cache-loss" and e["type"] == "ok"
               and e["detail"]["total_bytes_dropped"] > 0 for e in history)
    setup = next(s for s in steps if s["step"] == "setup")["observed"]
    t4 = next(s for s in steps if s["step"] == "T4")["observed"]
    if elr == "on":
        assert proc.returncode == 0, results["reason"]
        assert results["valid"] is True and lost["all"] == 0
        b = next(s for s in steps if s["step"] == "T1")["observed"]["elr"]
        assert b, "B must be in the ELR after T1"
        assert t4["leader"] == b[0], "B is elected from the ELR"
    else:
        assert proc.returncode == 1, results["reason"]
        assert results["valid"] is False and lost["all"] > 0
        assert "lost-write" in results["bad_anomaly_types"]
        assert t4["leader"] == setup["leader"], "L, the last ISR member, is elected again"

    # the reference checker, written straight from HISTORY.md, agrees on real Kafka's history
    assert_reference_agrees(run_dir)

    # `harness check store/latest`, from the same directory: the same results
    recheck = _harness(tmp_path, "check", "store/latest")
    assert recheck.returncode == proc.returncode, recheck.stdout + recheck.stderr
    rechecked = json.loads((run_dir / "results.json").read_text())
    assert _without_timings(rechecked) == _without_timings(results)
    assert "checked" in recheck.stdout and "Traceback" not in recheck.stderr

    # every phase timed, on the history's clock, one after the other
    phases = test["phases"]
    assert [p["name"] for p in phases] == ["setup", "workload + nemesis", "heal",
                                           "final reads", "collect", "teardown"]
    for before, after in zip(phases, phases[1:], strict=False):
        # each figure is rounded to the millisecond on its own
        assert before["start_s"] + before["duration_s"] <= after["start_s"] + 0.002, phases
    assert phases[1]["start_s"] > 1.0, "the cluster's set-up comes before any operation"

    # `harness report store/latest`, as the README says: the bar and the plots
    report = _harness(tmp_path, "report", "store/latest")
    assert report.returncode == 0, report.stdout + report.stderr
    page = (run_dir / "report.html").read_text()
    assert '<div class="phases">' in page and "older than the history" not in page
    assert page.count('<img class="plot"') >= 4
