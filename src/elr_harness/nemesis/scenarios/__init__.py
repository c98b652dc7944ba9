"""The registry of scripted scenarios: one per module, nemesis/scenarios/<name>.py.

`--nemesis <scenario>` (nemesis.registry), `harness run --help`, the run's
layer and settings (harness.run_config, harness.run) and the soak's default
plan read this; nothing outside a scenario's own module tests its name.
"""

from __future__ import annotations

from elr_harness.nemesis.scenarios import (
    disk_failure,
    elr_downgrade,
    fenced_last_leader,
    min_isr_drop,
    slow_follower,
    txn_coordinator_loss,
    txn_delayed_end,
    txn_unclean_marker,
    unclean_last_replica,
    unclean_last_replica_alone,
)
from elr_harness.nemesis.scenarios.base import ScenarioPackage

__all__ = ["SCENARIOS", "ScenarioPackage"]

#: Every scenario by its `--nemesis` name, in the order help and plans list them.
SCENARIOS: dict[str, ScenarioPackage] = {m.PACKAGE.name: m.PACKAGE for m in (
    unclean_last_replica, unclean_last_replica_alone, min_isr_drop, slow_follower,
    disk_failure, fenced_last_leader, elr_downgrade, txn_delayed_end, txn_unclean_marker,
    txn_coordinator_loss)}
