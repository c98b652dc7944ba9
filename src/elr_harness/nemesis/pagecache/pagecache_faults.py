"""Disk errors the page-cache layer can inject: one directory's fsync and/or write fail.

Why: the disk-fault nemesis must make one of a broker's log directories fail
the way a dying disk does (EIO) or a full one (ENOSPC), while the broker's
other log directory keeps working, so Kafka takes that one directory offline
and the broker lives on. The FUSE daemon (pagecache_fs.py) asks a FaultSwitch
before every write and fsync; the switch answers with the errno to fail with,
or None.

Like pagecache_fs.py this file runs INSIDE the node containers with only the
standard library, copied next to the daemon.

Control protocol (the host side is nemesis/pagecache/control.py): the host writes
CONTROL_NAME in the daemon's control dir, {"id": ..., "fault": {...} | null},
and sends SIGUSR2; the daemon applies it and answers with STATE_NAME (written
atomically), {"id": <the same>, "fault": ..., "failed": {op: count},
"bytes_dropped": {path: bytes}, "total_bytes_dropped": N}. Counts start at 0
when a fault is set and are kept when it is cleared, so the answer to a clear
says what the fault did. A bad request is answered with {"id", "error"} and
changes nothing.

A failed fsync with `drop` forgets the file's unsynced data, as Linux does
after a writeback error (the dirty pages are marked clean and their data is
gone): what was never synced is lost although the machine never lost power.
"""

from __future__ import annotations

import errno
import threading
from dataclasses import dataclass
from typing import Any

CONTROL_NAME = "fault.json"
STATE_NAME = "fault-state.json"
#: The errors a fault may answer with, by name.
ERRNOS = {"EIO": errno.EIO, "ENOSPC": errno.ENOSPC}
#: The operations a fault may fail (fsync covers a directory's fsync too).
OPERATIONS = ("fsync", "write")


@dataclass(frozen=True)
class DiskFault:
    """Which directory fails, with which error, on which operations."""

    #: Relative to the mount's root ("" is the whole mount).
    directory: str
    errno_name: str
    operations: tuple[str, ...]
    #: A failed fsync forgets the file's unsynced data.
    drop: bool

    def __post_init__(self) -> None:
        if self.errno_name not in ERRNOS:
            raise ValueError(f"errno {self.errno_name!r} is not one of {', '.join(ERRNOS)}")
        if not self.operations or any(op not in OPERATIONS for op in self.operations):
            raise ValueError(f"operations {list(self.operations)!r} must be some of "
                             f"{', '.join(OPERATIONS)}")
        parts = self.directory.split("/") if self.directory else []
        if self.directory.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"directory {self.directory!r} must be relative to the mount, "
                             "without . or .. parts")

    @classmethod
    def from_json(cls, data: Any) -> DiskFault:
        """A fault from its JSON form; ValueError names what is wrong."""
        if not isinstance(data, dict):
            raise ValueError(f"a fault is an object, not {type(data).__name__}")
        missing = {"directory", "errno", "operations", "drop"} - set(data)
        if missing:
            raise ValueError(f"a fault lacks {', '.join(sorted(missing))}")
        operations = data["operations"]
        if not isinstance(operations, list) or not all(isinstance(o, str) for o in operations):
            raise ValueError("operations must be a list of names")
        if not isinstance(data["directory"], str) or not isinstance(data["drop"], bool):
            raise ValueError("directory must be text and drop true or false")
        return cls(data["directory"], str(data["errno"]), tuple(operations), data["drop"])

    def to_json(self) -> dict[str, Any]:
        return {"directory": self.directory, "errno": self.errno_name,
                "operations": list(self.operations), "drop": self.drop}

    def covers(self, rel_path: str) -> bool:
        """Whether a file at rel_path (relative to the mount) lies in the failing directory."""
        if not self.directory:
            return True
        rel_path = rel_path.lstrip("/")
        return rel_path == self.directory or rel_path.startswith(self.directory + "/")


class FaultSwitch:
    """The fault in force in one daemon and what it did; every method is thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.fault: DiskFault | None = None
        self.failed = dict.fromkeys(OPERATIONS, 0)
        self.dropped: dict[str, int] = {}

    def set(self, fault: DiskFault | None) -> None:
        """Put a fault in force (its counts start at 0) or clear it (counts kept)."""
        with self._lock:
            if fault is not None:
                self.failed = dict.fromkeys(OPERATIONS, 0)
                self.dropped = {}
            self.fault = fault

    def check(self, operation: str, rel_path: str) -> DiskFault | None:
        """The fault that fails `operation` on rel_path now (counted), or None."""
        fault = self.fault
        if fault is None or operation not in fault.operations or not fault.covers(rel_path):
            return None
        with self._lock:
            self.failed[operation] += 1
        return fault

    def record_drop(self, rel_path: str, size: int) -> None:
        if size > 0:
            with self._lock:
                self.dropped[rel_path] = self.dropped.get(rel_path, 0) + size

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {"fault": None if self.fault is None else self.fault.to_json(),
                    "failed": dict(self.failed),
                    "bytes_dropped": dict(sorted(self.dropped.items())),
                    "total_bytes_dropped": sum(self.dropped.values())}

    def apply(self, request: Any) -> dict[str, Any]:
        """Apply a control request ({"id", "fault"}); the answer to write back."""
        ident = request.get("id") if isinstance(request, dict) else None
        try:
            if not isinstance(request, dict) or "fault" not in request:
                raise ValueError("a request is an object with id and fault")
            fault = None if request["fault"] is None else DiskFault.from_json(request["fault"])
        except ValueError as err:
            return {"id": ident, "error": str(err)}
        self.set(fault)
        return {"id": ident, **self.state()}


def error_of(fault: DiskFault) -> int:
    """The errno value the fault answers with."""
    return ERRNOS[fault.errno_name]
