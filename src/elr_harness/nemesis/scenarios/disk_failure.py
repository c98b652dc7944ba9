"""A log directory failing under the leader's replica (shared/SCENARIOS.md,
"disk-failure"; the controller's handleDirectoriesOffline path, KIP-858).

Min ISR 2, replication factor 3, two log directories per broker (JBOD); L
leads, A and B follow:

    T0  fail writes and fsyncs (EIO) in the log dir holding L's replica; the
        layer forgets what that dir had not synced, as Linux does
                                        -> Kafka takes the dir offline, L lives
                                           on, registered; the controller takes
                                           L out of the ISR: ISR = {A, B}, one
                                           of them leads (N; the other is F)
    T1  partition F away from every node -> ISR = {N} < min ISR; ELR on: ELR = {F}
        hold disk_failure_hold_s, watching -> producers write (acks=all refused);
                                           L is never in the ELR (it left the ISR
                                           while the ISR still held min ISR)
    T2  heal the partition               -> F back in the ISR
    T3  end the disk fault: L restarted with the dir healthy
                                        -> the ISR is full again

Expected outcome, ELR on and off: valid, no acks=all `lost-write` (the dropped
data was L's alone, dropped while every ISR was full: within the fault budget)
and no `elr-invariant`. A controller that put L, whose directory is offline,
into the ELR, or elected it, would show in the T1-hold step and the report's
lanes; one that lost the ISR's data would show as lost writes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.wait import wait_until
from elr_harness.nemesis import grudges
from elr_harness.nemesis.faults import disk_fault, partition
from elr_harness.nemesis.needs import Layer
from elr_harness.nemesis.scenarios.base import (
    Roles,
    ScenarioPackage,
    ScriptedScenario,
    StepOutcome,
    summary,
)

#: The failure T0 injects: both operations, so Kafka meets it at the next write.
ERRNO, OPERATIONS = "EIO", ("fsync", "write")


class DiskFailure(ScriptedScenario):
    """T0..T3 on one partition; every other partition goes along."""

    name = "disk-failure"

    def run(self) -> list[StepOutcome]:
        roles = self._named_roles()
        nodes = sorted(self.injector.cluster.nodes)
        after: dict[str, int] = {}

        def failed_over() -> StepOutcome:
            outcome = self._wait("T0", lambda s: roles.leader not in s.isr
                                 and s.leader in (roles.a, roles.b)
                                 and sorted(s.isr) == sorted([roles.a, roles.b]))
            new_leader = outcome.observed.get("leader")
            after["f"] = roles.b if new_leader == roles.a else roles.a
            return outcome

        return self._steps([
            ("T0", lambda: disk_fault.fail(
                self.injector, roles.l_name, self._dir_of(roles.l_name), ERRNO, OPERATIONS,
                drop=True, step="T0")),
            ("T0-wait", failed_over),
            ("T1", lambda: partition.cut(
                self.injector, grudges.isolate(self._broker_name(after["f"]), nodes), step="T1")),
            ("T1-wait", lambda: self._wait("T1", lambda s: after["f"] not in s.isr)),
            ("T1-hold", lambda: self._watch_l(roles)),
            ("T2", lambda: self.injector.heal(step="T2")),
            ("T2-wait", lambda: self._wait("T2", lambda s: after["f"] in s.isr)),
            ("T3", lambda: disk_fault.end(self.injector, roles.l_name, step="T3")),
            ("T3-wait", lambda: self._wait("T3", lambda s: len(s.isr) == 3)),
        ])

    def _dir_of(self, name: str) -> str:
        """The log dir of broker `name` that holds this partition's replica."""
        folder = f"{self.topic}-{self.partition}"
        found = disk_fault.dir_holding(self.injector, name, folder)
        if found is None:
            raise RuntimeError(f"{name} holds {folder} in none or several of its log dirs")
        return found

    def _watch_l(self, roles: Roles) -> StepOutcome:
        """Watch disk_failure_hold_s, in the observations, for L named in the ELR or
        elected while its directory is offline."""
        started = time.monotonic()
        seen: PartitionState | None = None
        named: list[dict] = []

        def l_named() -> bool:
            nonlocal seen
            state = self._state(self.observer.latest())
            if state is None:
                return False
            seen = state
            if roles.leader in (state.elr or []) or state.leader == roles.leader:
                named.append(summary(state))
            return False  # watch the whole hold

        wait_until(l_named, self.timings.disk_failure_hold_s, self.timings.watch_poll_s,
                   self.stop_event)
        observed = summary(seen)
        observed.update(l_named=named[:3], watched_s=round(time.monotonic() - started, 1))
        return self._finish("T1-hold", seen is not None and not named, observed)


def check(cluster: ClusterConfig, topics: Sequence[TopicConfig]) -> None:
    """A broker needs a second log dir to live on when one fails."""
    if cluster.log_dirs < 2:
        raise BadInput(f"{DiskFailure.name} needs two log dirs per broker (cluster.log_dirs): "
                       "with one, Kafka stops the broker when its dir fails")


PACKAGE = ScenarioPackage(
    DiskFailure.name, scenario=DiskFailure, check=check, layers=frozenset({Layer.PAGE_CACHE}),
    # two log dirs, as the disk-fault kind asks for them
    cluster_settings=disk_fault.PACKAGE.cluster_settings,
    help="KIP-858's path: the leader's log dir fails (EIO) while it runs; it leaves the "
         "ISR, a follower is cut off; it is never in the ELR while the dir is offline")
