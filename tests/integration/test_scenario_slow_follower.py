"""slow-follower on real Kafka (the newest release), ELR on: ../shared/SCENARIOS.md,
"slow-follower" (KAFKA-19996's path).

One run: exit 0 (valid, no acks=all lost-write, no elr-invariant); the history's
own observations show A out of the ISR with only its links slowed (no partition
yet), then the ISR below min ISR while B was cut off, then the ISR whole after
the heal. The ISR changes below min ISR are counted in the test's output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from checker_agreement import assert_reference_agrees

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "store"
NAME = "slow-follower"


def _fault_index(history: list[dict], step: str, fault: str, typ: str) -> int:
    return next(e["index"] for e in history if e["f"] == "fault" and e["type"] == typ
                and e["fault"] == fault and e.get("detail", {}).get("step") == step)


def test_a_slow_follower_below_min_isr_loses_nothing(capsys):
    runs = STORE / NAME
    before = set(runs.iterdir()) if runs.exists() else set()
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--nemesis", NAME, "--seed", "1",
         "--store", str(STORE)], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    added = sorted(set(runs.iterdir()) - before) if runs.exists() else []
    assert len(added) == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = added[0]
    test = json.loads((run_dir / "test.json").read_text())
    assert (run_dir / "results.json").exists(), (
        f"no verdict; error: {test.get('error')}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    results = json.loads((run_dir / "results.json").read_text())
    lost = results["anomalies"].get("lost-write", {}).get("by_acks", {"all": 0})
    steps = {s["step"]: s for s in test["nemesis_result"]["steps"]}
    history = [json.loads(line) for line in (run_dir / "history.jsonl").open()]
    topic = next(iter(test["topics"]))
    observe = [e for e in history if e["f"] == "observe" and e["topic"] == topic
               and e["partition"] == 0 and "source" not in e]
    slowed = _fault_index(history, "T0", "slow-network", "ok")
    cut = _fault_index(history, "T1", "partition", "invoke")
    healed = _fault_index(history, "T2", "heal", "ok")
    below = [e for e in observe if cut < e["index"] < healed and len(e["isr"]) < 2]
    changes = sum(1 for x, y in zip(below, below[1:], strict=False)
                  if sorted(x["isr"]) != sorted(y["isr"]))
    with capsys.disabled():
        print(f"\n[{NAME}, ELR on] {run_dir.name}: exit {proc.returncode}, valid="
              f"{results['valid']}, lost-write by acks: {lost}, {len(below)} observations "
              f"below min ISR, {changes} ISR changes among them")

    assert list(steps) == ["setup", "T0", "T1", "T2"], steps
    assert all(s["reached"] for s in steps.values()), steps
    assert proc.returncode == 0, results["reason"]
    assert results["valid"] is True and lost["all"] == 0
    assert "elr-invariant" not in results["anomalies"], results["anomalies"]
    leader = steps["setup"]["observed"]["leader"]
    a = next(b for b in steps["setup"]["observed"]["isr"]
             if b != leader and b not in steps["T0"]["observed"]["isr"])
    # A left the ISR with only its links slowed, before any partition
    assert [e for e in observe if slowed < e["index"] < cut and a not in e["isr"]]
    assert below, "the ISR was below min ISR while B was cut off"
    assert sorted(steps["T2"]["observed"]["isr"]) == sorted(
        steps["setup"]["observed"]["isr"]), "the ISR is whole after the heal"
    assert_reference_agrees(run_dir)
