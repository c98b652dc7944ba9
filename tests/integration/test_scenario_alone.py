"""unclean-last-replica-alone on real Kafka (the newest release), ELR on and off:
../shared/SCENARIOS.md, "unclean-last-replica, L first".

One run each. ELR on: exit 0 (valid, no acks=all lost-write), and the history's
own observations, while B was still cut off after L's unclean restart, show the
partition leaderless with L unfenced and out of the ELR (the controller's view
agrees). ELR off: exit 1, acks=all lost-write > 0, L elected while B was away.
The runs' store is the worktree's own store/ (never a temporary folder elsewhere).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from checker_agreement import assert_reference_agrees
from scenario_runs import own_network

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "store"
NAME = "unclean-last-replica-alone"


def _run(elr: str) -> tuple[subprocess.CompletedProcess, Path]:
    """One `harness run` of the scenario; its run folder (the one it added)."""
    runs = STORE / NAME
    before = set(runs.iterdir()) if runs.exists() else set()
    proc = subprocess.run(
        [sys.executable, "-m", "elr_harness.cli", "run", "--nemesis", NAME, "--seed", "1",
         "--elr", elr, "--store", str(STORE), *own_network(NAME)],
        cwd=ROOT, capture_output=True, text=True, timeout=1200)
    added = sorted(set(runs.iterdir()) - before) if runs.exists() else []
    assert len(added) == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, added[0]


def _while_b_away(history: list[dict], topic: str) -> list[dict]:
    """The observer's lines of partition 0 from L's restart (T3) to the heal (T4)."""
    start = next(e["index"] for e in history if e["f"] == "fault" and e["type"] == "ok"
                 and e["fault"] == "start" and e.get("detail", {}).get("step") == "T3")
    heal = next(e["index"] for e in history if e["f"] == "fault" and e["type"] == "invoke"
                and e["fault"] == "heal" and e.get("detail", {}).get("step") == "T4")
    return [e for e in history[start:heal] if e["f"] == "observe" and e["topic"] == topic
            and e["partition"] == 0 and "source" not in e]


@pytest.mark.parametrize("elr", ["on", "off"])
def test_l_restarted_while_b_is_away(elr, capsys):
    proc, run_dir = _run(elr)
    test = json.loads((run_dir / "test.json").read_text())
    assert (run_dir / "results.json").exists(), (
        f"no verdict; error: {test.get('error')}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    results = json.loads((run_dir / "results.json").read_text())
    lost = results["anomalies"].get("lost-write", {}).get("by_acks", {"all": 0})
    steps = {s["step"]: s for s in test["nemesis_result"]["steps"]}
    history = [json.loads(line) for line in (run_dir / "history.jsonl").open()]
    observed = _while_b_away(history, next(iter(test["topics"])))
    leader = steps["setup"]["observed"]["leader"]
    with capsys.disabled():
        print(f"\n[{NAME}, ELR {elr}] {run_dir.name}: exit {proc.returncode}, "
              f"valid={results['valid']}, lost-write by acks: {lost}, "
              f"{len(observed)} observations while B was away, leaders "
              f"{sorted({e['leader'] for e in observed})}")

    assert list(steps) == ["setup", "T0", "T1", "T2", "T3", "T3-hold", "T3-controller", "T4"]
    assert all(s["reached"] for s in steps.values()), steps
    assert observed, "no observation while B was away after L restarted"
    if elr == "on":
        assert proc.returncode == 0, results["reason"]
        assert results["valid"] is True and lost["all"] == 0
        (b,) = steps["T1"]["observed"]["elr"]
        # never a leader while B was away, and L never eligible after its restart
        assert {e["leader"] for e in observed} == {-1}, observed
        assert not [e for e in observed if leader in e["isr"] or leader in (e["elr"] or [])]
        # ...also once L was unfenced and B was not: the moment KIP-966 must refuse L
        assert [e for e in observed if "fenced" in e and leader not in e["fenced"]
                and b in e["fenced"] and e["elr"] == [b]]
        controller = steps["T3-controller"]["observed"]
        assert (controller["leader"], controller["isr"], controller["elr"]) == (-1, [], [b])
        assert steps["T4"]["observed"]["leader"] == b, "B, back, is elected from the ELR"
    else:
        assert proc.returncode == 1, results["reason"]
        assert results["valid"] is False and lost["all"] > 0
        assert "lost-write" in results["bad_anomaly_types"]
        assert leader in {e["leader"] for e in observed}, "L elected while B was away"
    assert_reference_agrees(run_dir)
