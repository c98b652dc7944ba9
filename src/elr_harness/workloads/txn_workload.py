"""The transactional workload's clients, built for the Workload (`--workload txn`).

txn_producers producer processes, each its own transactional.id, on the chosen
client (the Java client: one JVM for them all; librdkafka: one Producer each),
paced together by txn_rate; and read_committed_consumers consumer processes
beside the plain ones. Values: librdkafka's transactions share the plain
producers' counter; the Java client's come from txn_value_base up, a disjoint
range.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elr_harness.core.config import TopicConfig, WorkloadConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.history import JAVA_CLIENT, READ_COMMITTED
from elr_harness.workloads.consumers import ConsumerFactory, ConsumerProcess
from elr_harness.workloads.producers import RateLimiter
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.stats import StatsCollector
from elr_harness.workloads.txn_librdkafka import LibrdkafkaTxnClient, ProducerFactory
from elr_harness.workloads.txn_plan import TxnClient, TxnLoop, TxnPlanner


def txn_ids(config: WorkloadConfig) -> list[str]:
    """The transactional.id of each producer process: one per process, the same for
    every instance that replaces it."""
    return [f"{txn_id_prefix(config)}{number}" for number in range(config.txn_producers)]


def txn_id_prefix(config: WorkloadConfig) -> str:
    return f"elr-txn-{config.txn_client}-"


@dataclass
class TxnClients:
    """What the transactional workload runs: its loops, its read_committed consumers,
    and the Java client's JVM when it has one (closed after the loops end)."""

    loops: list[TxnLoop] = field(default_factory=list)
    consumers: list[ConsumerProcess] = field(default_factory=list)
    jvm: Any = None

    def close(self, timeout_s: float) -> None:
        if self.jvm is not None:
            self.jvm.close(timeout_s)


def build_txn(*, bootstrap: Sequence[str], topics: Sequence[TopicConfig],
              recorder: HistoryRecorder, config: WorkloadConfig, stats: StatsCollector,
              stop: threading.Event, deadline: float, values: Iterator[int],
              kafka_libs: Path | None = None,
              consumer_factory: ConsumerFactory | None = None,
              producer_factory: ProducerFactory | None = None,
              java_popen: Callable[..., Any] | None = None) -> TxnClients:
    """The transactional producers and read_committed consumers (not started yet)."""
    built = TxnClients()
    extra = {} if consumer_factory is None else {"consumer_factory": consumer_factory}
    for number in range(config.read_committed_consumers):
        topic = topics[number % len(topics)]
        built.consumers.append(ConsumerProcess(
            name=f"rc-{number}", bootstrap=bootstrap, topic=topic.name,
            partitions=range(topic.partitions), recorder=recorder, stats=stats,
            config=config, stop=stop, deadline=deadline, isolation=READ_COMMITTED, **extra))
    clients: list[TxnClient]
    if config.txn_client == JAVA_CLIENT:
        built.jvm, clients = _java_clients(bootstrap, config, kafka_libs, java_popen)
        values = itertools.count(config.txn_value_base)
    else:
        extra = {} if producer_factory is None else {"producer_factory": producer_factory}
        clients = [LibrdkafkaTxnClient(txn_id=txn_id, bootstrap=list(bootstrap),
                                       config=config, **extra)
                   for txn_id in txn_ids(config)]
    targets = [(t.name, p) for t in topics for p in range(t.partitions)]
    limiter = RateLimiter(config.txn_rate)
    for number, client in enumerate(clients):
        planner = TxnPlanner(targets, values, random.Random(f"{config.seed}-txn-{number}"),
                             config.txn_min_sends, config.txn_max_sends,
                             config.txn_abort_ratio)
        built.loops.append(TxnLoop(client=client, planner=planner, recorder=recorder,
                                   stats=stats, limiter=limiter, config=config, stop=stop,
                                   deadline=deadline))
    return built


def _java_clients(bootstrap: Sequence[str], config: WorkloadConfig, libs: Path | None,
                  popen: Callable[..., Any] | None) -> tuple[Any, list[TxnClient]]:
    """The Java client's JVM (compiled against libs' kafka-clients, started) and a
    TxnClient per producer slot."""
    from elr_harness.workloads.txn_jvm import (
        JavaTxnClient,
        JavaTxnProcess,
        build_java_client,
        java_argv,
    )

    if libs is None:
        raise BadInput("--txn-client java needs the Kafka under test's libs/ (its "
                       "kafka-clients jar)")
    classes = build_java_client(libs, config)
    argv = java_argv(classes, libs, bootstrap, config, txn_id_prefix(config))
    jvm = JavaTxnProcess(argv, config.txn_producers,
                         **({} if popen is None else {"popen": popen}))
    jvm.start(config.txn_java_start_s)
    return jvm, [JavaTxnClient(jvm, slot, txn_id, config)
                 for slot, txn_id in enumerate(txn_ids(config))]


def txn_stop_bound_s(config: WorkloadConfig) -> float:
    """How long a transaction in flight may take to end after stop: its calls'
    bounds (a send, the commit and abort attempts, a close) and a margin."""
    block_s = config.txn_max_block_ms / 1000
    return block_s * (2 + 2 * config.txn_commit_attempts) + 10.0
