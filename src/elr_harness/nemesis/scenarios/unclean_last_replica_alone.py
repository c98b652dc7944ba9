"""KIP-966's last replica standing, L first (shared/SCENARIOS.md, "unclean-last-replica,
L first"): the half of the claim unclean-last-replica never tests.

There B is elected before L restarts, so a Kafka that kept the uncleanly
restarted L in the ELR would pass. Here T0-T2 are unclean-last-replica's own
steps, then L restarts while B is still away from the controllers. Its steps are
data: nemesis/scenario_files/unclean-last-replica-alone.toml.

    T0  partition A away from every node         -> ISR = {L, B}
    T1  partition B away too                     -> ISR = {L}; ELR on: ELR = {B}
    T2  power loss on L (kill -9, drop unsynced)  -> ELR on: ISR = {}, leader -1
    T3  restart L (no clean-shutdown marker); A and B stay cut off (T1's partition)
        wait until L is unfenced      -> ELR on: L out of ISR and ELR, no leader;
                                         ELR off: L elected at once
    T3-hold  watch 15 s for L elected -> ELR on: never; the partition leaderless
    T3-controller  the controller's own metadata log read (ISR, ELR, LastKnownELR)
    T4  heal the partitions           -> ELR on: B is elected; ELR off: L leads

Expected outcome: ELR on -> valid, no acks=all `lost-write` (the controller saw
L's unclean shutdown, removed it from the ELR and never elected it while B was
away; B, elected when it came back, holds every acknowledged record). ELR off
-> invalid with acks=all `lost-write` > 0: L, the last ISR member, is elected at
once with the log it kept, and A and B truncate to it.

While A and B are cut off only L may answer the observer, and until L answers
the observer's latest sample is the one from before T2: each wait and watch
accepts only samples taken after its step began (nemesis.schedule.played).
"""

from __future__ import annotations

from elr_harness.nemesis.needs import Layer
from elr_harness.nemesis.scenarios.base import SHORT_KAFKA_TIMEOUTS, ScenarioPackage

PACKAGE = ScenarioPackage(
    "unclean-last-replica-alone", file="unclean-last-replica-alone",
    layers=frozenset({Layer.PAGE_CACHE}), in_default_soak=True,
    cluster_settings=SHORT_KAFKA_TIMEOUTS,
    help="KIP-966's last replica standing, L first: L restarts uncleanly while B is "
         "still away; ELR on never elects L (leaderless until B is back)")
