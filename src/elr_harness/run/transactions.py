"""A run's transactions (`--workload txn`, `--txn-client`, `--txn-version`): the
checks that need the Kafka under test, made before any container starts, and
test.json's `transactions` (HISTORY.md v4)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from elr_harness.cluster.distribution import KafkaDistribution
from elr_harness.core.config import ClusterConfig, WorkloadConfig
from elr_harness.core.errors import BadInput, DistributionError
from elr_harness.core.history import JAVA_CLIENT

#: The release from which Kafka has the transaction.version feature (KIP-890's
#: protocol at level 2), and the level it finalizes for a new cluster there.
FIRST_TRANSACTION_VERSION_RELEASE = (4, 0)
RELEASE_TRANSACTION_VERSION = 2
#: The feature's class in the distribution's jars: a build whose version string
#: says nothing still shows whether it has the feature.
_FEATURE_CLASS = "org.apache.kafka.server.common.TransactionVersion"


def has_transaction_version(dist: KafkaDistribution) -> bool:
    """Whether the release can finalize transaction.version (from Kafka 4.0)."""
    match = re.match(r"([0-9]+)\.([0-9]+)", dist.version)
    if match:
        return (int(match[1]), int(match[2])) >= FIRST_TRANSACTION_VERSION_RELEASE
    try:
        dist.main_class((_FEATURE_CLASS,))
    except DistributionError:
        return False
    return True


def check_transactions(cluster: ClusterConfig, workload: WorkloadConfig,
                       dist: KafkaDistribution, say: Callable[[str], None]) -> None:
    """BadInput (one line, exit 2) for a transaction setting the Kafka under test or
    this machine cannot honour: a --txn-version the release cannot finalize, or
    --txn-client java without a kafka-clients jar or a JDK to compile the client
    against it (which is compiled here, once, when it can be)."""
    if cluster.transaction_version is not None and not has_transaction_version(dist):
        raise BadInput(f"--txn-version {cluster.transaction_version}: Kafka {dist.version} "
                       "cannot finalize transaction.version (the feature exists from "
                       "Kafka 4.0)")
    if "txn" in workload.workloads and workload.txn_client == JAVA_CLIENT:
        from elr_harness.workloads.txn_jvm import build_java_client

        build_java_client(dist.libs, workload, say)


def transaction_version_of(cluster: ClusterConfig, kafka_version: str | None) -> int | None:
    """The transaction.version the cluster runs at: the one asked for, else the
    release's own (2 from Kafka 4.0, when the version says so)."""
    if cluster.transaction_version is not None:
        return cluster.transaction_version
    match = re.match(r"([0-9]+)\.([0-9]+)", kafka_version or "")
    if match and (int(match[1]), int(match[2])) >= FIRST_TRANSACTION_VERSION_RELEASE:
        return RELEASE_TRANSACTION_VERSION
    return None


def transactions_json(cluster: ClusterConfig, workload: WorkloadConfig,
                      kafka_version: str | None) -> dict[str, Any] | None:
    """test.json's `transactions` for a run with the txn workload, else None (the
    key stays out: a run without transactions writes test.json as it always did)."""
    if "txn" not in workload.workloads:
        return None
    return {"enabled": True, "client": workload.txn_client,
            "transaction_version": transaction_version_of(cluster, kafka_version),
            "transaction_version_requested": cluster.transaction_version,
            "transaction_timeout_ms": workload.txn_timeout_ms,
            "abort_check_interval_ms": cluster.timings.transaction_abort_check_interval_ms,
            "hang_margin_ms": workload.txn_hang_margin_ms,
            "producers": workload.txn_producers,
            "read_committed_consumers": workload.read_committed_consumers}
