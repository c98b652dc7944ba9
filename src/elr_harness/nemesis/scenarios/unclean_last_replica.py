"""KIP-966's "last replica standing" case, step by step (shared/SCENARIOS.md).

Its steps are data: nemesis/scenario_files/unclean-last-replica.toml, played as a
schedule file is (nemesis.schedule.played). L is the partition's leader, A and B its
followers, all found from the observed state:

    T0  partition A away from every node        -> ISR = {L, B}
    T1  partition B away too                    -> ISR = {L}; ELR on: ELR = {B}
    T2  power loss on L (kill -9, drop unsynced) -> ELR on: ISR = {}, leader -1
    T3  heal the partitions                      -> A and B unfenced
    T4  restart L (no clean-shutdown marker)    -> ELR on: B leads; off: L leads

What stays here is what the file cannot say of the run: the page-cache layer its
power loss needs, and the shortened Kafka timeouts its waits assume.
"""

from __future__ import annotations

from elr_harness.nemesis.needs import Layer
from elr_harness.nemesis.scenarios.base import SHORT_KAFKA_TIMEOUTS, ScenarioPackage

PACKAGE = ScenarioPackage(
    "unclean-last-replica", file="unclean-last-replica",
    layers=frozenset({Layer.PAGE_CACHE}), in_default_soak=True,
    cluster_settings=SHORT_KAFKA_TIMEOUTS,
    help="KIP-966's last replica standing: the ISR shrinks to the leader, which loses "
         "its unsynced writes; ELR on keeps acks=all data")
