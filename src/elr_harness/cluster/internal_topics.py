"""The internal topics of transactions, guarded like the test topics (contract v4).

With transactions (ClusterConfig.guard_internal_topics) `__transaction_state`
and `__consumer_offsets` run with replication factor 3 and min ISR 2, so ELR
guards the transaction coordinators' state and the consumer groups' offsets too.
The brokers' settings do most of it (kraft.server_properties):
offsets.topic.replication.factor, transaction.state.log.replication.factor and
transaction.state.log.min.isr, which Kafka's transaction coordinator writes into
the topic's own config when it creates it. `__consumer_offsets` has no broker
setting for its min ISR (the group coordinator creates it with only
cleanup.policy, compression.type and segment.bytes), and Kafka creates both
topics only when a client first needs one. So at cluster start, before any
client runs, the harness makes both exist the way a client would (a
FindCoordinator of each key type: a broker creates the topic and answers
COORDINATOR_NOT_AVAILABLE meanwhile), waits until every broker sees each
partition led with a full ISR, then sets `__consumer_offsets`' own
min.insync.replicas (IncrementalAlterConfigs, as for any topic) and waits until
every broker reads min ISR 2 on both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from elr_harness.cluster.kafka_wire import WireConnection, WireError
from elr_harness.cluster.kafka_wire_txn import (
    GROUP_KEY_TYPE,
    TRANSACTION_KEY_TYPE,
    find_coordinator,
)
from elr_harness.cluster.kraft import (
    CONSUMER_OFFSETS_TOPIC,
    GUARDED_MIN_ISR,
    GUARDED_REPLICATION_FACTOR,
    INTERNAL_TOPIC_PARTITIONS,
    INTERNAL_TOPICS,
)
from elr_harness.cluster.observe import MIN_ISR_CONFIG, topic_ready_everywhere
from elr_harness.core.config import ClusterConfig
from elr_harness.core.errors import ClusterStartError
from elr_harness.core.wait import wait_until


class Cluster(Protocol):
    """What guarding needs of cluster.cluster.Cluster (which calls it from `up`)."""

    config: ClusterConfig
    log: Callable[[str], None]

    @property
    def bootstrap(self) -> list[str]: ...

    def admin(self) -> Any: ...

#: The key of the FindCoordinator requests that make the topics exist (any key
#: maps to some partition; nothing is ever committed under it).
PROBE_KEY = "elr-harness-probe"


def guard_internal_topics(cluster: Cluster) -> None:
    """Make `__transaction_state` and `__consumer_offsets` exist with RF 3 and min
    ISR 2 before any client runs (the module docstring says why this way)."""
    config = cluster.config
    timeout_s = config.timeouts.topic_ready_s
    if not wait_until(lambda: _exist_full(cluster.bootstrap, config.timeouts.describe_s),
                      timeout_s, config.partitions_poll_s):
        raise ClusterStartError(f"the internal topics {', '.join(INTERNAL_TOPICS)} did not "
                                f"come up with {INTERNAL_TOPIC_PARTITIONS} partitions led "
                                f"and a full ISR of {GUARDED_REPLICATION_FACTOR} in every "
                                f"broker's view within {timeout_s:.0f} s")
    _set_min_isr(cluster, CONSUMER_OFFSETS_TOPIC, GUARDED_MIN_ISR)
    if not wait_until(lambda: internal_min_isr(cluster.bootstrap, config.timeouts.describe_s)
                      == {t: GUARDED_MIN_ISR for t in INTERNAL_TOPICS},
                      timeout_s, config.partitions_poll_s):
        raise ClusterStartError(f"the internal topics' min.insync.replicas did not read "
                                f"{GUARDED_MIN_ISR} on every broker within {timeout_s:.0f} s")
    cluster.log(f"internal topics {', '.join(INTERNAL_TOPICS)}: RF "
                f"{GUARDED_REPLICATION_FACTOR}, min ISR {GUARDED_MIN_ISR}")


def _exist_full(bootstrap: list[str], timeout_s: float) -> bool:
    """Ask for both coordinators (a broker creates a missing internal topic), then:
    is every partition of both led, with a full ISR, in every broker's view?"""
    for address in bootstrap:
        connection = WireConnection(address, timeout_s)
        try:
            for key_type in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
                find_coordinator(connection, PROBE_KEY, key_type)
            break
        except (WireError, UnicodeDecodeError):
            continue
        finally:
            connection.close()
    return all(topic_ready_everywhere(bootstrap, topic, INTERNAL_TOPIC_PARTITIONS,
                                      GUARDED_REPLICATION_FACTOR, timeout_s)
               for topic in INTERNAL_TOPICS)


def _set_min_isr(cluster: Cluster, topic: str, value: int) -> None:
    """The topic's own min.insync.replicas, set as for any topic."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[ConfigEntry(
        MIN_ISR_CONFIG, str(value), incremental_operation=AlterConfigOpType.SET)])
    admin = cluster.admin()  # must outlive the futures
    timeouts = cluster.config.timeouts
    try:
        futures = admin.incremental_alter_configs(
            [resource], request_timeout=timeouts.create_topic_request_s)
        for future in futures.values():
            future.result(timeout=timeouts.create_topic_result_s)
    except KafkaException as err:
        raise ClusterStartError(f"setting {topic}'s {MIN_ISR_CONFIG} to {value} "
                                f"failed: {err}") from err


def internal_min_isr(bootstrap: list[str], timeout_s: float) -> dict[str, int] | None:
    """Each internal topic's min.insync.replicas as every broker reads it; None when
    a broker did not answer or two brokers read different values."""
    seen: dict[str, int] | None = None
    for address in bootstrap:
        connection = WireConnection(address, timeout_s)
        try:
            configs = connection.topic_configs(list(INTERNAL_TOPICS), [MIN_ISR_CONFIG])
        except (WireError, UnicodeDecodeError):
            return None
        finally:
            connection.close()
        read = {topic: int(c.values[MIN_ISR_CONFIG]) for topic, c in configs.items()
                if c.error_code == 0 and (c.values.get(MIN_ISR_CONFIG) or "").isdigit()}
        if seen is not None and read != seen:
            return None
        seen = read
    return seen
