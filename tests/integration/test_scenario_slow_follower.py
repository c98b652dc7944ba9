"""slow-follower on real Kafka (the newest release), ELR on: ../shared/SCENARIOS.md,
"slow-follower" (KAFKA-19996's path).

One run: exit 0 (valid, no acks=all lost-write, no elr-invariant); the history's
own observations show A out of the ISR with only its links slowed (no partition
yet), then the ISR below min ISR while B was cut off, then the ISR whole after
the heal. The ISR changes below min ISR are counted in the test's output, and
results.json's churn statistic holds the time below min ISR.
"""

from __future__ import annotations

import pytest
from checker_agreement import assert_reference_agrees
from scenario_runs import fault_index, run_scenario

pytestmark = pytest.mark.integration

NAME = "slow-follower"


def timings_hold_s() -> float:
    """The hold below min ISR its shipped file says (T1's)."""
    from elr_harness.nemesis.registry import parse_nemesis

    return next(s.hold_s for s in parse_nemesis(NAME).played_file.steps if s.name == "T1")


def test_a_slow_follower_below_min_isr_loses_nothing(capsys):
    run = run_scenario(NAME)
    proc, run_dir, results = run.proc, run.run_dir, run.results
    lost, steps, history = run.lost, run.steps, run.history
    topic = run.topic
    observe = run.observations()
    slowed = fault_index(history, "T0", "slow-network", "ok")
    cut = fault_index(history, "T1", "partition", "invoke")
    healed = fault_index(history, "T2", "heal", "ok")
    below = [e for e in observe if cut < e["index"] < healed and len(e["isr"]) < 2]
    changes = sum(1 for x, y in zip(below, below[1:], strict=False)
                  if sorted(x["isr"]) != sorted(y["isr"]))
    churn = results["stats"]["isr_churn_below_min_isr"].get(f"{topic}-0")
    with capsys.disabled():
        print(f"\n[{NAME}, ELR on] {run_dir.name}: exit {proc.returncode}, valid="
              f"{results['valid']}, lost-write by acks: {lost}, {len(below)} observations "
              f"below min ISR, {changes} ISR changes among them; results.json: {churn}")

    # its file's steps: one fault each (T2 heals, T2-slow ends A's slow links)
    assert list(steps) == ["setup", "T0", "T1", "T2", "T2-slow"], steps
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
    # results.json's churn stat: the hold below min ISR is counted in time
    assert churn is not None and churn["seconds_below"] >= timings_hold_s() / 2, churn
    assert sorted(steps["T2-slow"]["observed"]["isr"]) == sorted(
        steps["setup"]["observed"]["isr"]), "the ISR is whole after the heal"
    assert_reference_agrees(run_dir)
