"""Checks of a WorkloadConfig before anything starts.

The CLI calls validate() right after parsing flags, so a typo fails with one
clear BadInput (exit 2) instead of a half-started run or a librdkafka trace.
"""

from __future__ import annotations

from collections.abc import Sequence

from elr_harness.core.config import KafkaTimings, TopicConfig, WorkloadConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.validate import validate_config


def validate(config: WorkloadConfig) -> None:
    """Raise BadInput naming the first impossible workload setting: each field by its
    own rule (core.validate's, the one place they are written), then the rules that
    tie fields together."""
    validate_config({"workload": config}, where=_named)
    if config.producers < len(config.acks):
        unused = ", ".join(config.acks[config.producers:])
        raise BadInput(f"{config.producers} producer(s) cannot cover {len(config.acks)} acks "
                       f"levels (acks {unused} would have no producer): raise --producers")
    if config.idempotent and set(config.acks) != {"all"}:
        raise BadInput("idempotent producers need acks 'all' only "
                       f"(librdkafka refuses other levels), got {list(config.acks)}")
    for flag, count in (("--producers", config.producers), ("--consumers", config.consumers)):
        if count > config.max_clients:
            raise BadInput(f"{flag} {count} is more than {config.max_clients} clients "
                           "(each is a librdkafka client with its own threads)")
    if config.request_timeout_ms > config.message_timeout_ms:
        raise BadInput(f"request timeout ({config.request_timeout_ms} ms) must not exceed the "
                       f"message timeout ({config.message_timeout_ms} ms)")
    if config.linger_ms >= config.message_timeout_ms:
        raise BadInput("linger_ms must be below the message timeout")
    if config.socket_timeout_ms < config.fetch_wait_max_ms + 1000:
        raise BadInput("socket timeout must be at least fetch_wait_max_ms + 1000 ms "
                       "(librdkafka's rule)")
    if "txn" in config.workloads:
        _validate_txn(config)


def _validate_txn(config: WorkloadConfig) -> None:
    """The transactional workload's rules across fields (each field's own: core.validate)."""
    if config.txn_min_sends > config.txn_max_sends:
        raise BadInput(f"[workload] txn_min_sends ({config.txn_min_sends}) is more than "
                       f"txn_max_sends ({config.txn_max_sends})")
    for name, count in (("txn_producers", config.txn_producers),
                        ("read_committed_consumers", config.read_committed_consumers)):
        if count > config.max_clients:
            raise BadInput(f"[workload] {name} {count} is more than {config.max_clients} "
                           "clients")
    if config.txn_client == "librdkafka" and config.txn_timeout_ms < config.message_timeout_ms:
        # librdkafka refuses a transactional producer whose messages outlive its transaction
        raise BadInput(f"[workload] txn_timeout_ms ({config.txn_timeout_ms}) must be at least "
                       f"the message timeout ({config.message_timeout_ms} ms) for librdkafka")
    if config.txn_delivery_timeout_ms < config.linger_ms + config.request_timeout_ms:
        raise BadInput(f"[workload] txn_delivery_timeout_ms ({config.txn_delivery_timeout_ms}) "
                       "must be at least linger_ms + request_timeout_ms (Kafka's rule)")


def validate_txn_cluster(config: WorkloadConfig, timings: KafkaTimings) -> None:
    """A transaction timeout the brokers accept (transaction.max.timeout.ms), checked
    before anything starts instead of failing every InitProducerId."""
    if "txn" in config.workloads and config.txn_timeout_ms > timings.transaction_max_timeout_ms:
        raise BadInput(f"[workload] txn_timeout_ms ({config.txn_timeout_ms}) is more than the "
                       f"brokers' transaction.max.timeout.ms "
                       f"({timings.transaction_max_timeout_ms})")


#: The flags that set workload fields (the messages name them).
_FLAGS = {"producers": "--producers", "consumers": "--consumers", "acks": "--acks",
          "processes_per_client": "--concurrency", "rate": "--rate",
          "time_limit_s": "--time-limit", "idempotent": "--idempotent",
          "client_debug": "--client-debug", "workloads": "--workload",
          "txn_client": "--txn-client"}


def _named(path: str) -> str:
    """A workload field as its flag, else as its [workload] setting."""
    field = path.rpartition(".")[2]
    return _FLAGS.get(field, f"[workload] {field}")


def validate_targets(bootstrap: Sequence[str], topics: Sequence[TopicConfig]) -> None:
    """Raise BadInput when there is nothing to connect to or write to."""
    if isinstance(bootstrap, str) or not bootstrap or not all(bootstrap):
        raise BadInput(f"bootstrap must be a non-empty list of host:port, got {bootstrap!r}")
    if not topics:
        raise BadInput("the workload needs at least one topic")
    for topic in topics:
        if not topic.name:
            raise BadInput("a topic needs a name")
        if topic.partitions < 1:
            raise BadInput(f"topic {topic.name} needs at least one partition")
