"""`bounce-leader`: SIGSTOP a partition's leader for longer than the broker session
timeout (it is fenced and loses leadership), then SIGCONT it; the controller's
preferred leader election hands leadership back (KAFKA-18991's trigger: a
follower moving to a new leader epoch while an old-epoch fetch is in flight).

Not in `all`: it asks for a preferred leader election every few seconds
(leader.imbalance.check.interval.seconds), which changes the cluster for the
whole run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from elr_harness.core.history import Fault
from elr_harness.core.validate import MAX_SECONDS, integer
from elr_harness.nemesis.faults.base import (
    PROCESSES,
    RESUME,
    Capability,
    FaultPackage,
    Injector,
    Mix,
    Undo,
    Use,
    why,
)
from elr_harness.nemesis.faults.pause import COLOUR, pause
from elr_harness.nemesis.needs import Setting
from elr_harness.nemesis.targets import Role


@dataclass(frozen=True)
class BounceLeaderSettings:
    """[run.faults.bounce-leader] in --config."""

    #: The SIGSTOP lasts the broker session timeout plus this, so the paused leader
    #: is surely fenced.
    hold_margin_s: float = 2.0
    #: leader.imbalance.check.interval.seconds while the kind is in the mix (unless
    #: --config sets [cluster.timings]): the fenced leader gets its partitions back
    #: within seconds.
    leader_imbalance_check_s: int = 5


def hold_s(injector: Injector, settings: BounceLeaderSettings) -> float:
    """How long a bounce holds its leader: past the cluster's session timeout."""
    return (injector.cluster.config.timings.broker_session_timeout_ms / 1000
            + settings.hold_margin_s)


def inject(mix: Mix, package: FaultPackage) -> Undo:
    target, detail = mix.target(Role.LEADER), why(package, Role.LEADER)
    held = hold_s(mix.injector, mix.settings(package))
    paused_at = time.monotonic()
    pause(mix.injector, target, detail={**detail, "hold_s": held}, kind=package.recorded)

    def undo() -> None:
        mix.stop_event.wait(max(0.0, paused_at + held - time.monotonic()))
        mix.injector.resume(target, detail=detail)

    return undo


def act(use: Use, target: str) -> Undo:
    """The target frozen (recorded as a bounce); its end waits out the hold."""
    held = hold_s(use.injector, use.settings)
    paused_at = time.monotonic()
    pause(use.injector, target, use.step, use.detail, kind=PACKAGE.recorded)

    def undo() -> None:
        use.stop_event.wait(max(0.0, paused_at + held - time.monotonic()))
        use.injector.resume(target, **use.said())

    return undo


def _imbalance_check(run: Any) -> int:
    chosen = run.faults.get("bounce-leader")
    return (chosen or BounceLeaderSettings()).leader_imbalance_check_s


PACKAGE = FaultPackage(
    "bounce-leader", Fault.BOUNCE_LEADER, (Role.LEADER,), COLOUR, PROCESSES, inject,
    act=act, heals=(RESUME,), in_all=False,
    capabilities=frozenset({Capability.STOPS_LEADING, Capability.KEEPS_FENCED}),
    settings=BounceLeaderSettings,
    rules={"leader_imbalance_check_s": integer(1, int(MAX_SECONDS))},
    # the leader a bounce fenced gets its partitions back within seconds (unless
    # --config sets [cluster.timings])
    cluster_settings=(Setting("cluster.timings.leader_imbalance_check_interval_s",
                              _imbalance_check, unless="cluster.timings"),),
    acts_on="brokers",
    help="SIGSTOP a partition's leader past its session timeout, then SIGCONT; the "
         "preferred leader election runs every few seconds (KAFKA-18991)")
