"""What a user can fix when a check cannot run: a Spark failure named by its cause
(not by the py4j call it surfaced in), and one check of a history at a time."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from elr_harness.core.errors import BadInput
from elr_harness.core.files import os_reason
from elr_harness.core.validate import printable

#: How much of a history the line-length scan reads at a time: a gap between two
#: newlines inside one chunk is shorter than the chunk, so only the gaps that
#: span chunks are measured (the scan is as fast as the disk).
_SCAN_CHUNK_BYTES = 16 * 1024 * 1024

#: Causes a user can act on, found anywhere in a Spark error's text (the Java
#: stack under a py4j error names them; its first line names only the call).
_CAUSES = (
    ("No space left on device",
     "a disk is full (No space left on device): free space where the Parquet cache "
     "and Spark's scratch folder go (beside the history, or ELR_HARNESS_CACHE)"),
    ("Disk quota exceeded",
     "a disk quota is exceeded: free space where the Parquet cache and Spark's "
     "scratch folder go (beside the history, or ELR_HARNESS_CACHE)"),
    ("java.lang.OutOfMemoryError",
     "Spark ran out of memory: give it more ([checker] driver_memory) or check a "
     "smaller history"),
    ("Read-only file system",
     "a folder the check writes to is on a read-only file system"),
)


def spark_failure(err: BaseException) -> str:
    """One line for a failed Spark job: the cause a user can fix when the error's
    text names one, else the first line of the Java exception under the py4j
    call, else the error's own first line."""
    text = str(err)
    for needle, said in _CAUSES:
        if needle in text:
            return f"the check could not run: {said}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    cause = next((line for line in lines if not line.startswith(("An error occurred",
                                                                 "at ", "py4j"))
                  and ("Exception" in line or "Error" in line)), None)
    first = cause or (lines[0] if lines else type(err).__name__)
    return f"the Spark job failed: {printable(first)}"


@contextlib.contextmanager
def one_check_at_a_time(history: Path,
                        say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on the history file itself (nothing is written for
    it) while it is checked: a second check of the same history waits, saying so,
    instead of both writing one Parquet cache and one results.json."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    fd = os.open(history, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"another check of {printable(str(history))} is running; waiting for it")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def refuse_overlong_line(history: Path, max_line_bytes: int) -> None:
    """BadInput naming the first line longer than `max_line_bytes` (a file of NUL
    bytes is one such line), before Spark tries to hold it; a history no longer
    than the bound is not read."""
    if history.stat().st_size <= max_line_bytes:
        return
    chunk_bytes = min(_SCAN_CHUNK_BYTES, max_line_bytes)
    line_start = 0  # offset where the current line began
    newlines = 0
    offset = 0
    try:
        with history.open("rb") as stream:
            while chunk := stream.read(chunk_bytes):
                first = chunk.find(b"\n")
                end = offset + (first if first >= 0 else len(chunk))
                if end - line_start > max_line_bytes:
                    raise BadInput(
                        f"{printable(str(history))}: line {newlines + 1} is longer than "
                        f"{max_line_bytes} bytes (checker.max_line_bytes); a history "
                        f"holds one JSON object per line (HISTORY.md), and this is no "
                        f"line a recorder writes")
                if first >= 0:
                    newlines += chunk.count(b"\n")
                    line_start = offset + chunk.rfind(b"\n") + 1
                offset += len(chunk)
    except OSError as err:
        raise BadInput(f"cannot read {printable(str(history))}: {os_reason(err)}") from err

