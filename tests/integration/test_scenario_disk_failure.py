"""disk-failure on real Kafka (the newest release), ELR on: ../shared/SCENARIOS.md,
"disk-failure" (the controller's handleDirectoriesOffline path).

One run: exit 0 (valid, no acks=all lost-write, no elr-invariant). The history
shows what Kafka did: L's log dir failed (EIO, its unsynced data dropped) while
L's Kafka lived on (the heal stopped that same process), L left the ISR and
lost the lead, the ISR went below min ISR with the cut-off follower F as its
ELR, and L was never in the ELR, nor led, while its dir was offline.
"""

from __future__ import annotations

import pytest
from checker_agreement import assert_reference_agrees
from scenario_runs import fault_index, run_scenario

pytestmark = pytest.mark.integration

NAME = "disk-failure"


def test_a_leader_whose_log_dir_fails_is_never_in_the_elr(capsys):
    run = run_scenario(NAME)
    proc, run_dir, test, results = run.proc, run.run_dir, run.test, run.results
    lost, steps, history = run.lost, run.steps, run.history
    observe = run.observations()
    leader = steps["setup"]["observed"]["leader"]
    failed = fault_index(history, "T0", "disk-fault", "ok")
    ended = fault_index(history, "T3", "start", "invoke")
    # from Kafka's first word that L is out (the fault line precedes Kafka's notice)
    after_fault = [e for e in observe if failed < e["index"] < ended]
    out = next(i for i, e in enumerate(after_fault) if leader not in e["isr"])
    offline = after_fault[out:]
    below = [e for e in offline if len(e["isr"]) < 2]
    with capsys.disabled():
        print(f"\n[{NAME}, ELR on] {run_dir.name}: exit {proc.returncode}, valid="
              f"{results['valid']}, lost-write by acks: {lost}, {len(offline)} observations "
              f"while L's dir was offline, {len(below)} below min ISR, "
              f"ELRs seen {sorted({tuple(e.get('elr') or []) for e in below})}")

    assert list(steps) == ["setup", "T0", "T1", "T1-hold", "T2", "T3"], steps
    assert all(s["reached"] for s in steps.values()), steps
    assert proc.returncode == 0, results["reason"]
    assert results["valid"] is True and lost["all"] == 0
    assert "elr-invariant" not in results["anomalies"], results["anomalies"]
    fault = next(e for e in history if e["index"] == failed)
    l_name = next(name for name, node in test["nodes"].items()
                  if node["role"] == "broker" and node["id"] == leader)
    assert fault["nodes"] == [l_name], fault
    assert fault["detail"]["errno"] == "EIO" and fault["detail"]["dropped"] is True
    end = next(e for e in history if e["f"] == "fault" and e["type"] == "ok"
               and e["fault"] == "start" and e.get("detail", {}).get("step") == "T3")
    assert end["detail"]["stopped_pid"] is not None, "L's Kafka lived on with its dir offline"
    assert end["detail"]["failed"].get("write", 0) > 0, end["detail"]
    # L out of the ISR and the lead, then below min ISR with F alone in the ELR
    follower_cut = [b for b in steps["T0"]["observed"]["isr"]
                    if b != steps["T0"]["observed"]["leader"]]
    assert leader not in steps["T0"]["observed"]["isr"], steps["T0"]
    assert below and any((e.get("elr") or []) == follower_cut for e in below), below[-3:]
    assert not [e for e in offline if leader in (e.get("elr") or []) or e["leader"] == leader
                or leader in e["isr"]], "L never back, in the ELR or leading while offline"
    assert steps["T1-hold"]["watched"]["seen"] is False, steps["T1-hold"]
    assert len(steps["T3"]["observed"]["isr"]) == 3, "the ISR is whole after the heal"
    assert_reference_agrees(run_dir)
