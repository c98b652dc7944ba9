"""KIP-966's "last replica standing" case, step by step (shared/SCENARIOS.md).

L is the partition's leader, A and B its followers, all found from the
observed state. Each step is a fault recorded with `detail.step`, and each
waits (bounded) on the observed partition state rather than on a sleep:

    T0  partition A away from every node        -> ISR = {L, B}
    T1  partition B away too                    -> ISR = {L}; ELR on: ELR = {B}
    T2  power loss on L (kill -9, drop unsynced) -> ELR on: ISR = {}, leader -1
    T3  heal the partitions                      -> A and B unfenced
    T4  restart L (no clean-shutdown marker)    -> ELR on: B leads; off: L leads

A wait that runs out is recorded (detail.timed_out) and the scenario goes on:
the checker judges the history, not the scenario's expectations.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.wait import wait_until
from elr_harness.nemesis import grudges
from elr_harness.nemesis.faults import page_cache_loss, partition
from elr_harness.nemesis.needs import Layer
from elr_harness.nemesis.scenarios.base import (
    SHORT_KAFKA_TIMEOUTS,
    ScenarioPackage,
    ScriptedScenario,
    StepOutcome,
    read_controller,
    summary,
)


@dataclass(frozen=True)
class Roles:
    """L, A and B as the observed state named them: broker ids and node names."""

    leader: int
    a: int
    b: int
    l_name: str
    a_name: str
    b_name: str


Steps = list[tuple[str, Callable[[], object]]]


class UncleanLastReplica(ScriptedScenario):
    """Runs T0..T4 on one partition; every other partition goes along."""

    name = "unclean-last-replica"

    def run(self) -> list[StepOutcome]:
        roles = self._named_roles()
        return self._steps([
            *self._power_loss_steps(roles),
            ("T3", lambda: self.injector.heal(step="T3")),
            ("T3-wait", lambda: self._wait_unfenced("T3", [roles.a, roles.b])),
            ("T4", lambda: self.injector.start(roles.l_name, step="T4")),
            ("T4-wait", lambda: self._wait(
                "T4", lambda s: s.leader == (roles.b if self.elr else roles.leader))),
        ])

    def _named_roles(self) -> Roles:
        """L, A and B from the observed state (a full ISR), with their node names."""
        leader, a_id, b_id = self._roles()
        return Roles(leader, a_id, b_id, *(self._broker_name(i) for i in (leader, a_id, b_id)))

    def _power_loss_steps(self, roles: Roles) -> Steps:
        """T0..T2, shared by every variant: A then B cut off from every node (the
        ISR shrinks to L; ELR on: B joins the ELR), then power loss on L."""
        nodes = sorted(self.injector.cluster.nodes)
        leader, b_id = roles.leader, roles.b
        return [
            ("T0", lambda: partition.cut(
                self.injector, grudges.isolate(roles.a_name, nodes), step="T0")),
            ("T0-wait", lambda: self._wait(
                "T0", lambda s: sorted(s.isr) == sorted([leader, b_id]))),
            ("T1", lambda: partition.cut(
                self.injector, grudges.isolate_all([roles.a_name, roles.b_name], nodes),
                step="T1")),
            ("T1-wait", lambda: self._wait(
                "T1", lambda s: list(s.isr) == [leader]
                and (not self.elr or list(s.elr or []) == [b_id]))),
            ("T1-hold", lambda: self._sleep(self.timings.hold_t1_s)),
            ("T2", lambda: page_cache_loss.power_loss(self.injector, roles.l_name, step="T2")),
            ("T2-wait", lambda: self._wait_controller("T2", lambda s: s.leader == -1)),
        ]

    def _wait_controller(self, step: str,
                         predicate: Callable[[PartitionState], bool]) -> StepOutcome:
        """Wait on the active controller's own metadata log.

        In T2 no broker has a fresh view (L is dead, A and B are cut off and
        answer from stale caches), so the state is read where KIP-966 keeps it.
        Each reading is recorded as an `observe` line with source "controller".
        """
        state = None
        started = time.monotonic()

        def reached() -> bool:
            nonlocal state
            state = self._read_controller(step)
            return state is not None and predicate(state)

        wait_until(reached, self.timings.step_timeout_s, self.timings.controller_poll_s,
                   self.stop_event)
        observed = summary(state)
        if state is not None:
            observed.update(last_known_elr=list(state.last_known_elr or []), source="controller")
        return self._finish(step, state is not None and predicate(state), observed,
                            f" after {time.monotonic() - started:.0f} s")

    def _read_controller(self, step: str) -> PartitionState | None:
        """The partition in the active controller's metadata log now (base's
        read_controller: each reading an `observe` line, source controller)."""
        return read_controller(self.injector, self.topic, self.partition, self.log, step)

    def _wait_unfenced(self, step: str, broker_ids: list[int]) -> StepOutcome:
        """Healed brokers are back when the controller reports them registered."""
        seen: set[int] = set()

        def back() -> bool:
            nonlocal seen
            seen = self.injector.cluster.unfenced_brokers()
            return set(broker_ids) <= seen

        wait_until(back, self.timings.step_timeout_s, self.timings.unfenced_poll_s,
                   self.stop_event)
        return self._finish(step, set(broker_ids) <= seen, {"unfenced": sorted(seen)})


PACKAGE = ScenarioPackage(
    UncleanLastReplica, layers=frozenset({Layer.PAGE_CACHE}), in_default_soak=True,
    cluster_settings=SHORT_KAFKA_TIMEOUTS,
    help="KIP-966's last replica standing: the ISR shrinks to the leader, which loses "
         "its unsynced writes; ELR on keeps acks=all data")
