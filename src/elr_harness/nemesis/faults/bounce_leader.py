"""`bounce-leader`: SIGSTOP a partition's leader past the broker session timeout,
then SIGCONT it (KAFKA-18991's trigger).

It is a pause, recorded under its own kind (`bounce-leader`, ended by `resume`
as a pause is; drawn in a pause's colour; not in the fault budget), so a report
and the checker's counts tell a bounce from a plain pause. It needs the
controller's preferred leader election every few seconds, a change to the
cluster's config for the whole run, so `--nemesis all` leaves it out.
"""

from __future__ import annotations

import time

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults import pause
from elr_harness.nemesis.faults.base import PROCESSES, FaultPackage, Mix, Undo, why
from elr_harness.nemesis.needs import Setting
from elr_harness.nemesis.targets import Role


def inject(mix: Mix, package: FaultPackage) -> Undo:
    """SIGSTOP a partition's leader for longer than the broker session timeout (it
    is fenced and loses leadership), then SIGCONT it; the controller's preferred
    leader election hands leadership back (KAFKA-18991's trigger: a follower
    moving to a new leader epoch while an old-epoch fetch is in flight)."""
    target, detail = mix.target(Role.LEADER), why(package, Role.LEADER)
    hold_s = mix.bounce_hold_s
    paused_at = time.monotonic()
    mix.injector.pause(target, kind=package.recorded, detail={**detail, "hold_s": hold_s})

    def undo() -> None:
        mix.stop_event.wait(max(0.0, paused_at + hold_s - time.monotonic()))
        mix.injector.resume(target, detail=detail)

    return undo


PACKAGE = FaultPackage(
    "bounce-leader", Fault.BOUNCE_LEADER, (Role.LEADER,), pause.PACKAGE.colour, PROCESSES,
    inject, in_all=False,
    # the leader a bounce fenced gets its partitions back within seconds (unless
    # --config sets [cluster.timings])
    cluster_settings=(Setting("cluster.timings.leader_imbalance_check_interval_s",
                              lambda run: run.bounce_leader_imbalance_check_s,
                              unless="cluster.timings"),),
    help="SIGSTOP a partition's leader past its session timeout, then SIGCONT; the "
         "preferred leader election runs every few seconds (KAFKA-18991)")
