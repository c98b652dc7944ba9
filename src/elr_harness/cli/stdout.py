"""A closed stdout never changes the exit code.

`harness check RUN | head -1` closes the pipe after one line. Python then
raises BrokenPipeError on the next write, and rich turns that into
SystemExit(1), which reads as "Kafka lost data". The harness's standard
output is a progress display and a summary, never the evidence (that is in
the run directory), so once its reader has gone it is sent to /dev/null and
the command goes on to its real exit code.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, TextIO


class _ToleratesClosedReader:
    """sys.stdout that, on EPIPE, points file descriptor 1 at /dev/null and goes on."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def _gone(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def _guarded(self, call: Any, *args: Any) -> Any:
        try:
            return call(*args)
        except BrokenPipeError:
            self._gone()
        except OSError as err:
            if err.errno != errno.EPIPE:
                raise
            self._gone()
        # what was buffered now goes to /dev/null with the rest
        try:
            return call(*args)
        except OSError:
            return None

    def write(self, text: str) -> int:
        written = self._guarded(self._stream.write, text)
        return len(text) if written is None else written

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def tolerate_closed_stdout() -> None:
    """Install the guard on sys.stdout (idempotent)."""
    if not isinstance(sys.stdout, _ToleratesClosedReader) and sys.stdout is not None:
        sys.stdout = _ToleratesClosedReader(sys.stdout)  # type: ignore[assignment]
