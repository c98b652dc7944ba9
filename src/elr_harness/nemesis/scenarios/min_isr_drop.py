"""KIP-966's min ISR change clears the ELR (shared/SCENARIOS.md, "min-isr-drop";
KAFKA-16540's path: the controller writes a ClearElrRecord).

Topic min ISR 3, replication factor 3; L leads, A and B follow:

    T0  partition A away from every node   -> ISR = {L, B} < min ISR; ELR on: ELR = {A}
    T1  lower the topic's min ISR to 2      -> ELR on: ELR cleared at once; acks=all
        writes succeed again, and for hold_min_isr_lowered_s the high watermark advances
        with ISR = {L, B} while A lacks those records
    T2  stop L, then B (SIGTERM)           -> no leader; ELR on: ELR = {L, B}
    T3  heal A's partition                  -> A back and unfenced while L and B are down
        hold hold_alone_s, watching         -> A is never elected (ELR on: it left the
                                               ELR at T1; ELR off: it is no ISR member)
    T4  start L and B                       -> one of them leads again

L and B are stopped cleanly, not killed: SCENARIOS.md's kill -9 would make both
unclean shutdowns, and KIP-966 then takes both out of the ELR when they come
back (PartitionChangeBuilder drops unclean-shutdown replicas; electing the last
known leader is off by default), which leaves a correct Kafka leaderless for
good. A clean stop keeps their data and their ELR places: what this scenario
asks is only whether A, which the min ISR change took out of the ELR, is
elected while they are away.

Expected outcome, ELR on and off: valid, no acks=all `lost-write` (no loss of
unflushed data: within the fault budget), and no `elr-invariant` (no ELR while
the ISR holds the min ISR in effect). A Kafka that kept A in the ELR breaks the
invariant at T1 and at T3 elects A, losing every write acknowledged after T1.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.wait import wait_until
from elr_harness.nemesis import grudges
from elr_harness.nemesis.faults import min_isr_change, partition, stop
from elr_harness.nemesis.needs import Setting
from elr_harness.nemesis.scenarios.base import (
    Roles,
    ScenarioPackage,
    ScriptedScenario,
    StepOutcome,
    summary,
)

#: The min ISR the topic starts with, and what T1 lowers it to.
START_MIN_ISR, LOWERED_MIN_ISR = 3, 2


class MinIsrDrop(ScriptedScenario):
    """T0..T4 on one partition; every other partition goes along."""

    name = "min-isr-drop"

    def run(self) -> list[StepOutcome]:
        roles = self._named_roles()
        nodes = sorted(self.injector.cluster.nodes)
        elr_on = self.elr
        return self._steps([
            ("T0", lambda: partition.cut(
                self.injector, grudges.isolate(roles.a_name, nodes), step="T0")),
            ("T0-wait", lambda: self._wait(
                "T0", lambda s: sorted(s.isr) == sorted([roles.leader, roles.b])
                and (not elr_on or list(s.elr or []) == [roles.a]))),
            ("T1", lambda: min_isr_change.change(
                self.injector, self.topic, LOWERED_MIN_ISR, START_MIN_ISR, step="T1")),
            ("T1-wait", lambda: self._wait(
                "T1", lambda s: s.min_isr == LOWERED_MIN_ISR and not (s.elr or []))),
            ("T1-hold", lambda: self._sleep(self.timings.hold_min_isr_lowered_s)),
            ("T2", lambda: stop.stop(self.injector, roles.l_name, step="T2")),
            ("T2-b", lambda: stop.stop(self.injector, roles.b_name, step="T2")),
            ("T2-wait", lambda: self._wait_controller("T2", lambda s: s.leader == -1)),
            ("T3", lambda: self.injector.heal(step="T3")),
            ("T3-wait", lambda: self._wait_unfenced("T3", [roles.a])),
            ("T3-hold", lambda: self._watch_a(roles)),
            ("T4", lambda: self.injector.start(roles.l_name, step="T4")),
            ("T4-b", lambda: self.injector.start(roles.b_name, step="T4")),
            ("T4-wait", lambda: self._wait(
                "T4", lambda s: s.leader in (roles.leader, roles.b))),
        ])

    def _watch_a(self, roles: Roles) -> StepOutcome:
        """Watch hold_alone_s, on the controller's own log, for A elected while L and
        B are down (only A runs, and it was cut off: no broker's view is fresh)."""
        started = time.monotonic()
        seen: PartitionState | None = None

        def a_elected() -> bool:
            nonlocal seen
            state = self._read_controller("T3-hold")
            seen = state if state is not None else seen
            return state is not None and state.leader == roles.a

        elected = wait_until(a_elected, self.timings.hold_alone_s,
                             self.timings.controller_poll_s, self.stop_event)
        observed = summary(seen)
        observed.update(a_elected=elected, watched_s=round(time.monotonic() - started, 1),
                        source="controller")
        return self._finish("T3-hold", seen is not None and not elected, observed)


def check(cluster: ClusterConfig, topics: Sequence[TopicConfig]) -> None:
    """Its steps need min ISR 3 on three replicas, to lower to 2."""
    if any(t.min_insync_replicas != START_MIN_ISR or t.replication_factor != 3
           for t in topics):
        raise BadInput(f"{MinIsrDrop.name} needs replication factor 3 and "
                       f"--min-insync-replicas {START_MIN_ISR} (lowered to "
                       f"{LOWERED_MIN_ISR} at T1)")


PACKAGE = ScenarioPackage(
    MinIsrDrop.name, scenario=MinIsrDrop, check=check,
    cluster_settings=(Setting("topic.min_insync_replicas",
                              lambda run: run.min_isr_drop_min_insync_replicas),),
    help="KIP-966 / KAFKA-16540: lowering min ISR clears the ELR; the follower that "
         "left it is never elected while the others are down (min ISR 3 -> 2)")
