"""KAFKA-19522's recipe: is a fenced last known leader elected?

In Kafka 4.0.x the controller's `canElectLastKnownLeader` lacks a negation:
with ISR and ELR both empty it elects the partition's last known leader even
while that broker is fenced (fixed in 4.1.0). L is the leader, A and B its
followers; a fourth broker, no replica of the partition, answers the observer
throughout (every observe line carries the `fenced` brokers):

    F0  kill -9 A, wait until it is fenced and out of the ISR
    F1  kill -9 B, wait likewise                          -> ISR = {L}
    F2  kill -9 L, wait until it is fenced                -> no leader
    F3  restart L and, the moment it registers, SIGSTOP it (it stays fenced)
    F4  watch for 20 s: 4.0.x elects L while fenced (fenced-leader);
        4.1+ leaves the partition without a leader until L is unfenced. The wait
        asks what the checker's fenced-leader asks, one observation naming L
        leader and fenced: should the SIGSTOP land after L was unfenced, 4.1+
        rightly elects it (ISR = {L}), and that is no sign of the bug
    F5  SIGCONT L, restart A and B                        -> full ISR again

Needs min.insync.replicas 1 (so the ISR shrinks to {L} without the ELR taking
the followers) and 4 brokers; `harness run --nemesis fenced-last-leader`
defaults both. Its steps are data: nemesis/scenario_files/fenced-last-leader.toml
(F3's restart and pause are two steps there, F3 and F3-pause, and F5's three
ends F5, F5-a and F5-b); what stays here is the topology it needs.
"""

from __future__ import annotations

from collections.abc import Sequence

from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.core.errors import BadInput
from elr_harness.nemesis.needs import Setting
from elr_harness.nemesis.scenarios.base import ScenarioPackage

NAME = "fenced-last-leader"


def check(cluster: ClusterConfig, topics: Sequence[TopicConfig]) -> None:
    """The recipe needs a broker that answers while every replica is down, and an
    ISR that may shrink to the leader alone."""
    replicas = max(t.replication_factor for t in topics)
    if cluster.brokers <= replicas:
        raise BadInput(f"{NAME} needs a broker that is no replica of the "
                       "partition (to answer while its replicas are down): --brokers "
                       f"{replicas + 1}")
    if any(t.min_insync_replicas != 1 for t in topics):
        raise BadInput(f"{NAME} needs --min-insync-replicas 1 (the ISR "
                       "must shrink to the leader alone)")


PACKAGE = ScenarioPackage(
    NAME, file=NAME, check=check,
    # KAFKA-19522's recipe: a fourth broker to answer, an ISR that may shrink to one
    cluster_settings=(Setting("cluster.brokers", lambda run: run.fenced_last_leader_brokers),
                      Setting("topic.min_insync_replicas",
                              lambda run: run.fenced_last_leader_min_insync_replicas)),
    help="KAFKA-19522's recipe: is a fenced last known leader elected? (4 brokers, "
         "min ISR 1)")
