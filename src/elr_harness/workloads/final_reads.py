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
from elr_harness.workloads.classify import error_name
from elr_harness.workloads.client_conf import consumer_conf
from elr_harness.workloads.consumers import (
    ConsumerFactory,
    FetchWatermarks,
    PositionBook,
    collect,
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
    #: High watermark it had to reach.
    end: int | None
    #: Position reached (next offset after the last record read).
    reached: int | None
    records: int


@dataclass(frozen=True)
class FinalReadSummary:
    partitions: tuple[PartitionFinalRead, ...]

    @property
    def complete(self) -> bool:
        return all(p.complete for p in self.partitions)

    @property
    def incomplete(self) -> list[tuple[str, int]]:
        return [(p.topic, p.partition) for p in self.partitions if not p.complete]

    def end_offsets(self) -> dict[str, dict[int, int | None]]:
        ends: dict[str, dict[int, int | None]] = {}
        for p in self.partitions:
            ends.setdefault(p.topic, {})[p.partition] = p.end
        return ends


def final_reads(bootstrap: Sequence[str], topics: Sequence[TopicConfig],
                recorder: HistoryRecorder, config: WorkloadConfig, *,
                consumer_factory: ConsumerFactory = Consumer,
                clock: Callable[[], float] = time.monotonic) -> FinalReadSummary:
    """Read every partition of `topics` to its end (bounded); record every poll."""
    validate(config)
    validate_targets(bootstrap, topics)
    deadline = clock() + config.final_read_timeout_s
    targets = [(t.name, p) for t in topics for p in range(t.partitions)]
    reader = _PartitionReader(bootstrap, recorder, config, consumer_factory, clock, deadline)
    with ThreadPoolExecutor(max_workers=min(config.final_read_parallelism, len(targets)),
                            thread_name_prefix="final-read") as pool:
        results = list(pool.map(lambda target: reader.read(*target), targets))
    return FinalReadSummary(tuple(results))


class _PartitionReader:
    def __init__(self, bootstrap: Sequence[str], recorder: HistoryRecorder,
                 config: WorkloadConfig, factory: ConsumerFactory,
                 clock: Callable[[], float], deadline: float) -> None:
        self._bootstrap = bootstrap
        self._recorder = recorder
        self._config = config
        self._factory = factory
        self._clock = clock
        self._deadline = deadline

    def read(self, topic: str, partition: int) -> PartitionFinalRead:
        process = self._recorder.new_process()
        common = {"process": process, "f": "poll", "topic": topic, "final": True}
        watermarks = FetchWatermarks(topic)
        conf = consumer_conf(self._bootstrap, self._config, f"final-{topic}-{partition}",
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
                invoke = {**common, "type": "invoke"}
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
                if op_type == "ok":
                    records += len(outcome.records)
                    # never less than the end it reads to: rule (b) needs it on every
                    # ok poll, and the fetch statistics may not have arrived yet
                    seen = watermarks.latest([partition])
                    seen[partition] = max(seen.get(partition, end), end)
                    fields["high_watermark"] = seen
                self._recorder.record(**common, type=op_type, **fields)
                position = book.position(partition)
                if partition not in book.lost and position is not None and position >= end:
                    return PartitionFinalRead(topic, partition, process, True, start, end,
                                              position, records)
            self._recorder.record(**common, type="invoke")
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
