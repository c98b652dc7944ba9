"""The history recorder: append-only history.jsonl, as shared/HISTORY.md fixes it.

Every client thread, the nemesis and the observer write through one recorder.
The dense `index` and the `time` (ns since the recorder started, one monotonic
clock) are taken under the same lock that fixes the line's place in the file,
so file order, index order and time order agree. Lines are buffered and a
background thread writes, flushes and fsyncs them several times a second: a
crash loses at most the last flush interval and can only cut the last line
short. Nothing is ever rewritten; an existing non-empty history is refused.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from elr_harness.core.config import WorkloadConfig
from elr_harness.core.errors import HarnessError, HistoryError

#: `type` values of the contract.
OP_TYPES = frozenset({"invoke", "ok", "fail", "info"})
#: `f` values of the contract.
OP_FUNCTIONS = frozenset({"send", "poll", "txn", "fault", "observe", "replica"})
#: Process ids the contract reserves.

#: orjson because encoding is most of a record's cost (0.3 us against 3.7 us for
#: the json module, measured by benchmarks/recorder.py's CPU per send); int keys
#: (seek, high_watermark) become JSON's string keys, as json.dumps would write them.
_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS


class HistoryRecorder:
    """Thread-safe, append-only writer of one run's history.jsonl."""

    def __init__(self, path: Path, *,
                 flush_interval_s: float = WorkloadConfig.recorder_flush_interval_s,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        if not 0 < flush_interval_s <= 1.0:
            raise HarnessError(
                f"recorder flush interval must be in (0, 1] s, got {flush_interval_s}")
        self.path = Path(path)
        if self.path.exists() and self.path.stat().st_size > 0:
            raise HarnessError(
                f"{self.path} already holds a history; a history is evidence and is never "
                "overwritten: choose a new run directory")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as err:
            raise HarnessError(f"cannot open history {self.path}: {err.strerror}") from err
        self._clock = clock
        #: Monotonic clock reading that `time` 0 stands for (same clock, ns).
        self.origin_ns = clock()
        self._lock = threading.Lock()      # index, time and buffer order
        self._io_lock = threading.Lock()   # one writer of the file at a time
        self._buffer: list[bytes] = []
        self._next_index = 0
        self._process_ids = itertools.count()
        self._closed = False
        self._write_error: OSError | None = None
        self._flush_interval_s = flush_interval_s
        self._stop = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="history-flusher",
                                         daemon=True)
        self._flusher.start()

    # -- writing -------------------------------------------------------------

    def record(self, **fields: Any) -> dict[str, Any]:
        """Append one line; returns it with the `index` and `time` it was given.

        `process` (int), `type` and `f` are required; every value must be plain
        JSON. The line is serialized before it takes its place, so a bad value
        raises here and writes nothing.
        """
        process, op_type, function = fields.get("process"), fields.get("type"), fields.get("f")
        if type(process) is not int:
            raise HistoryError(f"history line needs an int process, got {process!r}")
        if op_type not in OP_TYPES:
            raise HistoryError(f"history line type must be one of {sorted(OP_TYPES)}, "
                               f"got {op_type!r}")
        if function not in OP_FUNCTIONS:
            raise HistoryError(f"history line f must be one of {sorted(OP_FUNCTIONS)}, "
                               f"got {function!r}")
        if "index" in fields or "time" in fields:
            raise HistoryError("index and time are assigned by the recorder, not the caller")
        try:
            body = orjson.dumps(fields, option=_ORJSON_OPTIONS)
        except TypeError as err:  # orjson.JSONEncodeError is a TypeError
            raise HistoryError(f"history line is not plain JSON: {err}") from err
        if b"null" in body and _has_non_finite(fields):
            # orjson writes NaN and infinities as null: refuse rather than change a value
            raise HistoryError("history line is not plain JSON: NaN or infinity")
        with self._lock:
            if self._closed:
                raise HistoryError(f"history {self.path} is closed")
            if self._write_error is not None:
                raise HistoryError(f"history {self.path} cannot be written: "
                                   f"{self._write_error.strerror}")
            index = self._next_index
            self._next_index = index + 1
            elapsed = self._clock() - self.origin_ns
            self._buffer.append(b'{"index":%d,"time":%d,%b\n' % (index, elapsed, body[1:]))
        return {"index": index, "time": elapsed, **fields}

    def new_process(self) -> int:
        """A client process id never handed out before in this history."""
        return next(self._process_ids)

    @property
    def lines_recorded(self) -> int:
        with self._lock:
            return self._next_index

    # -- durability ------------------------------------------------------------

    def flush(self) -> None:
        """Write out everything recorded so far and fsync it."""
        with self._io_lock:
            with self._lock:
                pending, self._buffer = self._buffer, []
            if not pending:
                return
            data = b"".join(pending)
            try:
                view = memoryview(data)
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
                os.fsync(self._fd)
            except OSError as err:
                with self._lock:
                    self._write_error = err
                raise HistoryError(f"cannot write history {self.path}: {err.strerror}") from err

    def _flush_loop(self) -> None:
        while not self._stop.wait(self._flush_interval_s):
            try:
                self.flush()
            except HistoryError:
                return  # record() reports the error to every later writer

    def close(self) -> None:
        """Flush, fsync and close; later record() calls raise HistoryError."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stop.set()
        self._flusher.join()
        try:
            self.flush()
        finally:
            os.close(self._fd)

    def __enter__(self) -> HistoryRecorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _has_non_finite(value: Any) -> bool:
    """True if a float NaN or infinity hides anywhere in the value."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_non_finite(v) for v in value)
    return False
