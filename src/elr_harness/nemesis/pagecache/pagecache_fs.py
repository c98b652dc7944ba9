"""A FUSE layer that keeps every unsynced write in memory, so a power cut can drop it.

Why: the page-cache-loss nemesis must make a Kafka broker lose exactly what a
real power cut would lose. Kafka's log dirs sit on this passthrough filesystem
over BACKING_DIR; written data stays in an in-memory overlay until the file is
fsynced, and SIGUSR1 throws the overlay away like a vanished page cache.

This file runs INSIDE the node containers, with only the standard library and a
copy of mfusepy next to it:

    python3 pagecache_fs.py BACKING_DIR MOUNTPOINT --control-dir DIR [--foreground]

Without --foreground the command forks a daemon (own session, output appended
to DIR/daemon.log) and returns once the mount is live (exit 0) or the daemon
failed (exit 1, log tail on stderr). The daemon's pid is in DIR/pid.

Crash model (that of a journaling file system such as ext4 with data=ordered,
after its journal commit):

* File DATA is durable only once fsync/fdatasync of that file returned.
  write() goes to an overlay of dirty extents per file (per backing inode, so
  renames and hard links share it); read() returns backing data overlaid with
  dirty data; the size getattr() reports is max(backing size, end of the dirty
  extents). close/flush do not make anything durable. An fsync writes the
  file's dirty extents to the backing file and fsyncs it. A memory-mapped file
  is the same: the kernel sends its dirty pages as writes, and msync
  (MappedByteBuffer.force) arrives as fsync.
* METADATA is durable at once: create, mkdir, unlink, rmdir, rename, link,
  symlink, mknod, chmod, chown, utimens, truncate/ftruncate and fallocate are
  applied to the backing directory immediately, as if the journal committed them
  before the crash. So after a power loss a file that was created and written
  but never fsynced exists with its synced length only (often 0 bytes); a rename
  survives; a truncate survives (an extending truncate leaves zeros).
  Directory fsync is therefore a no-op success.
* A real kernel also writes dirty pages back on its own after ~30 s; this layer
  never does, so every never-synced byte is lost: the worst case a power cut can
  produce, which is what the nemesis wants to exercise.

Power loss (SIGUSR1): the daemon freezes every operation, writes
{"bytes_dropped": {relative path: dirty bytes}, "files": N, "total_bytes": N}
to DIR/dropped.json (temp file + rename) and exits at once with os._exit,
without flushing. Bytes are counted exactly: each dirty byte once however often
it was overwritten, nothing beyond a later truncate, and only for files that
still have a name (the data of an unlinked file is gone in any case). The
caller lazily unmounts and mounts a fresh daemon over the same backing dir.

Clean shutdown (SIGTERM, SIGINT, SIGHUP): every dirty byte is written back and
fsynced, the file system is unmounted, the daemon exits 0.

Disk errors (SIGUSR2, for the disk-fault nemesis): the daemon reads a fault
from DIR/fault.json and from then on fails write and/or fsync of the files
under one directory of the mount with EIO or ENOSPC (a failed fsync may also
forget the file's unsynced data, as Linux does after a writeback error), until
a request without a fault clears it; it answers each request in
DIR/fault-state.json. The protocol and the rules are in pagecache_faults.py.
"""

from __future__ import annotations

import argparse
import bisect
import ctypes
import errno
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

try:
    import mfusepy as fuse
except ImportError:  # the copy next to this file when run inside a node
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import mfusepy as fuse
try:
    from elr_harness.nemesis.pagecache import pagecache_faults as faults
except ImportError:  # inside a node: the copy next to this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pagecache_faults as faults  # type: ignore[no-redef]

REPORT_NAME = "dropped.json"
PID_NAME = "pid"
LOG_NAME = "daemon.log"
FS_SUBTYPE = "pagecache"
#: How long the non-foreground launcher waits for the mount to appear.
MOUNT_WAIT_S = 20.0

_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
#: What libfuse passes (as tv_sec 0 + tv_nsec) when a time is to be set to now / left alone.
_UTIME_NOW = (1 << 30) - 1
_UTIME_OMIT = (1 << 30) - 2
_FALLOC_FL_KEEP_SIZE = 1
_CLEAN_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class DirtyExtents:
    """Sorted, non-overlapping, non-touching extents of unsynced bytes of one file.

    Appends (the common case) extend the last extent in place; other writes
    touch only the extents they overlap, so no operation rescans the whole map.
    """

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._bufs: list[bytearray] = []
        self.dirty_bytes = 0

    def __len__(self) -> int:
        return len(self._starts)

    def end(self) -> int:
        """One past the last dirty byte (0 when clean)."""
        if not self._starts:
            return 0
        return self._starts[-1] + len(self._bufs[-1])

    def write(self, offset: int, data: bytes) -> None:
        """Record data at offset, merging with the extents it overlaps or touches."""
        size = len(data)
        if size == 0:
            return
        end = offset + size
        starts, bufs = self._starts, self._bufs
        if starts and offset == starts[-1] + len(bufs[-1]):
            bufs[-1] += data
            self.dirty_bytes += size
            return
        idx = bisect.bisect_right(starts, offset) - 1
        first = idx if idx >= 0 and starts[idx] + len(bufs[idx]) >= offset else idx + 1
        last = bisect.bisect_right(starts, end) - 1
        if first > last:
            starts.insert(first, offset)
            bufs.insert(first, bytearray(data))
            self.dirty_bytes += size
            return
        first_start, first_buf = starts[first], bufs[first]
        if first == last and first_start <= offset and end <= first_start + len(first_buf):
            first_buf[offset - first_start:end - first_start] = data
            return
        before = sum(len(bufs[k]) for k in range(first, last + 1))
        last_start, last_buf = starts[last], bufs[last]
        tail = last_buf[end - last_start:] if last_start + len(last_buf) > end else b""
        if first_start <= offset:
            del first_buf[offset - first_start:]
            first_buf += data
            first_buf += tail
        else:
            merged = bytearray(data)
            merged += tail
            starts[first] = offset
            bufs[first] = merged
        del starts[first + 1:last + 1]
        del bufs[first + 1:last + 1]
        self.dirty_bytes += len(bufs[first]) - before

    def overlapping(self, offset: int, end: int) -> Iterator[tuple[int, bytearray]]:
        """The extents that intersect [offset, end), as (start, data)."""
        idx = max(bisect.bisect_right(self._starts, offset) - 1, 0)
        while idx < len(self._starts) and self._starts[idx] < end:
            start, buf = self._starts[idx], self._bufs[idx]
            if start + len(buf) > offset:
                yield start, buf
            idx += 1

    def items(self) -> list[tuple[int, bytearray]]:
        return list(zip(self._starts, self._bufs, strict=True))

    def truncate(self, length: int) -> None:
        """Forget every dirty byte at or beyond length."""
        idx = bisect.bisect_left(self._starts, length)
        for buf in self._bufs[idx:]:
            self.dirty_bytes -= len(buf)
        del self._starts[idx:]
        del self._bufs[idx:]
        if idx > 0:
            prev = self._bufs[idx - 1]
            excess = self._starts[idx - 1] + len(prev) - length
            if excess > 0:
                del prev[len(prev) - excess:]
                self.dirty_bytes -= excess

    def clear(self) -> None:
        self._starts.clear()
        self._bufs.clear()
        self.dirty_bytes = 0


class FileState:
    """One backing inode in use: its read-write fd, its overlay and who holds it."""

    def __init__(self, key: tuple[int, int], fd: int, writable: bool, rel_path: str) -> None:
        self.key = key
        self.fd = fd
        self.writable = writable
        self.rel_path = rel_path
        self.lock = threading.Lock()
        self.extents = DirtyExtents()
        self.handles = 0
        self.linked = True
        #: Time of the newest unsynced write, reported as mtime (Kafka reads mtimes).
        self.mtime_ns: int | None = None


def _rel(path: str) -> str:
    return path.lstrip("/")


def _with_prefix_replaced(rel_path: str, old: str, new: str) -> str | None:
    """rel_path moved by renaming old to new, or None when the rename does not touch it."""
    if rel_path == old:
        return new
    if rel_path.startswith(old + "/"):
        return new + rel_path[len(old):]
    return None


_libc = ctypes.CDLL(None, use_errno=True)


def _renameat2(old: str, new: str, flags: int) -> None:
    """rename(2) with RENAME_NOREPLACE / RENAME_EXCHANGE, which os.rename cannot pass."""
    func = getattr(_libc, "renameat2", None)
    if func is None:
        raise fuse.FuseOSError(errno.EINVAL)
    result = func(_AT_FDCWD, os.fsencode(old), _AT_FDCWD, os.fsencode(new), ctypes.c_uint(flags))
    if result != 0:
        raise fuse.FuseOSError(ctypes.get_errno())


class PageCacheFS(fuse.Operations):
    """Passthrough over a backing dir whose file data is durable only when fsynced."""

    use_ns = True

    def __init__(self, backing: str) -> None:
        self.backing = os.path.realpath(backing)
        #: Guards the namespace, the state registry and the handle table.
        #: Lock order: this lock first, then a FileState.lock.
        self._lock = threading.Lock()
        self._states: dict[tuple[int, int], FileState] = {}
        self._handles: dict[int, FileState] = {}
        self._next_fh = 1
        #: The injected disk error in force, if any (pagecache_faults.py; SIGUSR2).
        self.faults = faults.FaultSwitch()

    # ----------------------------------------------------------------- helpers

    def _full(self, path: str) -> str:
        return os.path.join(self.backing, _rel(path))

    def _state_of(self, fh: int) -> FileState:
        state = self._handles.get(fh)
        if state is None:
            raise fuse.FuseOSError(errno.EBADF)
        return state

    def _open_backing(self, full: str, flags: int, mode: int | None) -> tuple[int, bool]:
        """Open the backing file read-write when possible: the JVM maps these files."""
        if mode is not None:
            create = os.O_CREAT | (flags & os.O_EXCL)
            return os.open(full, os.O_RDWR | create, mode), True
        try:
            return os.open(full, os.O_RDWR), True
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EROFS, errno.EISDIR, errno.ETXTBSY,
                                 errno.EPERM):
                raise
        return os.open(full, os.O_RDONLY), False

    def _register_handle(self, path: str, flags: int, mode: int | None) -> int:
        with self._lock:
            fd, writable = self._open_backing(self._full(path), flags, mode)
            st = os.fstat(fd)
            key = (st.st_dev, st.st_ino)
            state = self._states.get(key)
            if state is None:
                state = FileState(key, fd, writable, _rel(path))
                self._states[key] = state
            elif writable and not state.writable:
                os.close(state.fd)
                state.fd, state.writable = fd, True
            else:
                os.close(fd)
            state.rel_path = _rel(path)
            state.handles += 1
            fh = self._next_fh
            self._next_fh += 1
            self._handles[fh] = state
            if flags & os.O_TRUNC:
                with state.lock:
                    self._truncate_locked(state, 0)
            return fh

    def _retire_if_idle(self, state: FileState) -> None:
        """Close a state nobody holds, unless its dirty data must stay (caller holds _lock)."""
        if state.handles > 0:
            return
        with state.lock:
            if state.linked and state.extents.dirty_bytes > 0:
                return
            if self._states.get(state.key) is state:
                del self._states[state.key]
            os.close(state.fd)
            state.fd = -1

    def _forget_inode(self, key: tuple[int, int]) -> None:
        """The inode lost its last name: its dirty data can never be made durable (holds _lock)."""
        state = self._states.pop(key, None)
        if state is None:
            return
        state.linked = False
        self._retire_if_idle(state)

    def _truncate_locked(self, state: FileState, length: int) -> None:
        os.ftruncate(state.fd, length)
        state.extents.truncate(length)
        state.mtime_ns = None

    def _write_back_locked(self, state: FileState) -> int:
        """Write the dirty extents into the backing file (holds state.lock); bytes written."""
        written = 0
        for start, buf in state.extents.items():
            view = memoryview(buf)
            done = 0
            while done < len(view):
                done += os.pwrite(state.fd, view[done:], start + done)
            written += done
        state.extents.clear()
        return written

    def _sync(self, state: FileState, datasync: bool) -> int:
        with state.lock:
            if state.fd < 0:
                raise fuse.FuseOSError(errno.EBADF)
            written = self._write_back_locked(state)
            fd = state.fd
        # Outside the lock: the data already left the overlay, so a crash now keeps it,
        # which is allowed (the fsync had not yet returned to the application).
        (os.fdatasync if datasync else os.fsync)(fd)
        return written

    # -------------------------------------------------------- file operations

    def create(self, path: str, mode: int, flags: int = 0) -> int:
        return self._register_handle(path, flags | os.O_CREAT, mode)

    def open(self, path: str, flags: int) -> int:
        return self._register_handle(path, flags, None)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        state = self._state_of(fh)
        with state.lock:
            backing_size = os.fstat(state.fd).st_size
            logical = max(backing_size, state.extents.end())
            if offset >= logical:
                return b""
            end = min(offset + size, logical)
            data = os.pread(state.fd, end - offset, offset)
            if len(state.extents) == 0 and len(data) == end - offset:
                return data
            out = bytearray(data)
            out.extend(bytes(end - offset - len(out)))
            for start, buf in state.extents.overlapping(offset, end):
                lo, hi = max(start, offset), min(start + len(buf), end)
                out[lo - offset:hi - offset] = buf[lo - start:hi - start]
            return bytes(out)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        state = self._state_of(fh)
        if not state.writable:
            raise fuse.FuseOSError(errno.EBADF)
        failing = self.faults.check("write", state.rel_path)
        if failing is not None:
            raise fuse.FuseOSError(faults.error_of(failing))
        with state.lock:
            state.extents.write(offset, data)
            state.mtime_ns = time.time_ns()
        return len(data)

    def truncate(self, path: str | None, length: int, fh: int | None = None) -> int:
        if fh is not None:
            state = self._state_of(fh)
            with state.lock:
                self._truncate_locked(state, length)
            return 0
        with self._lock:
            full = self._full(path or "/")
            st = os.lstat(full)
            state = self._states.get((st.st_dev, st.st_ino))
            if state is None:
                os.truncate(full, length)
            else:
                with state.lock:
                    self._truncate_locked(state, length)
        return 0

    def fallocate(self, path: str, mode: int, offset: int, size: int, fh: int) -> int:
        """Mode 0 extends the size durably like truncate; KEEP_SIZE changes nothing visible."""
        state = self._state_of(fh)
        if mode == _FALLOC_FL_KEEP_SIZE:
            return 0
        if mode != 0:
            raise fuse.FuseOSError(errno.EOPNOTSUPP)
        with state.lock:
            os.posix_fallocate(state.fd, offset, size)
        return 0

    def flush(self, path: str, fh: int) -> int:
        """close() makes nothing durable, as on a real file system."""
        return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        state = self._state_of(fh)
        failing = self.faults.check("fsync", state.rel_path)
        if failing is not None:
            if failing.drop:
                with state.lock:
                    dropped = state.extents.dirty_bytes
                    state.extents.clear()
                    state.mtime_ns = None
                self.faults.record_drop(state.rel_path, dropped)
            raise fuse.FuseOSError(faults.error_of(failing))
        self._sync(state, bool(datasync))
        return 0

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        """Metadata is durable at once in this model: nothing to do but an injected error."""
        failing = self.faults.check("fsync", _rel(path))
        if failing is not None:
            raise fuse.FuseOSError(faults.error_of(failing))
        return 0

    def release(self, path: str, fh: int) -> int:
        with self._lock:
            state = self._handles.pop(fh, None)
            if state is not None:
                state.handles -= 1
                self._retire_if_idle(state)
        return 0

    # ------------------------------------------------------------- attributes

    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, Any]:
        if fh is not None:
            state: FileState | None = self._state_of(fh)
            st = os.fstat(state.fd)
        else:
            st = os.lstat(self._full(path or "/"))
            state = self._states.get((st.st_dev, st.st_ino)) if stat.S_ISREG(st.st_mode) else None
        attrs: dict[str, Any] = {
            "st_mode": st.st_mode, "st_nlink": st.st_nlink, "st_uid": st.st_uid,
            "st_gid": st.st_gid, "st_size": st.st_size, "st_rdev": st.st_rdev,
            "st_blocks": st.st_blocks, "st_blksize": st.st_blksize,
            "st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns, "st_ctime": st.st_ctime_ns,
        }
        if state is not None:
            with state.lock:
                size = max(st.st_size, state.extents.end())
                attrs["st_size"] = size
                attrs["st_blocks"] = max(st.st_blocks, (size + 511) // 512)
                if state.mtime_ns is not None and state.mtime_ns > st.st_mtime_ns:
                    attrs["st_mtime"] = attrs["st_ctime"] = state.mtime_ns
        return attrs

    def access(self, path: str, amode: int) -> int:
        if not os.access(self._full(path), amode):
            raise fuse.FuseOSError(errno.EACCES)
        return 0

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._full(path), mode)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        os.chown(self._full(path), uid, gid, follow_symlinks=False)
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        full = self._full(path)
        if times is None:
            os.utime(full, follow_symlinks=False)
        else:
            st = os.lstat(full)
            now = time.time_ns()
            chosen = []
            for value, current in zip(times, (st.st_atime_ns, st.st_mtime_ns), strict=True):
                chosen.append(now if value == _UTIME_NOW else current if value == _UTIME_OMIT
                              else value)
            os.utime(full, ns=(chosen[0], chosen[1]), follow_symlinks=False)
        with self._lock:
            st = os.lstat(full)
            state = self._states.get((st.st_dev, st.st_ino))
            if state is not None:
                state.mtime_ns = None
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        sv = os.statvfs(self.backing)
        return {key: getattr(sv, key) for key in (
            "f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree",
            "f_favail", "f_flag", "f_namemax")}

    # -------------------------------------------------------------- namespace

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._full(path))]

    def readlink(self, path: str) -> str:
        return os.readlink(self._full(path))

    def mknod(self, path: str, mode: int, dev: int) -> int:
        os.mknod(self._full(path), mode, dev)
        return 0

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._full(path), mode)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._full(path))
        return 0

    def symlink(self, target: str, source: str) -> int:
        """Create the link named target, pointing at source (mfusepy's argument order)."""
        os.symlink(source, self._full(target))
        return 0

    def link(self, target: str, source: str) -> int:
        """Create the hard link named target to the existing source; they share an overlay."""
        os.link(self._full(source), self._full(target))
        return 0

    def unlink(self, path: str) -> int:
        full = self._full(path)
        with self._lock:
            st = os.lstat(full)
            os.unlink(full)
            if stat.S_ISREG(st.st_mode) and st.st_nlink <= 1:
                self._forget_inode((st.st_dev, st.st_ino))
        return 0

    def rename(self, old: str, new: str, flags: int = 0) -> int:
        full_old, full_new = self._full(old), self._full(new)
        with self._lock:
            if flags & _RENAME_EXCHANGE:
                _renameat2(full_old, full_new, flags)
                self._rename_paths(_rel(old), _rel(new), swap=True)
                return 0
            if flags & _RENAME_NOREPLACE:
                _renameat2(full_old, full_new, flags)
            else:
                old_st = os.lstat(full_old)
                try:
                    new_st = os.lstat(full_new)
                except FileNotFoundError:
                    new_st = None
                os.rename(full_old, full_new)
                same = new_st is not None and (new_st.st_dev, new_st.st_ino) == (
                    old_st.st_dev, old_st.st_ino)
                if new_st is not None and not same and stat.S_ISREG(new_st.st_mode) \
                        and new_st.st_nlink <= 1:
                    self._forget_inode((new_st.st_dev, new_st.st_ino))
            self._rename_paths(_rel(old), _rel(new), swap=False)
        return 0

    def _rename_paths(self, old: str, new: str, swap: bool) -> None:
        """Keep each state's last known path current, for the power-loss report."""
        for state in self._states.values():
            moved = _with_prefix_replaced(state.rel_path, old, new)
            if moved is None and swap:
                moved = _with_prefix_replaced(state.rel_path, new, old)
            if moved is not None:
                state.rel_path = moved

    # ------------------------------------------------------- whole-fs events

    def flush_all(self) -> int:
        """Write back and fsync every dirty file (clean shutdown); bytes written."""
        with self._lock:
            states = [s for s in self._states.values() if s.extents.dirty_bytes > 0]
            total = 0
            for state in states:
                total += self._sync(state, datasync=False)
                self._retire_if_idle(state)
        return total

    def destroy(self, path: str) -> None:
        self.flush_all()

    def freeze_and_report(self) -> dict[str, Any]:
        """Stop every operation for good and account the dirty bytes: the power cut.

        The locks taken here are never released; the caller exits right after.
        """
        self._lock.acquire()
        states = list(self._states.values())
        for state in states:
            state.lock.acquire()
        dropped: dict[str, int] = {}
        inode_paths: dict[tuple[int, int], str] | None = None
        for state in states:
            if state.extents.dirty_bytes == 0:
                continue
            name = state.rel_path
            try:
                st = os.lstat(self._full(name))
                found = (st.st_dev, st.st_ino) == state.key
            except OSError:
                found = False
            if not found:
                if inode_paths is None:
                    inode_paths = self._walk_inodes()
                name = inode_paths.get(state.key, name)
            dropped[name] = dropped.get(name, 0) + state.extents.dirty_bytes
        return {"bytes_dropped": dict(sorted(dropped.items())), "files": len(dropped),
                "total_bytes": sum(dropped.values())}

    def _walk_inodes(self) -> dict[tuple[int, int], str]:
        found: dict[tuple[int, int], str] = {}
        for root, _dirs, files in os.walk(self.backing):
            for name in sorted(files):
                full = os.path.join(root, name)
                try:
                    st = os.lstat(full)
                except OSError:
                    continue
                found.setdefault((st.st_dev, st.st_ino), os.path.relpath(full, self.backing))
        return found


class _FUSE(fuse.FUSE):
    """mfusepy's FUSE, but passing rename's flags (RENAME_NOREPLACE/EXCHANGE) through."""

    def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
        return self.operations.rename(old.decode(self.encoding, self.errors),
                                      new.decode(self.encoding, self.errors), flags)


# ------------------------------------------------------------------ process


def _write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def _log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    print(f"{stamp} pagecache_fs[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


def _unmount(mountpoint: str) -> None:
    """Unmount our own mount; lazily when something still holds it open."""
    for args in (["fusermount3", "-u", mountpoint], ["fusermount3", "-u", "-z", mountpoint]):
        result = subprocess.run(args, capture_output=True, text=True, check=False)
        if result.returncode == 0:
            return
        _log(f"{' '.join(args)} failed: {result.stderr.strip()}")


def _apply_fault_request(fs: PageCacheFS, control_dir: str) -> None:
    """SIGUSR2: apply the control file's disk fault (or clear it) and answer."""
    try:
        with open(os.path.join(control_dir, faults.CONTROL_NAME), encoding="utf-8") as request:
            answer = fs.faults.apply(json.load(request))
    except (OSError, ValueError) as err:
        answer = {"id": None, "error": f"unreadable request: {err}"}
    _write_atomically(os.path.join(control_dir, faults.STATE_NAME), json.dumps(answer))
    _log(f"disk fault: {answer.get('error') or answer.get('fault')}")


def _watch_signals(fs: PageCacheFS, mountpoint: str, control_dir: str) -> None:
    """Handle the blocked signals synchronously (libfuse keeps the main thread in C)."""
    wanted = {signal.SIGUSR1, signal.SIGUSR2, *_CLEAN_SIGNALS}
    while True:
        sig = signal.sigwait(wanted)
        if sig == signal.SIGUSR2:
            _apply_fault_request(fs, control_dir)
            continue
        if sig == signal.SIGUSR1:
            report = fs.freeze_and_report()
            _write_atomically(os.path.join(control_dir, REPORT_NAME), json.dumps(report))
            _log(f"power loss: dropped {report['total_bytes']} bytes in {report['files']} files")
            os._exit(0)
        flushed = fs.flush_all()
        _log(f"signal {signal.Signals(sig).name}: flushed {flushed} bytes, unmounting")
        _unmount(mountpoint)
        return


def serve(backing: str, mountpoint: str, control_dir: str) -> int:
    """Mount and serve in this process until unmounted or crashed by SIGUSR1."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGUSR2, *_CLEAN_SIGNALS})
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    _write_atomically(os.path.join(control_dir, PID_NAME), f"{os.getpid()}\n")
    fs = PageCacheFS(backing)
    threading.Thread(target=_watch_signals, args=(fs, mountpoint, control_dir),
                     name="signals", daemon=True).start()
    _log(f"mounting {backing} on {mountpoint}")
    _FUSE(fs, mountpoint, foreground=True, allow_other=True, default_permissions=True,
          hard_remove=True, kernel_cache=True, fsname=f"pagecache:{fs.backing}",
          subtype=FS_SUBTYPE)
    flushed = fs.flush_all()
    _log(f"unmounted; flushed {flushed} bytes at exit")
    return 0


def is_mounted(mountpoint: str) -> bool:
    """Whether /proc/self/mountinfo lists a FUSE mount on mountpoint."""
    target = os.path.realpath(mountpoint)
    with open("/proc/self/mountinfo", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            sep = fields.index("-")
            point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
            if point == target and fields[sep + 1].startswith("fuse"):
                return True
    return False


def _launch_daemon(backing: str, mountpoint: str, control_dir: str) -> int:
    """Fork the daemon into its own session and wait until its mount is live."""
    log_path = os.path.join(control_dir, LOG_NAME)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null_fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null_fd, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        code = 1
        try:
            code = serve(backing, mountpoint, control_dir)
        except BaseException as exc:  # the daemon must say in its log why it died
            _log(f"daemon failed: {exc!r}")
        finally:
            os._exit(code)
    deadline = time.monotonic() + MOUNT_WAIT_S
    while time.monotonic() < deadline:
        if is_mounted(mountpoint):
            print(pid)
            return 0
        done, _status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    with open(log_path, encoding="utf-8", errors="replace") as log:
        tail = log.readlines()[-20:]
    sys.stderr.write(f"pagecache_fs: mount on {mountpoint} did not come up; log tail:\n")
    sys.stderr.writelines(tail)
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("backing_dir")
    parser.add_argument("mountpoint")
    parser.add_argument("--control-dir", required=True,
                        help="where pid, daemon.log and dropped.json are written")
    parser.add_argument("--foreground", action="store_true",
                        help="serve in this process instead of forking a daemon")
    args = parser.parse_args(argv)
    for label, path in (("backing dir", args.backing_dir), ("mountpoint", args.mountpoint)):
        if not os.path.isdir(path):
            print(f"pagecache_fs: {label} {path} is not a directory", file=sys.stderr)
            return 2
    control_dir = os.path.abspath(args.control_dir)
    os.makedirs(control_dir, exist_ok=True)
    backing, mountpoint = os.path.abspath(args.backing_dir), os.path.abspath(args.mountpoint)
    if args.foreground:
        return serve(backing, mountpoint, control_dir)
    return _launch_daemon(backing, mountpoint, control_dir)


if __name__ == "__main__":
    sys.exit(main())
