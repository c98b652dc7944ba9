"""Live counters of the workload for the progress display.

Client threads count every completion here (one short lock); the display
takes a snapshot whenever it redraws. Nothing here is evidence: the history
is. These numbers only tell a person the run is alive and what it hits.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

from elr_harness.core.config import WorkloadConfig


@dataclass(frozen=True)
class ClientError:
    """One recent error, for the display."""

    elapsed_s: float
    f: str
    process: int
    error: str


@dataclass(frozen=True)
class WorkloadStats:
    """A consistent snapshot of the counters."""

    #: Completed operations per second since the previous snapshot (or since start).
    ops_per_s: float
    #: (f, type) -> count, e.g. ("send", "ok") -> 120.
    completions: dict[tuple[str, str], int]
    #: acks -> type -> count of sends.
    sends_by_acks: dict[str, dict[str, int]]
    last_errors: tuple[ClientError, ...]
    observer_samples: int = 0
    observer_failures: int = 0

    def count(self, f: str, op_type: str) -> int:
        return self.completions.get((f, op_type), 0)


class StatsCollector:
    """Thread-safe completion counters with a short memory of errors."""

    def __init__(self, last_errors_kept: int = WorkloadConfig.last_errors_kept,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self._lock = threading.Lock()
        self._completions: Counter[tuple[str, str]] = Counter()
        self._sends: Counter[tuple[str, str]] = Counter()
        self._errors: deque[ClientError] = deque(maxlen=max(1, last_errors_kept))
        self._total = 0
        self._last_snapshot = (self._started, 0)

    def completed(self, f: str, op_type: str, process: int, *, acks: str | None = None,
                  error: str | None = None) -> None:
        """Count one completion (ok, fail or info) of a client operation."""
        with self._lock:
            self._completions[(f, op_type)] += 1
            self._total += 1
            if acks is not None:
                self._sends[(acks, op_type)] += 1
            if error is not None:
                self._errors.append(ClientError(self._clock() - self._started, f, process, error))

    def client_error(self, f: str, process: int, error: str) -> None:
        """Remember an error that is no operation's completion (a client's error event)."""
        with self._lock:
            self._errors.append(ClientError(self._clock() - self._started, f, process, error))

    def snapshot(self, observer_samples: int = 0, observer_failures: int = 0) -> WorkloadStats:
        with self._lock:
            now = self._clock()
            since, total_then = self._last_snapshot
            window = now - since
            if window >= 0.5:
                recent = (self._total - total_then) / window
                self._last_snapshot = (now, self._total)
            else:  # asked again too soon for a meaningful rate: use the run's mean
                recent = self._total / max(now - self._started, 1e-9)
            sends: dict[str, dict[str, int]] = {}
            for (acks, op_type), n in self._sends.items():
                sends.setdefault(acks, {})[op_type] = n
            return WorkloadStats(
                ops_per_s=recent,
                completions=dict(self._completions),
                sends_by_acks=sends,
                last_errors=tuple(self._errors),
                observer_samples=observer_samples,
                observer_failures=observer_failures,
            )
