"""The transactional workload's logic shared by both clients (HISTORY.md v4, `txn`).

TxnPlanner draws each transaction (seeded: how many records, which partitions,
whether it aborts on purpose, its unique values); TxnLoop is one producer
process's thread: it waits for its client to be ready, paces, records the
invoke, lets the client run the transaction (a TxnClient: librdkafka in
Python, or a slot of the Java client's JVM) and records the completion. After
an `info`, or whenever the client replaced its producer instance, the next
transaction takes a new process id: a process is one producer instance.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from elr_harness.core.config import WorkloadConfig
from elr_harness.core.errors import HarnessError, HistoryError
from elr_harness.core.history import Kind, OpType
from elr_harness.workloads.client_thread import ClientThread
from elr_harness.workloads.producers import RateLimiter
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.stats import StatsCollector

log = logging.getLogger(__name__)

#: A transaction still open when its producer's loop ended (or the client's
#: process died): it may still commit.
STOPPED_IN_FLIGHT = "STOPPED_IN_FLIGHT"


@dataclass(frozen=True)
class TxnPlan:
    """One transaction as drawn: its records in send order, and whether it aborts."""

    sends: tuple[tuple[str, int, int], ...]
    abort: bool


@dataclass(frozen=True)
class TxnOutcome:
    """How a client says a transaction ended, in the history's terms."""

    type: str
    #: per send, the offset its delivery report gave, or None
    offsets: tuple[int | None, ...] = ()
    #: the client's monotonic clock (ns) just before it first called commit or abort
    end_ns: int | None = None
    error: str | None = None
    detail: str | None = None
    #: the client closed this producer instance: the next transaction is a new process
    replaced: bool = False


class TxnClient(Protocol):
    """One transactional producer instance at a time, behind one transactional.id."""

    #: "java" or "librdkafka": the txn invoke's `client`
    name: str
    txn_id: str

    def ready(self) -> bool:
        """Whether the current instance finished initTransactions."""

    def init(self) -> str | None:
        """Make an instance ready; None when it is, else the error's name."""

    def run(self, plan: TxnPlan) -> TxnOutcome:
        """Run one transaction to its end (bounded) and say how it ended."""

    def alive(self) -> bool:
        """False once the client can run nothing more (its JVM died)."""

    def close(self) -> None:
        """Close the current instance."""


class TxnPlanner:
    """Seeded transactions over the run's partitions, with run-unique values."""

    def __init__(self, targets: Sequence[tuple[str, int]], values: Iterator[int],
                 rng: random.Random, min_sends: int, max_sends: int,
                 abort_ratio: float) -> None:
        if not targets:
            raise ValueError("no partitions to send to")
        if not 1 <= min_sends <= max_sends:
            raise ValueError(f"sends per transaction {min_sends}..{max_sends}")
        self._targets = list(targets)
        self._values = values
        self._rng = rng
        self._min, self._max = min_sends, max_sends
        self._abort_ratio = abort_ratio

    def next(self) -> TxnPlan:
        """The next transaction: distinct partitions while there are enough, so that
        one transaction spans as many partitions (and topics) as it can."""
        count = self._rng.randint(self._min, self._max)
        if count <= len(self._targets):
            places = self._rng.sample(self._targets, count)
        else:
            places = [self._rng.choice(self._targets) for _ in range(count)]
        abort = self._rng.random() < self._abort_ratio
        return TxnPlan(tuple((topic, partition, next(self._values))
                             for topic, partition in places), abort)


class TxnLoop(ClientThread):
    """One transactional producer process: ready, pace, invoke, run, complete."""

    def __init__(self, *, client: TxnClient, planner: TxnPlanner, recorder: HistoryRecorder,
                 stats: StatsCollector, limiter: RateLimiter, config: WorkloadConfig,
                 stop: threading.Event, deadline: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(f"txn-{client.txn_id}")
        self.client = client
        self._planner = planner
        self._recorder = recorder
        self._stats = stats
        self._limiter = limiter
        self._config = config
        self._stop = stop
        self._deadline = deadline
        self._clock = clock
        #: the current instance's process id (None: the next transaction takes a new one)
        self.process: int | None = None
        self._open: dict[str, Any] | None = None

    def _running(self) -> bool:
        return not self._stop.is_set() and self._clock() < self._deadline

    def _run(self) -> None:
        try:
            while self._running() and self.client.alive():
                if not self.client.ready():
                    error = self.client.init()
                    if error is not None:
                        log.info("%s: init failed: %s", self.name, error)
                        self._stats.client_error("txn", -1, error)
                        self._stop.wait(self._config.txn_init_retry_s)
                    continue
                delay = self._limiter.try_acquire()
                if delay > 0:
                    self._stop.wait(min(delay, 0.1))
                    continue
                self.run_one(self._planner.next())
            if not self.client.alive():
                raise HarnessError(f"{self.name}: the {self.client.name} client died")
        except BaseException as err:  # recorded for stop(); the history stays valid
            self.crashed = err
            log.exception("%s crashed", self.name)
            self._close_open(f"HARNESS_ERROR:{type(err).__name__}")
        finally:
            self.client.close()

    def run_one(self, plan: TxnPlan) -> TxnOutcome:
        """Record the invoke, run the transaction, record its completion."""
        if self.process is None:
            self.process = self._recorder.new_process()
        invoke: dict[str, Any] = {"process": self.process, "type": OpType.INVOKE.value,
                                  "f": Kind.TXN.value, "txn_id": self.client.txn_id,
                                  "sends": [list(send) for send in plan.sends]}
        if plan.abort:
            invoke["abort"] = True
        invoke["client"] = self.client.name
        self._recorder.record(**invoke)
        self._open = invoke
        outcome = self.client.run(plan)
        self.complete(outcome)
        return outcome

    def complete(self, outcome: TxnOutcome) -> None:
        """The completion line of the open transaction (see HISTORY.md v4's txn table)."""
        if self._open is None or self.process is None:
            return
        fields: dict[str, Any] = {"process": self.process, "type": outcome.type,
                                  "f": Kind.TXN.value, "txn_id": self.client.txn_id}
        if outcome.type in (OpType.OK, OpType.INFO) and outcome.offsets:
            fields["offsets"] = list(outcome.offsets)
        if outcome.end_ns is not None:
            fields["end_time"] = outcome.end_ns - self._recorder.origin_ns
        if outcome.type != OpType.OK:
            fields["error"] = outcome.error or "UNKNOWN"
            if outcome.detail:
                fields["error_detail"] = _plain(outcome.detail)
        self._recorder.record(**fields)
        self._open = None
        self._stats.completed("txn", outcome.type, self.process, error=outcome.error)
        if outcome.type == OpType.INFO or outcome.replaced:
            self.process = None

    def _close_open(self, error: str) -> None:
        try:
            self.complete(TxnOutcome(OpType.INFO.value, error=error, replaced=True))
        except HistoryError:
            pass  # the history itself failed: nothing more can be recorded


def _plain(text: str) -> str:
    """A client's message as text the history can hold (no lone surrogates)."""
    return text.encode("utf-8", "replace").decode("utf-8")[:300]
