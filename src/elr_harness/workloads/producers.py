"""Producer processes: unique integer values sent with acks 0, 1 or all.

A Jepsen process has at most one operation in flight. Here a process is a
slot: it records `invoke`, hands the record to librdkafka asynchronously, and
issues its next send only after the delivery report of the previous one was
recorded as ok, fail or info. One librdkafka Producer (one worker thread)
serves several slots of the same acks level; delivery reports run in that
thread (inside poll), so a slot is only ever touched by one thread.

After an `info` the process id is retired and the slot takes a fresh one, as
HISTORY.md requires.
"""

from __future__ import annotations

import functools
import itertools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from elr_harness.core.config import WorkloadConfig
from elr_harness.core.errors import HistoryError
from elr_harness.workloads.classify import classify_send_error, error_name
from elr_harness.workloads.client_conf import ResendWatch, producer_conf
from elr_harness.workloads.client_thread import ClientThread
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.stats import StatsCollector

log = logging.getLogger(__name__)

#: Error recorded for a send whose delivery report had not come when the stop
#: deadline passed: it may still land, so it is `info`.
STOPPED_IN_FLIGHT = "STOPPED_IN_FLIGHT"

#: Error recorded for a send librdkafka may have transmitted twice (see
#: client_conf.ResendWatch); `last_attempt` says how its last attempt ended.
CLIENT_RESENT = "CLIENT_RESENT"

#: Longest a worker blocks in poll() before it looks at the clock again.
_MAX_POLL_S = 0.1


class RateLimiter:
    """Total send pacing shared by every producer thread (0 = unbounded)."""

    #: How far behind schedule the limiter may run and catch up in a burst.
    _MAX_CATCH_UP_S = 0.05

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = 1.0 / rate if rate > 0 else 0.0
        self._clock = clock
        self._next = clock()
        self._lock = threading.Lock()

    def try_acquire(self) -> float:
        """0.0 if a send may go now (and takes its turn), else seconds to wait."""
        if not self._interval:
            return 0.0
        with self._lock:
            now = self._clock()
            if self._next <= now:
                self._next = max(self._next, now - self._MAX_CATCH_UP_S) + self._interval
                return 0.0
            return self._next - now


class PartitionChooser:
    """Where each send goes: every partition of every topic, in turn or at random."""

    def __init__(self, targets: Sequence[tuple[str, int]], mode: str, rng: random.Random,
                 start: int = 0) -> None:
        if not targets:
            raise ValueError("no partitions to send to")
        self._targets = list(targets)
        self._random = mode == "random"
        self._rng = rng
        self._turn = itertools.count(start)

    def next(self) -> tuple[str, int]:
        if self._random:
            return self._rng.choice(self._targets)
        return self._targets[next(self._turn) % len(self._targets)]


@dataclass(eq=False, slots=True)
class PendingSend:
    """The one send a process has in flight."""

    process: int
    topic: str
    partition: int
    value: int
    done: bool = False
    #: librdkafka may have sent it twice: its delivery report covers one attempt.
    resent: bool = False


@dataclass(eq=False, slots=True)
class SendSlot:
    """One logical producer process."""

    process: int
    pending: PendingSend | None = None


ProducerFactory = Callable[[dict[str, Any]], Any]


class ProducerClient(ClientThread):
    """One librdkafka Producer and the worker thread that drives its slots."""

    def __init__(self, *, name: str, bootstrap: Sequence[str], acks: str, slots: int,
                 chooser: PartitionChooser, values: Iterator[int],
                 recorder: HistoryRecorder, stats: StatsCollector, limiter: RateLimiter,
                 config: WorkloadConfig, stop: threading.Event, deadline: float,
                 producer_factory: ProducerFactory = Producer,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(f"producer-{name}")
        self.acks = acks
        self._config = config
        self._conf = producer_conf(bootstrap, acks, config, ResendWatch(self._resending))
        self._conf["error_cb"] = self._client_error
        self._factory = producer_factory
        self._chooser = chooser
        self._values = values
        self._recorder = recorder
        self._stats = stats
        self._limiter = limiter
        self._stop = stop
        self._deadline = deadline
        self._clock = clock
        self._idempotent = config.idempotent
        self._producer = producer_factory(dict(self._conf))
        self._fatal: str | None = None
        self.slots = [SendSlot(recorder.new_process()) for _ in range(slots)]
        #: Slots with nothing in flight, ready for their next send.
        self._idle: list[SendSlot] = list(reversed(self.slots))

    # -- lifecycle -------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._send_until_stopped()
            self._drain()
        except BaseException as err:  # recorded for stop(); the history stays valid
            self.crashed = err
            log.exception("%s crashed", self.name)
            try:
                self._close_open_sends(f"HARNESS_ERROR:{type(err).__name__}")
            except HistoryError:
                pass  # the history itself failed: nothing more can be recorded

    def _send_until_stopped(self) -> None:
        while not self._stop.is_set():
            now = self._clock()
            if now >= self._deadline:
                return
            wait = min(_MAX_POLL_S, self._deadline - now)
            while self._idle:
                delay = self._limiter.try_acquire()
                if delay > 0:
                    wait = min(wait, delay)
                    break
                if not self._send(self._idle.pop()):
                    break  # the client refuses sends right now: let poll() back off
            self._producer.poll(wait)
            if self._fatal is not None:
                self._replace_client()

    def _drain(self) -> None:
        """Wait (bounded) for the reports of sends in flight; the rest are info."""
        end = self._clock() + self._config.stop_timeout_s
        while any(slot.pending for slot in self.slots):
            remaining = end - self._clock()
            if remaining <= 0:
                break
            self._producer.poll(min(_MAX_POLL_S, remaining))
        self._close_open_sends(STOPPED_IN_FLIGHT)
        self._discard_client()

    # -- sends -----------------------------------------------------------------

    def _send(self, slot: SendSlot) -> bool:
        """Issue the slot's next send; False if produce() refused it outright."""
        topic, partition = self._chooser.next()
        value = next(self._values)
        op = PendingSend(slot.process, topic, partition, value)
        slot.pending = op
        self._recorder.record(process=op.process, type="invoke", f="send", topic=topic,
                              partition=partition, acks=self.acks, value=value)
        try:
            self._producer.produce(topic, value=str(value).encode("ascii"),
                                   partition=partition,
                                   on_delivery=functools.partial(self._delivered, slot, op))
        except BufferError:
            self._complete(slot, op, "fail", error="_QUEUE_FULL")
            return False
        except KafkaException as err:
            # produce() refused it: the message never entered the client.
            self._complete(slot, op, "fail", error=error_name(err))
            return False
        return True

    def _delivered(self, slot: SendSlot, op: PendingSend, err: KafkaError | None,
                   msg: Any) -> None:
        """librdkafka's delivery report (runs inside this thread's poll())."""
        if op.done:
            return
        if err is None:
            offset = None if self.acks == "0" else msg.offset()
            offset = offset if offset is None or offset >= 0 else None
            if op.resent:
                self._complete(slot, op, "info", error=CLIENT_RESENT,
                               last_attempt={"type": "ok", "offset": offset})
            else:
                self._complete(slot, op, "ok", offset=offset)
            return
        name = err.name()
        if op.resent:
            self._complete(slot, op, "info", error=CLIENT_RESENT,
                           last_attempt={"type": "error", "error": name})
        else:
            self._complete(slot, op, classify_send_error(name, idempotent=self._idempotent),
                           error=name)
        if err.fatal():
            self._fatal = name

    def _complete(self, slot: SendSlot, op: PendingSend, op_type: str, *,
                  offset: int | None = None, error: str | None = None,
                  last_attempt: dict[str, Any] | None = None) -> None:
        op.done = True
        fields: dict[str, Any] = {"process": op.process, "type": op_type, "f": "send",
                                  "topic": op.topic, "partition": op.partition,
                                  "acks": self.acks, "value": op.value}
        if op_type == "ok":
            fields["offset"] = offset
        else:
            fields["error"] = error
        if last_attempt is not None:
            fields["last_attempt"] = last_attempt
        self._recorder.record(**fields)
        self._stats.completed("send", op_type, op.process, acks=self.acks, error=error)
        if slot.pending is op:
            slot.pending = None
            self._idle.append(slot)
        if op_type == "info":
            slot.process = self._recorder.new_process()

    def _close_open_sends(self, error: str) -> None:
        for slot in self.slots:
            op = slot.pending
            if op is not None and not op.done:
                self._complete(slot, op, "info", error=error)

    # -- the librdkafka client -------------------------------------------------

    def _resending(self, line: str) -> None:
        """librdkafka will re-send requests it had on the wire (ResendWatch): every
        open send may now be appended twice, and its report covers one attempt."""
        log.info("%s: librdkafka re-sends in-flight sends: %s", self.name, line)
        for slot in self.slots:
            if slot.pending is not None and not slot.pending.done:
                slot.pending.resent = True

    def _client_error(self, err: KafkaError) -> None:
        self._stats.client_error("send", -1, err.name())
        if err.fatal():
            self._fatal = err.name()

    def _replace_client(self) -> None:
        """A fatal client error: open sends can no longer resolve; start a new client."""
        log.warning("%s: fatal client error %s, replacing the client",
                    self.name, self._fatal)
        self._close_open_sends(self._fatal or "_FATAL")
        self._discard_client()
        self._fatal = None
        self._producer = self._factory(dict(self._conf))

    def _discard_client(self) -> None:
        try:
            self._producer.purge(in_queue=True, in_flight=True, blocking=False)
            self._producer.poll(0)  # serve the purge reports; their ops are closed
        except (KafkaException, RuntimeError) as err:
            log.debug("%s: purge failed: %s", self.name, err)
