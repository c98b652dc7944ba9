"""A real Kafka bug, found on the release before its fix and gone after it.

KAFKA-19522: with ISR and ELR empty, 4.0.x's controller elects the last known
leader even while it is fenced (a missing negation in canElectLastKnownLeader;
4.0.0 and 4.0.2 both carry it, fixed in 4.1.0). fenced-last-leader freezes that
leader right after it registers; the observer's `fenced` field shows it fenced
while it leads, and the checker says fenced-leader.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from checker_agreement import assert_reference_agrees

pytestmark = pytest.mark.integration

HARNESS = str(Path(sys.executable).with_name("harness"))


@pytest.mark.parametrize(("version", "exit_code"), [("4.0.2", 1), ("4.1.1", 0)])
def test_fenced_last_leader_before_and_after_the_fix(tmp_path, capsys, version, exit_code):
    proc = subprocess.run([HARNESS, "run", "--nemesis", "fenced-last-leader",
                           "--kafka-version", version, "--name", "it-fenced",
                           "--subnet", "10.213.156.0/24"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=1200)
    run_dir = (tmp_path / "store" / "latest").resolve()
    test = json.loads((run_dir / "test.json").read_text())
    assert (run_dir / "results.json").is_file(), proc.stdout[-3000:] + proc.stderr[-2000:]
    results = json.loads((run_dir / "results.json").read_text())
    fenced_leader = results["anomalies"].get("fenced-leader", {})
    steps = {s["step"]: s for s in test["nemesis_result"]["steps"]}
    with capsys.disabled():
        print(f"\n[fenced-last-leader {version}] exit {proc.returncode}, "
              f"fenced-leader {fenced_leader.get('count', 0)}, F4 {steps.get('F4')}")

    assert test["topics"]["elr-test"]["min_insync_replicas"] == 1
    assert sorted(n for n in test["nodes"] if n.startswith("broker")) == [
        "broker-1", "broker-2", "broker-3", "broker-4"]
    assert all(steps[s]["reached"] for s in ("setup", "F0", "F1", "F2", "F3")), steps
    observed_fenced = [line for line in map(json.loads, (run_dir / "history.jsonl").open())
                       if line["f"] == "observe" and line.get("fenced")]
    assert observed_fenced, "the observer saw fenced brokers"
    assert proc.returncode == exit_code, results["reason"]
    assert_reference_agrees(run_dir)  # the reference checker reads the same verdict
    if exit_code == 1:
        assert results["bad_anomaly_types"] == ["fenced-leader"], results["reason"]
        assert fenced_leader["bad"] > 0 and steps["F4"]["reached"]
    else:
        assert results["valid"] is True and "fenced-leader" not in results["anomalies"]
        assert not steps["F4"]["reached"], "4.1+ elects no fenced leader"
        # L, paused, is fenced by the end of the hold: the fixed controller had the
        # bug's case in front of it (even if the SIGSTOP landed after an unfencing)
        assert steps["F4"]["observed"]["leader"] == -1, steps["F4"]
