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
        hold 20 s, watching (T1-hold)      -> producers write (acks=all refused);
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

Its steps are data: nemesis/scenario_files/disk-failure.toml; what stays here is
the second log dir it needs.
"""

from __future__ import annotations

from collections.abc import Sequence

from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.core.errors import BadInput
from elr_harness.nemesis.faults import disk_fault
from elr_harness.nemesis.needs import Layer
from elr_harness.nemesis.scenarios.base import ScenarioPackage

NAME = "disk-failure"


def check(cluster: ClusterConfig, topics: Sequence[TopicConfig]) -> None:
    """A broker needs a second log dir to live on when one fails."""
    if cluster.log_dirs < 2:
        raise BadInput(f"{NAME} needs two log dirs per broker (cluster.log_dirs): "
                       "with one, Kafka stops the broker when its dir fails")


PACKAGE = ScenarioPackage(
    NAME, file=NAME, check=check, layers=frozenset({Layer.PAGE_CACHE}),
    # two log dirs, as the disk-fault kind asks for them
    cluster_settings=disk_fault.PACKAGE.cluster_settings,
    help="KIP-858's path: the leader's log dir fails (EIO) while it runs; it leaves the "
         "ISR, a follower is cut off; it is never in the ELR while the dir is offline")
