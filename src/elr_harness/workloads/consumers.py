"""Consumer processes: assigned partitions, polled in batches, every poll recorded.

A poll line must let the checker tell a continued read from a jump. So the
consumer never lets librdkafka move its position on its own
(auto.offset.reset=error): an out-of-range offset or a detected log
truncation arrives as an error, the poll that got it is recorded, the
consumer repositions the partition itself (its next offset clamped to the
watermarks) and the next poll's invoke says so in `seek`. The initial
position is a seek too.

PositionBook is that bookkeeping without a client; ConsumerProcess drives a
real librdkafka Consumer with it; the final reads reuse both pieces.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from elr_harness.core.config import WorkloadConfig
from elr_harness.core.errors import HistoryError
from elr_harness.core.history import READ_COMMITTED, READ_UNCOMMITTED
from elr_harness.workloads.classify import error_name, needs_reposition
from elr_harness.workloads.client_conf import consumer_conf
from elr_harness.workloads.client_thread import ClientThread
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.stats import StatsCollector

log = logging.getLogger(__name__)

_DECIMAL = re.compile(rb"-?(?:0|[1-9][0-9]*)")
#: librdkafka's event at a partition's end (enable.partition.eof).
PARTITION_EOF = "_PARTITION_EOF"


def parse_value(raw: bytes | None) -> int | None:
    """The int a producer of this run wrote as decimal text, else None (garbage)."""
    if raw is None or not _DECIMAL.fullmatch(raw):
        return None
    return int(raw)


def reposition_target(position: int | None, low: int, high: int) -> int:
    """Where to read on after the position became unusable: as close as the log allows."""
    if position is None:
        return low
    return min(max(position, low), high)


class PositionBook:
    """Next offset per partition, and the seeks the next poll invoke must carry."""

    def __init__(self) -> None:
        self._next: dict[int, int] = {}
        self._pending_seek: dict[int, int] = {}
        self._lost: set[int] = set()

    def seek(self, partition: int, offset: int) -> None:
        """The consumer was (re)positioned: reading continues at `offset`."""
        self._next[partition] = offset
        self._pending_seek[partition] = offset
        self._lost.discard(partition)

    def advance(self, partition: int, offset: int) -> None:
        """A record at `offset` was read: the partition continues after it."""
        self._next[partition] = offset + 1

    def reached(self, partition: int, offset: int) -> None:
        """The consumer reached the partition's end at `offset` (a partition-EOF event):
        it continues there, past markers and aborted records that returned nothing."""
        current = self._next.get(partition)
        self._next[partition] = offset if current is None else max(current, offset)

    def mark_lost(self, partition: int) -> None:
        """The client stopped fetching this partition; it needs an explicit seek."""
        self._lost.add(partition)

    def take_seek(self) -> dict[int, int] | None:
        """The seeks to put on the next poll invoke (then forgotten), or None."""
        if not self._pending_seek:
            return None
        seek = dict(sorted(self._pending_seek.items()))
        self._pending_seek.clear()
        return seek

    def position(self, partition: int) -> int | None:
        return self._next.get(partition)

    @property
    def lost(self) -> frozenset[int]:
        return frozenset(self._lost)


@dataclass
class PollOutcome:
    """What one consume() call returned, in the history's terms."""

    records: list[list[Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def completion(self) -> tuple[str, dict[str, Any]]:
        """The completion type and fields: fail only when nothing at all was read."""
        if self.errors and not self.records:
            fields: dict[str, Any] = {"error": self.errors[0]}
            if len(self.errors) > 1:
                fields["errors"] = self.errors
            return "fail", fields
        fields = {"records": self.records}
        if self.errors:  # records were read: the poll happened; errors ride along
            fields["errors"] = self.errors
        return "ok", fields


def collect(messages: Iterable[Any], book: PositionBook) -> PollOutcome:
    """Turn a consume() batch into records and errors, advancing the book (a
    partition-EOF event, where the consumer asked for them, is no error: it says
    where the partition's end is)."""
    outcome = PollOutcome()
    for message in messages:
        err = message.error()
        if err is not None:
            name = err.name()
            if name == PARTITION_EOF and message.partition() is not None \
                    and message.offset() is not None and message.offset() >= 0:
                book.reached(message.partition(), message.offset())
                continue
            outcome.errors.append(name)
            partition = message.partition()
            if needs_reposition(name) and partition is not None and partition >= 0:
                book.mark_lost(partition)
            continue
        partition, offset = message.partition(), message.offset()
        outcome.records.append([partition, offset, parse_value(message.value())])
        book.advance(partition, offset)
    return outcome


class FetchWatermarks:
    """The high watermarks a consumer's fetch responses carried, from librdkafka's
    statistics (stats_cb, served inside consume() in the consumer's own thread).

    Not get_watermark_offsets(cached=True): in librdkafka 2.16 that call waits
    for the topic's write lock while holding Python's GIL, and in an ELR-on
    verdict run it deadlocked with librdkafka's own thread handling an
    OffsetForLeaderEpoch response after a leader change, freezing the harness.
    """

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self._marks: dict[int, int] = {}
        self._stable: dict[int, int] = {}

    def on_stats(self, text: str) -> None:
        try:
            stats = orjson.loads(text)
            partitions = stats["topics"][self.topic]["partitions"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return
        for key, partition in partitions.items():
            if not key.isdigit() or not isinstance(partition, dict):
                continue
            high, stable = partition.get("hi_offset"), partition.get("ls_offset")
            if isinstance(high, int) and high >= 0:
                self._marks[int(key)] = high
            if isinstance(stable, int) and stable >= 0:
                self._stable[int(key)] = stable

    def latest(self, partitions: Iterable[int]) -> dict[int, int]:
        """{partition: hwm} as last reported, for the partitions that have one."""
        return {p: self._marks[p] for p in partitions if p in self._marks}

    def stable(self, partitions: Iterable[int]) -> dict[int, int]:
        """{partition: LSO} as the last fetch response said it (its LastStableOffset,
        librdkafka's ls_offset), for the partitions that have one."""
        return {p: self._stable[p] for p in partitions if p in self._stable}


def positions(book: PositionBook, partitions: Iterable[int]) -> dict[int, int]:
    """{partition: next offset} of the partitions the book has a position for."""
    found = {p: book.position(p) for p in partitions}
    return {p: offset for p, offset in found.items() if offset is not None}


def committed_fields(book: PositionBook, marks: FetchWatermarks,
                     partitions: Sequence[int]) -> dict[str, Any]:
    """A read_committed ok poll's `position` and `last_stable_offset` (HISTORY.md v4)."""
    return {"position": positions(book, partitions),
            "last_stable_offset": marks.stable(partitions)}


def query_watermarks(consumer: Any, topic: str, partition: int,
                     timeout_s: float) -> tuple[int, int] | None:
    """(low, high) from the partition's leader now, or None if it did not answer."""
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                   timeout=timeout_s, cached=False)
    except KafkaException:
        return None
    if low is None or high is None or low < 0 or high < 0:
        return None
    return low, high


ConsumerFactory = Callable[[dict[str, Any]], Any]


class ConsumerProcess(ClientThread):
    """One consumer process reading every given partition of one topic."""

    def __init__(self, *, name: str, bootstrap: Sequence[str], topic: str,
                 partitions: Sequence[int], recorder: HistoryRecorder,
                 stats: StatsCollector, config: WorkloadConfig, stop: threading.Event,
                 deadline: float, consumer_factory: ConsumerFactory = Consumer,
                 clock: Callable[[], float] = time.monotonic,
                 isolation: str = READ_UNCOMMITTED) -> None:
        super().__init__(f"consumer-{name}")
        self.topic = topic
        #: read_committed: polls say so, and carry `position` and `last_stable_offset`
        #: instead of `high_watermark` (librdkafka's fetch at that level ends at the LSO)
        self.isolation = isolation
        self.partitions = tuple(partitions)
        self._recorder = recorder
        self._stats = stats
        self._config = config
        self._stop = stop
        self._deadline = deadline
        self._clock = clock
        self._factory = consumer_factory
        self._watermarks = FetchWatermarks(topic)
        committed = isolation == READ_COMMITTED
        self._conf = consumer_conf(bootstrap, config, name, on_stats=self._watermarks.on_stats,
                                   isolation=isolation, partition_eof=committed)
        self._conf["error_cb"] = self._client_error
        self.process = recorder.new_process()
        self.book = PositionBook()
        self._assigned: set[int] = set()
        self._consumer: Any = None
        self._open_invoke = False

    def _running(self) -> bool:
        return not self._stop.is_set() and self._clock() < self._deadline

    def _run(self) -> None:
        try:
            self._consumer = self._factory(dict(self._conf))
            for partition in self.partitions:
                self.book.mark_lost(partition)  # not positioned yet
            while self._running():
                if self.book.lost:
                    self._reposition()
                if not self._assigned:
                    self._stop.wait(min(self._config.unassigned_wait_s,
                                        self._config.poll_timeout_s))
                    continue
                self.poll_once()
        except BaseException as err:  # a harness bug: keep the history consistent
            self.crashed = err
            log.exception("%s crashed", self.name)
            if self._open_invoke:
                try:
                    self._complete("info", {"error": f"HARNESS_ERROR:{type(err).__name__}"})
                except HistoryError:
                    pass
        finally:
            self._close_client()

    def poll_once(self) -> None:
        """One recorded poll: invoke (with any seek), consume, completion."""
        invoke: dict[str, Any] = {"process": self.process, "type": "invoke", "f": "poll",
                                  "topic": self.topic}
        if self.isolation == READ_COMMITTED:
            invoke["isolation"] = READ_COMMITTED
        seek = self.book.take_seek()
        if seek is not None:
            invoke["seek"] = seek
        self._recorder.record(**invoke)
        self._open_invoke = True
        try:
            messages = self._consumer.consume(self._config.poll_batch,
                                              self._config.poll_timeout_s)
        except (KafkaException, RuntimeError) as err:
            self._complete("fail", {"error": error_name(err)})
            self._restart_client()
            return
        outcome = collect(messages, self.book)
        op_type, fields = outcome.completion()
        if op_type == "ok" and self.isolation == READ_COMMITTED:
            fields.update(committed_fields(self.book, self._watermarks, sorted(self._assigned)))
        elif op_type == "ok":
            fields["high_watermark"] = self._watermarks.latest(sorted(self._assigned))
        self._complete(op_type, fields)

    def _complete(self, op_type: str, fields: dict[str, Any]) -> None:
        self._recorder.record(process=self.process, type=op_type, f="poll", topic=self.topic,
                              **fields)
        self._open_invoke = False
        self._stats.completed("poll", op_type, self.process, error=fields.get("error"))

    def _reposition(self) -> None:
        """Seek every lost partition to its next offset clamped to the watermarks."""
        for partition in sorted(self.book.lost):
            if not self._running():
                return
            marks = query_watermarks(self._consumer, self.topic, partition,
                                     self._config.watermark_timeout_s)
            if marks is None:
                continue  # the leader did not answer; try again after the next poll
            low, high = marks
            position = self.book.position(partition)
            if position is None and self._config.consumer_start == "latest":
                target = high
            else:
                target = reposition_target(position, low, high)
            self._assign(partition, target)

    def _assign(self, partition: int, offset: int) -> None:
        # seek() is refused once librdkafka stopped the partition after an
        # offset-reset error, so the partition is unassigned and assigned anew.
        if partition in self._assigned:
            self._consumer.incremental_unassign([TopicPartition(self.topic, partition)])
            self._assigned.discard(partition)
        self._consumer.incremental_assign([TopicPartition(self.topic, partition, offset)])
        self._assigned.add(partition)
        self.book.seek(partition, offset)

    def _restart_client(self) -> None:
        """consume() itself failed: a new client continues where the book says."""
        self._close_client()
        self._consumer = self._factory(dict(self._conf))
        assigned, self._assigned = sorted(self._assigned), set()
        for partition in assigned:
            position = self.book.position(partition)
            if position is None:
                self.book.mark_lost(partition)
            else:
                self._assign(partition, position)

    def _close_client(self) -> None:
        if self._consumer is None:
            return
        try:
            self._consumer.close()
        except (KafkaException, RuntimeError) as err:
            log.debug("%s: close failed: %s", self.name, err)
        self._consumer = None

    def _client_error(self, err: KafkaError) -> None:
        self._stats.client_error("poll", self.process, err.name())
