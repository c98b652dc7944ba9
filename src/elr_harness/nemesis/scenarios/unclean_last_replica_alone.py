"""KIP-966's last replica standing, L first (shared/SCENARIOS.md, "unclean-last-replica,
L first"): the half of the claim unclean-last-replica never tests.

There B is elected before L restarts, so a Kafka that kept the uncleanly
restarted L in the ELR would pass. Here T0-T2 are unclean-last-replica's own
steps, then L restarts while B is still away from the controllers:

    T0  partition A away from every node         -> ISR = {L, B}
    T1  partition B away too                     -> ISR = {L}; ELR on: ELR = {B}
    T2  power loss on L (kill -9, drop unsynced)  -> ELR on: ISR = {}, leader -1
    T3  restart L (no clean-shutdown marker); A and B stay cut off (T1's partition)
        wait until L is unfenced      -> ELR on: L out of ISR and ELR, no leader;
                                         ELR off: L elected at once
        hold hold_alone_s, watching   -> ELR on: L never elected, the partition
                                         leaderless; then the controller's own
                                         metadata log is read (ISR, ELR, LastKnownELR)
    T4  heal the partitions           -> ELR on: B is elected; ELR off: L leads

Then the run heals everything, waits for recovery, reads and checks.

Expected outcome: ELR on -> valid, no acks=all `lost-write` (the controller saw
L's unclean shutdown, removed it from the ELR and never elected it while B was
away; B, elected when it came back, holds every acknowledged record). ELR off
-> invalid with acks=all `lost-write` > 0: L, the last ISR member, is elected at
once with the log it kept, and A and B truncate to it.

While A and B are cut off only L may answer the observer (a cut-off broker's view
is stale and not asked), and until L answers the observer's latest sample is
the one from before T2: T3's waits accept only samples taken after L restarted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from elr_harness.cluster.observe import PartitionState
from elr_harness.nemesis.needs import Layer
from elr_harness.nemesis.scenarios.base import (
    SHORT_KAFKA_TIMEOUTS,
    ScenarioPackage,
    StepOutcome,
    summary,
)
from elr_harness.nemesis.scenarios.unclean_last_replica import Roles, UncleanLastReplica


class UncleanLastReplicaAlone(UncleanLastReplica):
    """T0..T2 as unclean-last-replica, then L restarted while B is away, then heal."""

    name = "unclean-last-replica-alone"

    #: The partition's last sample before L restarted (stale: nobody fresh answered
    #: since T2); T3's waits ignore it.
    _before_restart: PartitionState | None = None

    def run(self) -> list[StepOutcome]:
        roles = self._named_roles()
        return self._steps([
            *self._power_loss_steps(roles),
            ("T3", lambda: self._restart_alone(roles)),
            ("T3-wait", lambda: self._wait_fresh(
                "T3", lambda s: self._unfenced(s, roles.leader) and self._alone(s, roles))),
            ("T3-hold", lambda: self._watch_alone(roles)),
            ("T3-controller", lambda: self._wait_controller(
                "T3-controller", lambda s: self._alone(s, roles))),
            ("T4", lambda: self.injector.heal(step="T4")),
            ("T4-wait", lambda: self._wait(
                "T4", lambda s: s.leader == (roles.b if self.elr else roles.leader))),
        ])

    # -- what each mode expects of the partition while B is away ----------------

    def _alone(self, s: PartitionState, roles: Roles) -> bool:
        """ELR on: no leader, L out of ISR and ELR, B still in the ELR. ELR off: L leads."""
        if not self.elr:
            return s.leader == roles.leader
        return (s.leader == -1 and roles.leader not in s.isr
                and roles.leader not in (s.elr or ()) and roles.b in (s.elr or ()))

    @staticmethod
    def _unfenced(s: PartitionState, broker: int) -> bool:
        """The answering broker's metadata holds `broker` registered and unfenced (a
        fenced L could not be elected anyway: the hold would prove nothing)."""
        return s.fenced is not None and broker not in s.fenced

    # -- steps ----------------------------------------------------------------------

    def _restart_alone(self, roles: Roles) -> None:
        """Start L (no clean-shutdown marker) with T1's partition still in force."""
        self._before_restart = self._state(self.observer.latest())
        self.injector.start(roles.l_name, step="T3")

    def _fresh(self, predicate: Callable[[PartitionState], bool]
               ) -> Callable[[list[PartitionState]], bool]:
        """`predicate` on the partition in samples taken after L restarted only (each
        sample is a new object; the one kept from before is T1's stale view)."""
        before = self._before_restart

        def check(states: list[PartitionState]) -> bool:
            s = self._state(states)
            return s is not None and s is not before and predicate(s)

        return check

    def _observed(self, sample: list[PartitionState] | None) -> dict[str, Any]:
        """What a T3 step records: the matching sample, else the latest one, unless
        that is still the stale view from before L restarted."""
        state = self._state(sample if sample is not None else self.observer.latest())
        if state is None or state is self._before_restart:
            return {"fresh": False}
        observed = summary(state)
        if state.fenced is not None:
            observed["fenced"] = list(state.fenced)
        return observed

    def _wait_fresh(self, step: str, predicate: Callable[[PartitionState], bool]
                    ) -> StepOutcome:
        """As _wait, on samples taken after L restarted."""
        sample = self.observer.wait_for(self._fresh(predicate), self.timings.step_timeout_s)
        return self._finish(step, sample is not None, self._observed(sample))

    def _watch_alone(self, roles: Roles) -> StepOutcome:
        """Watch hold_alone_s for L elected while B is away. Reached when the mode's
        expectation held and was seen: ELR on, L never led and the last sample is
        one taken after L restarted (no fresh sample proves nothing); ELR off, L led."""
        started = time.monotonic()
        elected = self.observer.wait_for(self._fresh(lambda s: s.leader == roles.leader),
                                         self.timings.hold_alone_s)
        observed = self._observed(elected)
        observed.update(l_elected=elected is not None,
                        watched_s=round(time.monotonic() - started, 1))
        seen = "fresh" not in observed
        return self._finish("T3-hold", seen and (elected is not None) != self.elr, observed)


PACKAGE = ScenarioPackage(
    UncleanLastReplicaAlone, layers=frozenset({Layer.PAGE_CACHE}), in_default_soak=True,
    cluster_settings=SHORT_KAFKA_TIMEOUTS,
    help="KIP-966's last replica standing, L first: L restarts uncleanly while B is "
         "still away; ELR on never elects L (leaderless until B is back)")
