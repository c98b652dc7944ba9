"""Final reads: after healing, read every partition from its start to its end.

For each partition a fresh consumer (a fresh process id) asks the leader for
the watermarks right before reading: start = low watermark, end = high
watermark. It then polls until its position reaches the end, each poll
recorded with `final: true`, the first invoke carrying `seek {p: start}` and
every ok poll the high watermark it reads to (`high_watermark {p: end}`, or
higher if the consumer saw more). Only the contract's fields say whether a
read is complete (HISTORY.md, rule (b)): records short of a reported high
watermark are an incomplete read, which makes the verdict unknown rather than
valid. A partition that cannot be read to its end before the deadline also
gets one final poll of type `info` with error FINAL_READ_INCOMPLETE.

With transactions (HISTORY.md v4, "Final reads with transactions") every
partition is read at both levels: the read_uncommitted read as above, each ok
poll also carrying `position` (the consumer's next offset, past a trailing
commit or abort marker, which partition-EOF events report); then, once the
transactions a dead producer left open have been aborted by their
coordinators (the caller's `txn_settle_s` after the final reads began), a
read_committed read of every partition, each poll saying `isolation`, each
ok poll `position` and `last_stable_offset`, read until its position reaches
the LSO (ListOffsets at read_committed, or a higher one a fetch reported). A
run without transactions reads as it always did.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from elr_harness.core.config import TopicConfig, WorkloadConfig
from elr_harness.core.history import READ_COMMITTED, READ_UNCOMMITTED
from elr_harness.workloads.classify import error_name
from elr_harness.workloads.client_conf import consumer_conf
from elr_harness.workloads.consumers import (
    ConsumerFactory,
    FetchWatermarks,
    PositionBook,
    collect,
    committed_fields,
    positions,
    query_watermarks,
    reposition_target,
)
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.validation import validate, validate_targets

log = logging.getLogger(__name__)

FINAL_READ_INCOMPLETE = "FINAL_READ_INCOMPLETE"


@dataclass(frozen=True)
class PartitionFinalRead:
    """How the final read of one partition ended."""

    topic: str
    partition: int
    process: int
    complete: bool
    #: Low watermark the read started at (None if the leader never answered).
    start: int | None
    #: High watermark it had to reach (at read_committed: the LSO).
    end: int | None
    #: Position reached (next offset after the last record read).
    reached: int | None
    records: int


@dataclass(frozen=True)
class FinalReadSummary:
    partitions: tuple[PartitionFinalRead, ...]
    #: The read_committed final reads (a run with transactions), ends at the LSO.
    committed: tuple[PartitionFinalRead, ...] = ()

    @property
    def complete(self) -> bool:
        return all(p.complete for p in (*self.partitions, *self.committed))

    @property
    def incomplete(self) -> list[tuple[str, int]]:
        return [(p.topic, p.partition) for p in self.partitions if not p.complete]

    @property
    def incomplete_committed(self) -> list[tuple[str, int]]:
        return [(p.topic, p.partition) for p in self.committed if not p.complete]

    def end_offsets(self, committed: bool = False) -> dict[str, dict[int, int | None]]:
        ends: dict[str, dict[int, int | None]] = {}
        for p in self.committed if committed else self.partitions:
            ends.setdefault(p.topic, {})[p.partition] = p.end
        return ends


def final_reads(bootstrap: Sequence[str], topics: Sequence[TopicConfig],
                recorder: HistoryRecorder, config: WorkloadConfig, *,
                txn_settle_s: float = 0.0,
                consumer_factory: ConsumerFactory = Consumer,
                clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep) -> FinalReadSummary:
    """Read every partition of `topics` to its end (bounded); record every poll. With
    the txn workload, then at read_committed too, `txn_settle_s` after this began
    (the transaction timeout and the coordinators' abort check, waited out once)."""
    validate(config)
    validate_targets(bootstrap, topics)
    began = clock()
    txn = "txn" in config.workloads
    plain = _read_every(bootstrap, topics, recorder, config, consumer_factory, clock,
                        READ_UNCOMMITTED, with_position=txn)
    if not txn:
        return FinalReadSummary(plain)
    wait = began + txn_settle_s - clock()
    if wait > 0:
        log.info("waiting %.1f s for abandoned transactions to be aborted", wait)
        sleep(wait)
    committed = _read_every(bootstrap, topics, recorder, config, consumer_factory, clock,
                            READ_COMMITTED, with_position=True)
    return FinalReadSummary(plain, committed)


def _read_every(bootstrap: Sequence[str], topics: Sequence[TopicConfig],
                recorder: HistoryRecorder, config: WorkloadConfig,
                factory: ConsumerFactory, clock: Callable[[], float], isolation: str,
                with_position: bool) -> tuple[PartitionFinalRead, ...]:
    """Every partition read at one isolation level, final_read_parallelism at a time."""
    deadline = clock() + config.final_read_timeout_s
    targets = [(t.name, p) for t in topics for p in range(t.partitions)]
    reader = _PartitionReader(bootstrap, recorder, config, factory, clock, deadline,
                              isolation, with_position)
    with ThreadPoolExecutor(max_workers=min(config.final_read_parallelism, len(targets)),
                            thread_name_prefix="final-read") as pool:
        return tuple(pool.map(lambda target: reader.read(*target), targets))


class _PartitionReader:
    def __init__(self, bootstrap: Sequence[str], recorder: HistoryRecorder,
                 config: WorkloadConfig, factory: ConsumerFactory,
                 clock: Callable[[], float], deadline: float,
                 isolation: str = READ_UNCOMMITTED, with_position: bool = False) -> None:
        self._bootstrap = bootstrap
        self._recorder = recorder
        self._config = config
        self._factory = factory
        self._clock = clock
        self._deadline = deadline
        self._committed = isolation == READ_COMMITTED
        #: position on ok polls and partition-EOF events (a run with transactions)
        self._with_position = with_position or self._committed

    def read(self, topic: str, partition: int) -> PartitionFinalRead:
        process = self._recorder.new_process()
        common = {"process": process, "f": "poll", "topic": topic, "final": True}
        watermarks = FetchWatermarks(topic)
        name = f"final-{'rc-' if self._committed else ''}{topic}-{partition}"
        if self._with_position:
            conf = consumer_conf(self._bootstrap, self._config, name,
                                 on_stats=watermarks.on_stats,
                                 isolation=READ_COMMITTED if self._committed
                                 else READ_UNCOMMITTED, partition_eof=True)
        else:
            conf = consumer_conf(self._bootstrap, self._config, name,
                                 on_stats=watermarks.on_stats)
        consumer = self._factory(conf)
        book = PositionBook()
        start: int | None = None
        end: int | None = None
        records = 0
        try:
            while True:
                remaining = self._deadline - self._clock()
                if remaining <= 0:
                    break
                if end is None or partition in book.lost:
                    marks = query_watermarks(consumer, topic, partition,
                                             min(self._config.watermark_timeout_s, remaining))
                    if marks is None:
                        time.sleep(min(self._config.watermark_retry_s, max(remaining, 0)))
                        continue
                    low, high = marks
                    target = low if end is None else reposition_target(
                        book.position(partition), low, high)
                    if start is None:
                        start = low
                    end = high  # after a reset the log moved: read to where it ends now
                    consumer.assign([TopicPartition(topic, partition, target)])
                    book.seek(partition, target)
                if self._committed:  # the LSO may rise while a hanging one is aborted
                    end = max([end, *watermarks.stable([partition]).values()])
                invoke = {**common, "type": "invoke"}
                if self._committed:
                    invoke["isolation"] = READ_COMMITTED
                seek = book.take_seek()
                if seek is not None:
                    invoke["seek"] = seek
                self._recorder.record(**invoke)
                try:
                    messages = consumer.consume(self._config.poll_batch,
                                                max(0.05, min(self._config.poll_timeout_s,
                                                              remaining)))
                except (KafkaException, RuntimeError) as err:
                    self._recorder.record(**common, type="fail", error=error_name(err))
                    consumer = self._renew(consumer, conf)
                    book.mark_lost(partition)
                    continue
                outcome = collect(messages, book)
                op_type, fields = outcome.completion()
                if op_type == "ok" and self._committed:
                    records += len(outcome.records)
                    fields.update(committed_fields(book, watermarks, [partition]))
                    # never less than the LSO it reads to (the fetch may not have said it)
                    stable = fields["last_stable_offset"]
                    stable[partition] = end = max(stable.get(partition, end), end)
                elif op_type == "ok":
                    records += len(outcome.records)
                    # never less than the end it reads to: rule (b) needs it on every
                    # ok poll, and the fetch statistics may not have arrived yet
                    seen = watermarks.latest([partition])
                    seen[partition] = max(seen.get(partition, end), end)
                    fields["high_watermark"] = seen
                    if self._with_position:
                        fields["position"] = positions(book, [partition])
                self._recorder.record(**common, type=op_type, **fields)
                position = book.position(partition)
                if partition not in book.lost and position is not None and position >= end:
                    return PartitionFinalRead(topic, partition, process, True, start, end,
                                              position, records)
            self._recorder.record(**common, type="invoke",
                                  **({"isolation": READ_COMMITTED} if self._committed else {}))
            self._recorder.record(**common, type="info", error=FINAL_READ_INCOMPLETE)
            log.warning("final read of %s-%d incomplete: at %s of %s..%s", topic, partition,
                        book.position(partition), start, end)
            return PartitionFinalRead(topic, partition, process, False, start, end,
                                      book.position(partition), records)
        finally:
            _close(consumer)

    def _renew(self, consumer: Any, conf: dict[str, Any]) -> Any:
        _close(consumer)
        return self._factory(conf)


def _close(consumer: Any) -> None:
    try:
        consumer.close()
    except (KafkaException, RuntimeError) as err:
        log.debug("final-read consumer close failed: %s", err)
