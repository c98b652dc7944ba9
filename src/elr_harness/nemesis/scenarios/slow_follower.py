"""A slow follower below min ISR (shared/SCENARIOS.md, "slow-follower";
KAFKA-19996, still open upstream: such a follower leaves the ISR and rejoins it
over and over).

Min ISR 2, replication factor 3; L leads, A and B follow:

    T0  throttle A's links to the other brokers (tc htb at
        32 kbit/s, iptables random loss 5%; its
        links to the controllers stay whole, so A stays registered)
                                            -> A falls behind: ISR = {L, B}
    T1  partition B away from every node    -> ISR = {L} < min ISR; ELR on: ELR = {B}
        hold 60 s                           -> producers keep writing (acks=all
                                               refused while the ISR is short);
                                               A may rejoin and leave again
    T2  heal the partition, end the slow network
                                            -> the ISR is full again

Expected outcome, ELR on and off: valid, no acks=all `lost-write` (nothing
loses unflushed data: within the fault budget) and no `elr-invariant`, whatever
the ISR churn. The report's partition lanes show every ISR change.

Its steps are data: nemesis/scenario_files/slow-follower.toml (T2's heal and
unthrottle are T2 and T2-slow there).
"""

from __future__ import annotations

from elr_harness.nemesis.scenarios.base import ScenarioPackage

PACKAGE = ScenarioPackage(
    "slow-follower", file="slow-follower",
    help="KAFKA-19996: a throttled follower and a partitioned one hold the ISR below "
         "min ISR for a minute while producers write; durability must hold")
