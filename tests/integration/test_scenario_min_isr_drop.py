"""min-isr-drop on real Kafka (the newest release), ELR on: ../shared/SCENARIOS.md,
"min-isr-drop" (KAFKA-16540's path).

One run: exit 0 (valid, no acks=all lost-write, no elr-invariant); the history's
own observations show A in the ELR at T0, the ELR empty with min ISR 2 from T1,
and A never the leader while L and B were down (the controller's view agrees).
ELR off takes the same path (A is no ISR member, so never elected) and is left
to the note: one run here keeps the suite's time. The run's store is the
worktree's own store/.
"""

from __future__ import annotations

import pytest
from checker_agreement import assert_reference_agrees
from scenario_runs import fault_index, run_scenario

pytestmark = pytest.mark.integration

NAME = "min-isr-drop"


def test_a_follower_the_min_isr_change_took_out_of_the_elr_is_never_elected(capsys):
    run = run_scenario(NAME)
    proc, run_dir, results = run.proc, run.run_dir, run.results
    lost, steps, history = run.lost, run.steps, run.history
    observe = run.observations(brokers_only=False)
    leader = steps["setup"]["observed"]["leader"]
    with capsys.disabled():
        print(f"\n[{NAME}, ELR on] {run_dir.name}: exit {proc.returncode}, valid="
              f"{results['valid']}, lost-write by acks: {lost}, T3-hold "
              f"{steps.get('T3-hold')}")

    # its file's steps: one fault each (T2 stops L, T2-b B; T4 and T4-b start them)
    assert list(steps) == ["setup", "T0", "T1", "T2", "T2-b", "T3", "T3-hold", "T4",
                           "T4-b"], steps
    assert all(s["reached"] for s in steps.values()), steps
    assert proc.returncode == 0, results["reason"]
    assert results["valid"] is True and lost["all"] == 0
    assert "elr-invariant" not in results["anomalies"], results["anomalies"]
    (a,) = steps["T0"]["observed"]["elr"]
    assert a != leader and a in steps["setup"]["observed"]["isr"]
    # from the first observation of min ISR 2 after T1 to the stop of L: the ELR is
    # empty (samples taken while the change was under way may still show 3 and A)
    t1, t2 = fault_index(history, "T1", "min-isr-change"), fault_index(
        history, "T2", "stop", "invoke")
    after_t1 = [e for e in observe if t1 < e["index"] < t2 and "source" not in e]
    first = next((i for i, e in enumerate(after_t1) if e.get("min_isr") == 2), None)
    assert first is not None, "the change was never read back"
    lowered = after_t1[first:]
    assert all(e.get("elr") == [] for e in lowered), lowered
    assert all(e.get("min_isr") in (2, None) for e in lowered), lowered
    # while L and B were down, A was never elected (brokers' and controller's views)
    t4 = fault_index(history, "T4", "start", "invoke")
    down = [e for e in observe if t2 < e["index"] < t4]
    assert down and a not in {e["leader"] for e in down}, down
    hold = steps["T3-hold"]
    assert hold["watched"]["seen"] is False and hold["observed"]["leader"] == -1, hold
    assert steps["T4-b"]["observed"]["leader"] != a
    assert_reference_agrees(run_dir)
