"""KIP-966's min ISR change clears the ELR (shared/SCENARIOS.md, "min-isr-drop";
KAFKA-16540's path: the controller writes a ClearElrRecord). Its steps are data:
nemesis/scenario_files/min-isr-drop.toml (T2's two stops are T2 and T2-b there,
T4's two starts T4 and T4-b); what stays here is the min ISR it needs.

Topic min ISR 3, replication factor 3; L leads, A and B follow:

    T0  partition A away from every node   -> ISR = {L, B} < min ISR; ELR on: ELR = {A}
    T1  lower the topic's min ISR to 2      -> ELR on: ELR cleared at once; acks=all
        writes succeed again, and for 5 s the high watermark advances
        with ISR = {L, B} while A lacks those records
    T2  stop L, then B (SIGTERM)           -> no leader; ELR on: ELR = {L, B}
    T3  heal A's partition                  -> A back and unfenced while L and B are down
        hold 15 s, watching (T3-hold)       -> A is never elected (ELR on: it left the
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

from collections.abc import Sequence

from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.core.errors import BadInput
from elr_harness.nemesis.needs import Setting
from elr_harness.nemesis.scenarios.base import ScenarioPackage

NAME = "min-isr-drop"
#: The min ISR the topic starts with, and what T1 lowers it to.
START_MIN_ISR, LOWERED_MIN_ISR = 3, 2


def check(cluster: ClusterConfig, topics: Sequence[TopicConfig]) -> None:
    """Its steps need min ISR 3 on three replicas, to lower to 2."""
    if any(t.min_insync_replicas != START_MIN_ISR or t.replication_factor != 3
           for t in topics):
        raise BadInput(f"{NAME} needs replication factor 3 and "
                       f"--min-insync-replicas {START_MIN_ISR} (lowered to "
                       f"{LOWERED_MIN_ISR} at T1)")


PACKAGE = ScenarioPackage(
    NAME, file=NAME, check=check,
    cluster_settings=(Setting("topic.min_insync_replicas",
                              lambda run: run.min_isr_drop_min_insync_replicas),),
    help="KIP-966 / KAFKA-16540: lowering min ISR clears the ELR; the follower that "
         "left it is never elected while the others are down (min ISR 3 -> 2)")
