"""The workload a run drives: producers, consumers and the observer together.

The run orchestration creates the cluster and topics, then

    workload = Workload()
    workload.start(bootstrap, topics, recorder, config)     # clients start now
    ... nemesis runs, reads workload.observer.latest() ...
    workload.wait(config.time_limit_s + slack) / workload.stop()
    summary = final_reads(bootstrap, topics, recorder, config)
    recorder.close()

stats() is a cheap snapshot for the progress display.
"""

from __future__ import annotations

import itertools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException

from elr_harness.core.config import TopicConfig, WorkloadConfig
from elr_harness.core.errors import HarnessError
from elr_harness.workloads.classify import error_name
from elr_harness.workloads.client_thread import ClientThread
from elr_harness.workloads.consumers import ConsumerFactory, ConsumerProcess
from elr_harness.workloads.observer import ObserverLoop, PartitionStateSource
from elr_harness.workloads.producers import (
    PartitionChooser,
    ProducerClient,
    ProducerFactory,
    RateLimiter,
)
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.stats import StatsCollector, WorkloadStats
from elr_harness.workloads.txn_librdkafka import ProducerFactory as TxnProducerFactory
from elr_harness.workloads.txn_workload import TxnClients, build_txn, txn_stop_bound_s
from elr_harness.workloads.validation import validate, validate_targets

log = logging.getLogger(__name__)


def producer_groups(config: WorkloadConfig) -> list[tuple[str, int]]:
    """(acks, slots) per producer client: processes get acks round-robin, then each
    acks level's processes are packed into clients of at most processes_per_client."""
    per_level = {level: 0 for level in config.acks}
    for index in range(config.producers):
        per_level[config.acks[index % len(config.acks)]] += 1
    groups = []
    for level, count in per_level.items():
        while count > 0:
            slots = min(count, config.processes_per_client)
            groups.append((level, slots))
            count -= slots
    return groups


class Workload:
    """Starts and stops every client of one run; thread-safe stats for the display."""

    def __init__(self, *, producer_factory: ProducerFactory | None = None,
                 consumer_factory: ConsumerFactory | None = None,
                 txn_producer_factory: TxnProducerFactory | None = None,
                 java_popen: Callable[..., Any] | None = None) -> None:
        self._producer_factory = producer_factory
        self._consumer_factory = consumer_factory
        self._txn_producer_factory = txn_producer_factory
        self._java_popen = java_popen
        self._producers: list[ProducerClient] = []
        self._consumers: list[ConsumerProcess] = []
        self._txn = TxnClients()
        self._observer: ObserverLoop | None = None
        self._owns_observer = False
        self._observer_source: PartitionStateSource | None = None
        self._stop = threading.Event()
        self._stats: StatsCollector | None = None
        self._config: WorkloadConfig | None = None
        self._started = False

    @property
    def observer(self) -> ObserverLoop | None:
        """The observer loop (latest()/wait_for() for the nemesis), if any."""
        return self._observer

    def start(self, bootstrap: Sequence[str], topics: Sequence[TopicConfig],
              recorder: HistoryRecorder, config: WorkloadConfig, *,
              observer: ObserverLoop | None = None,
              state_source: PartitionStateSource | None = None,
              kafka_libs: Path | None = None) -> None:
        """Start every client; they stop by themselves after config.time_limit_s.

        config.workloads says which: the plain producers and consumers, the
        transactional ones (txn_workload.py; the Java client is compiled against
        `kafka_libs`' kafka-clients and its JVM started here), or both.

        `observer`: an observer loop the caller started and owns (to observe
        beyond the workload, e.g. through heal and final reads). Otherwise, if
        config.observe, the workload runs its own loop (stopped by stop()) from
        `state_source` (left open: the caller made it), or from a cluster
        PartitionObserver on `bootstrap` it creates and closes itself.
        """
        if self._started:
            raise HarnessError("a Workload runs once; make a new one")
        validate(config)
        validate_targets(bootstrap, topics)
        self._started = True
        self._config = config
        self._stats = StatsCollector(config.last_errors_kept)
        deadline = time.monotonic() + config.time_limit_s
        values = itertools.count()
        try:
            if "plain" in config.workloads:
                self._build_clients(bootstrap, topics, recorder, config, deadline,
                                    self._stats, values)
            if "txn" in config.workloads:
                self._txn = build_txn(
                    bootstrap=bootstrap, topics=topics, recorder=recorder, config=config,
                    stats=self._stats, stop=self._stop, deadline=deadline, values=values,
                    kafka_libs=kafka_libs, consumer_factory=self._consumer_factory,
                    producer_factory=self._txn_producer_factory, java_popen=self._java_popen)
        except KafkaException as err:  # librdkafka refused a client configuration
            raise HarnessError(f"cannot create a Kafka client: {error_name(err)} "
                               f"({err})") from err
        self._start_observer(bootstrap, topics, recorder, config, observer, state_source)
        for client in self._clients():
            client.start()

    def _clients(self) -> list[ClientThread]:
        return [*self._producers, *self._consumers, *self._txn.loops, *self._txn.consumers]

    def _build_clients(self, bootstrap: Sequence[str], topics: Sequence[TopicConfig],
                       recorder: HistoryRecorder, config: WorkloadConfig,
                       deadline: float, stats: StatsCollector, values: Iterator[int]) -> None:
        limiter = RateLimiter(config.rate)
        targets = [(t.name, p) for t in topics for p in range(t.partitions)]
        extra = {} if self._producer_factory is None else {
            "producer_factory": self._producer_factory}
        for number, (acks, slots) in enumerate(producer_groups(config)):
            chooser = PartitionChooser(targets, config.partition_choice,
                                       random.Random(f"{config.seed}-producer-{number}"),
                                       start=number)
            self._producers.append(ProducerClient(
                name=f"{number}-acks{acks}", bootstrap=bootstrap, acks=acks, slots=slots,
                chooser=chooser, values=values, recorder=recorder, stats=stats,
                limiter=limiter, config=config, stop=self._stop, deadline=deadline, **extra))
        extra = {} if self._consumer_factory is None else {
            "consumer_factory": self._consumer_factory}
        for number in range(config.consumers):
            topic = topics[number % len(topics)]
            self._consumers.append(ConsumerProcess(
                name=f"{number}", bootstrap=bootstrap, topic=topic.name,
                partitions=range(topic.partitions), recorder=recorder, stats=stats,
                config=config, stop=self._stop, deadline=deadline, **extra))

    def _start_observer(self, bootstrap: Sequence[str], topics: Sequence[TopicConfig],
                        recorder: HistoryRecorder, config: WorkloadConfig,
                        observer: ObserverLoop | None,
                        source: PartitionStateSource | None) -> None:
        if observer is not None:
            self._observer = observer
            return
        if not config.observe:
            return
        if source is None:
            from elr_harness.cluster.observe import PartitionObserver

            source = PartitionObserver(list(bootstrap), timeout_s=config.observe_timeout_s)
            self._observer_source = source
        self._observer = ObserverLoop(source, [t.name for t in topics], recorder,
                                      config.observe_interval_s)
        self._owns_observer = True
        self._observer.start()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until every client finished (time limit or stop); True if they did."""
        end = None if timeout_s is None else time.monotonic() + timeout_s
        for client in self._clients():
            remaining = None if end is None else max(0.0, end - time.monotonic())
            if not client.join(remaining):
                return False
        return True

    def stop(self) -> None:
        """Stop issuing, wait (bounded) for sends in flight, record the rest as info."""
        if not self._started or self._config is None:
            return
        self._stop.set()
        bound = self._config.stop_timeout_s + self._config.poll_timeout_s + 5.0
        if self._txn.loops:  # a transaction in flight ends (bounded) before its JVM goes
            bound = max(bound, txn_stop_bound_s(self._config))
        if not self.wait(bound):
            log.warning("workload clients still running %.0f s after stop", bound)
        self._txn.close(self._config.txn_max_block_ms / 1000 + 10.0)
        if self._owns_observer and self._observer is not None:
            self._observer.stop(self._config.observe_timeout_s + 5.0)
            close = getattr(self._observer_source, "close", None)
            if close is not None:
                close()
        crashed = [c.name for c in self._clients() if c.crashed]
        if crashed:
            raise HarnessError(f"workload clients crashed: {', '.join(crashed)} "
                               "(see the log); the history stays consistent")

    def stats(self) -> WorkloadStats:
        """A snapshot for the progress display (cheap, thread-safe)."""
        if self._stats is None:
            return StatsCollector().snapshot()
        observer = self._observer
        return self._stats.snapshot(
            observer_samples=observer.samples if observer else 0,
            observer_failures=observer.failures if observer else 0)
