"""The observer: partition state sampled every ~250 ms into `observe` lines.

Leader, leader epoch, ISR, ELR, LastKnownELR and high watermark of every
partition go into the history (process -2, type ok), with, where the cluster
could say, the fenced brokers, the replicas, the topic's effective min ISR and
the ELR feature's level (cluster/observe.py), so the checker can test KIP-966's
invariants and the report can draw them beside the faults. With transactions
(contract v4) a data partition's line also holds its last stable offset and its
open transactions' first offsets, and the internal topics `__transaction_state`
and `__consumer_offsets` are sampled like the test topics once they exist (the
source adds them: the loop records whatever partitions it describes). The
latest sample is also kept for the nemesis, so a scenario waits on observed
state without polling the cluster a second time; with transactions it holds the
internal topics' partitions too.

The loop depends only on a `describe(topics)` source (cluster/observe.py's
PartitionObserver in a run); a describe that raises skips that tick and is
counted, it never ends the loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import WorkloadConfig
from elr_harness.core.errors import HistoryError
from elr_harness.workloads.recorder import HistoryRecorder

log = logging.getLogger(__name__)


class PartitionStateSource(Protocol):
    """Anything that can describe the partitions of some topics right now."""

    def describe(self, topics: Sequence[str]) -> Sequence[PartitionState]: ...


class ObserverLoop:
    """A thread that samples partition state on a fixed cadence and records it."""

    def __init__(self, source: PartitionStateSource, topics: Sequence[str],
                 recorder: HistoryRecorder,
                 interval_s: float = WorkloadConfig.observe_interval_s,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if interval_s <= 0:
            raise ValueError("observer interval must be positive")
        self._source = source
        self._topics = list(topics)
        self._recorder = recorder
        self._interval_s = interval_s
        self._clock = clock
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._latest: list[PartitionState] = []
        self._samples = 0
        self._failures = 0
        self.last_error: str | None = None
        self._thread = threading.Thread(target=self._run, name="observer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = WorkloadConfig.stop_timeout_s) -> None:
        """Stop after the current sample (bounded by the source's own timeout)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def latest(self) -> list[PartitionState]:
        """The states of the last successful sample (empty before the first)."""
        with self._changed:
            return list(self._latest)

    @property
    def samples(self) -> int:
        with self._changed:
            return self._samples

    @property
    def failures(self) -> int:
        """Ticks whose describe() raised (nothing was recorded for them)."""
        with self._changed:
            return self._failures

    def wait_for(self, predicate: Callable[[list[PartitionState]], bool],
                 timeout_s: float) -> list[PartitionState] | None:
        """Block until a sample satisfies `predicate`; that sample, or None on timeout."""
        end = self._clock() + timeout_s
        with self._changed:
            while True:
                if self._samples and predicate(list(self._latest)):
                    return list(self._latest)
                remaining = end - self._clock()
                if remaining <= 0 or not self._thread.is_alive():
                    return None
                self._changed.wait(min(remaining, self._interval_s))

    def sample_once(self) -> bool:
        """Describe, record and publish one sample; False if describe() failed."""
        try:
            states = list(self._source.describe(self._topics))
        except Exception as err:  # any source failure is one missed tick
            with self._changed:
                self._failures += 1
                self.last_error = f"{type(err).__name__}: {err}"
            log.debug("observer tick failed: %s", err)
            return False
        for state in states:
            self._recorder.record(**state.as_observation())
        with self._changed:
            self._latest = states
            self._samples += 1
            self._changed.notify_all()
        return True

    def _run(self) -> None:
        next_tick = self._clock()
        while not self._stop.is_set():
            try:
                self.sample_once()
            except HistoryError as err:  # the history is closed or broken: nothing to add
                self.last_error = err.message
                log.warning("observer stopped: %s", err.message)
                break
            next_tick += self._interval_s
            now = self._clock()
            if next_tick < now:  # a slow describe: skip the ticks it overran
                next_tick = now
            self._stop.wait(next_tick - now)
        with self._changed:
            self._changed.notify_all()
