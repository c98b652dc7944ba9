"""elr-downgrade on real Kafka 4.4.0 (issue #53; ../shared/SCENARIOS.md,
"elr-downgrade"), its "elect" order (seed 0): a leaderless partition with
LastKnownELR [L], the ELR feature downgraded to 0, B elected at level 0 from the
ELR the controller kept, the feature back on, and a second leaderless spell.

4.4.0's PartitionChangeBuilder never writes LastKnownELR at level 0, so the [L]
of the first spell is still there when B, the real last leader, goes down; when
B registers again after its unclean shutdown the ELR empties and the controller
elects the stale last known leader L, which lacks every write B took: exit 1,
acks=all lost-write > 0 within the fault budget (no page-cache loss at all), and
elr-while-disabled (the LastKnownELR reported at level 0 after the partition
changed). The controller's own records (nodes/controller-*/metadata-log.json)
must tell the same story. Its own --subnet and --name, so it runs beside the
other scenario tests; the run's store is the worktree's own store/.
"""

from __future__ import annotations

import json

import pytest
from checker_agreement import assert_reference_agrees
from scenario_runs import run_scenario

from elr_harness.core.metadata_records import fold_partitions

pytestmark = pytest.mark.integration

NAME = "elr-downgrade"
ELR_FEATURE = "eligible.leader.replicas.version"
FLAGS = ("--kafka-version", "4.4.0", "--subnet", "10.213.121.0/24", "--name", "elr-downgrade-it")


def test_a_last_known_elr_kept_through_level_0_elects_a_stale_leader_on_4_4_0(capsys):
    run = run_scenario(NAME, *FLAGS, seed=0)
    proc, results, steps = run.proc, run.results, run.steps
    observed = {name: step["observed"] for name, step in steps.items()}
    leader = observed["setup"]["leader"]
    b = observed["T1"]["elr"][0]
    with capsys.disabled():
        print(f"\n[{NAME}, 4.4.0, seed 0] {run.run_dir.name}: exit {proc.returncode}, "
              f"valid={results['valid']}, bad {results['bad_anomaly_types']}, lost-write by "
              f"acks: {run.lost}, S4 {observed.get('S4')}")

    assert observed["setup"]["variant"] == "elect"
    assert all(step["reached"] for step in steps.values()), steps
    assert (observed["T2"]["leader"], observed["T2"]["isr"], observed["T2"]["last_known_elr"]
            ) == (-1, [], [leader])
    # at level 0 B is elected from the ELR the controller kept, and [L] stays
    assert (observed["C"]["leader"], observed["C"]["elr_feature"]) == (b, 0)
    assert observed["C"]["last_known_elr"] == [leader]
    # the second spell: B, the last leader, goes down; LastKnownELR is still [L]...
    assert observed["S2"]["last_known_elr"] == [leader] and observed["S2"]["stale_last_known_elr"]
    # ...and L is elected once B registers after its unclean shutdown
    assert (observed["S4"]["leader"], observed["S4"]["last_leader"]) == (leader, b)
    assert observed["S4"]["stale_leader_elected"] is True

    assert proc.returncode == 1, results["reason"]
    assert results["valid"] is False
    assert {"lost-write", "elr-while-disabled"} <= set(results["bad_anomaly_types"])
    assert run.lost["all"] > 0
    # no unflushed data was dropped: the loss is within KIP-966's fault budget
    guarantee = results["guarantee"][f"{run.topic}-0"]
    assert guarantee["within_budget"] and guarantee["page_cache_losses"] == 0, guarantee
    assert guarantee["acks_all_lost"] == run.lost["all"]
    assert results["coverage"]["elr-feature-change-while-leaderless"]["count"] >= 1

    # the controller's records say the same
    (log,) = sorted(run.run_dir.glob("nodes/controller-1/metadata-log.json"))
    records = json.loads(log.read_text())
    levels = [r["data"]["featureLevel"] for r in records if r["type"] == "FEATURE_LEVEL_RECORD"
              and r["data"]["name"] == ELR_FEATURE]
    assert levels[-3:] == [1, 0, 1], levels
    steps_of_p0 = [s for s in fold_partitions(records) if (s.topic, s.partition) == (
        run.topic, 0)]
    elections = [(s.state["leader"], s.state.get("lastKnownElr"), s.record["data"])
                 for s in steps_of_p0 if "leader" in s.changed and s.state["leader"] >= 0]
    # B elected at level 0 with no LastKnownELR written; L elected last, by the stale [L]
    assert any(new == b and lke == [leader] and "lastKnownElr" not in data
               for new, lke, data in elections), elections
    new, _, data = elections[-1]
    assert new == leader and data.get("leaderRecoveryState") == 1, elections
    assert_reference_agrees(run.run_dir)
