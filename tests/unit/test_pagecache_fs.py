"""The FUSE page-cache layer, mounted for real over temp dirs on this host.

Why: the power-loss nemesis is only as honest as this layer. These tests mount
pagecache_fs.py as a subprocess, write through it, cut the power (SIGUSR1 +
remount) and check what survived against the crash model in its docstring:
file data survives only if fsynced, metadata survives at once.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

if not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None:
    pytest.skip("needs /dev/fuse and fusermount3 to mount the layer", allow_module_level=True)

from elr_harness.nemesis.pagecache import pagecache_fs  # noqa: E402

DAEMON = Path(pagecache_fs.__file__)
WAIT_S = 15.0


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@dataclass
class Layer:
    """One mounted layer over tmp dirs, with the power switch the nemesis uses."""

    backing: Path
    mnt: Path
    control: Path
    proc: subprocess.Popen | None = None
    crashed: list[subprocess.Popen] = field(default_factory=list)

    def start(self) -> None:
        log = open(self.control / "test-daemon.log", "ab")  # the daemon inherits it
        self.proc = subprocess.Popen(
            [sys.executable, str(DAEMON), str(self.backing), str(self.mnt),
             "--control-dir", str(self.control), "--foreground"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        _wait(lambda: pagecache_fs.is_mounted(str(self.mnt)) or self.proc.poll() is not None,
              "the mount")
        assert self.proc.poll() is None, self.log()

    def log(self) -> str:
        return (self.control / "test-daemon.log").read_text(errors="replace")

    def power_loss(self, remount: bool = True) -> dict:
        """SIGUSR1, collect the report, lazily unmount, mount a fresh daemon."""
        report_path = self.control / "dropped.json"
        report_path.unlink(missing_ok=True)
        assert self.proc is not None
        self.proc.send_signal(signal.SIGUSR1)
        self.proc.wait(timeout=WAIT_S)
        report = json.loads(report_path.read_text())
        subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)], check=True)
        self.crashed.append(self.proc)
        self.proc = None
        if remount:
            self.start()
        return report

    def cleanup(self) -> None:
        if pagecache_fs.is_mounted(str(self.mnt)):
            subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)], check=False)
        for proc in [self.proc, *self.crashed]:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=WAIT_S)


@pytest.fixture
def layer(tmp_path: Path) -> Iterator[Layer]:
    paths = [tmp_path / name for name in ("backing", "mnt", "control")]
    for path in paths:
        path.mkdir()
    mounted = Layer(*paths)
    try:
        mounted.start()
        yield mounted
    finally:
        mounted.cleanup()


def _write(path: Path, data: bytes, offset: int = 0, sync: bool = False,
           flags: int = 0) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o644)
    try:
        os.pwrite(fd, data, offset)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ----------------------------------------------------------------- data


def test_synced_data_survives_and_unsynced_bytes_are_dropped_and_counted(layer: Layer) -> None:
    synced, unsynced = layer.mnt / "synced.log", layer.mnt / "unsynced.log"
    _write(synced, b"S" * 5000, sync=True)
    _write(unsynced, b"a" * 1000)
    _write(unsynced, b"b" * 500, offset=200)  # overwrite: counted once
    _write(unsynced, b"c" * 100, offset=2000)  # a hole between: not counted
    assert unsynced.read_bytes() == b"a" * 200 + b"b" * 500 + b"a" * 300 + bytes(1000) + b"c" * 100
    assert os.stat(unsynced).st_size == 2100
    assert (layer.backing / "unsynced.log").stat().st_size == 0

    report = layer.power_loss()

    assert report == {"bytes_dropped": {"unsynced.log": 1100}, "files": 1, "total_bytes": 1100}
    assert synced.read_bytes() == b"S" * 5000
    assert unsynced.exists() and unsynced.read_bytes() == b""


def test_partially_synced_file_keeps_exactly_its_synced_prefix(layer: Layer) -> None:
    path = layer.mnt / "00000000000000000000.log"
    prefix = bytes(range(256)) * 16
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, prefix)
    os.fdatasync(fd)
    os.write(fd, b"T" * 1000)
    os.close(fd)
    _write(path, b"Z" * 10, offset=100)  # dirties a synced region again

    report = layer.power_loss()

    assert report["bytes_dropped"] == {"00000000000000000000.log": 1010}
    assert path.read_bytes() == prefix


def test_close_does_not_make_data_durable_but_later_fsync_does(layer: Layer) -> None:
    path = layer.mnt / "closed-then-synced"
    _write(path, b"x" * 300)  # closed, still only in memory
    assert path.read_bytes() == b"x" * 300, "a closed file's dirty data must stay readable"
    _fsync(path)
    _write(path, b"y" * 20, offset=300)

    report = layer.power_loss()

    assert report["total_bytes"] == 20
    assert path.read_bytes() == b"x" * 300


def test_clean_shutdown_writes_back_every_dirty_byte(layer: Layer) -> None:
    (layer.mnt / "dir").mkdir()
    payloads = {f"dir/f{i}": os.urandom(100_000 + i) for i in range(5)}
    for name, data in payloads.items():
        _write(layer.mnt / name, data)
    assert layer.proc is not None
    layer.proc.send_signal(signal.SIGTERM)
    assert layer.proc.wait(timeout=WAIT_S) == 0
    assert not pagecache_fs.is_mounted(str(layer.mnt))
    for name, data in payloads.items():
        assert (layer.backing / name).read_bytes() == data


def test_concurrent_writers_keep_their_own_synced_prefixes(layer: Layer) -> None:
    chunk, chunks, synced_upto = 4096, 40, 25
    shared = layer.mnt / "shared"
    _write(shared, b"")
    errors: list[BaseException] = []

    def own_file(n: int) -> None:
        try:
            fd = os.open(layer.mnt / f"w{n}", os.O_RDWR | os.O_CREAT, 0o644)
            for i in range(chunks):
                os.pwrite(fd, bytes([n]) * chunk, i * chunk)
                if i == synced_upto - 1:
                    os.fsync(fd)
            os.close(fd)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    def shared_stripes(n: int) -> None:
        try:
            fd = os.open(shared, os.O_RDWR)
            for i in range(n, 64, 4):
                os.pwrite(fd, bytes([65 + n]) * 1000, i * 1000)
            os.close(fd)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=own_file, args=(n,)) for n in range(4)]
    threads += [threading.Thread(target=shared_stripes, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    expected_shared = b"".join(bytes([65 + i % 4]) * 1000 for i in range(64))
    assert shared.read_bytes() == expected_shared

    report = layer.power_loss()

    unsynced = (chunks - synced_upto) * chunk
    assert report["bytes_dropped"] == {"shared": 64_000, **{f"w{n}": unsynced for n in range(4)}}
    assert report["total_bytes"] == 64_000 + 4 * unsynced
    for n in range(4):
        assert (layer.mnt / f"w{n}").read_bytes() == bytes([n]) * chunk * synced_upto
    assert shared.read_bytes() == b""


# ------------------------------------------------------------- metadata


def test_created_but_never_synced_file_survives_empty(layer: Layer) -> None:
    (layer.mnt / "topic-0").mkdir()
    path = layer.mnt / "topic-0" / "leader-epoch-checkpoint"
    _write(path, b"0\n1\n0 0\n")
    report = layer.power_loss()
    assert report["bytes_dropped"] == {"topic-0/leader-epoch-checkpoint": 8}
    assert path.exists() and path.stat().st_size == 0


def test_rename_survives_and_the_overlay_moves_with_the_file(layer: Layer) -> None:
    old, new = layer.mnt / "a.log", layer.mnt / "a.log.deleted"
    _write(old, b"synced", sync=True)
    _write(old, b"+dirty", offset=6)
    os.rename(old, new)
    assert new.read_bytes() == b"synced+dirty"
    (layer.mnt / "topic-0").mkdir()
    _write(layer.mnt / "topic-0" / "seg", b"q" * 7)
    os.rename(layer.mnt / "topic-0", layer.mnt / "topic-0.abc-delete")

    report = layer.power_loss()

    assert report["bytes_dropped"] == {"a.log.deleted": 6, "topic-0.abc-delete/seg": 7}
    assert not old.exists()
    assert new.read_bytes() == b"synced"
    assert (layer.mnt / "topic-0.abc-delete" / "seg").stat().st_size == 0


def test_rename_over_a_file_replaces_it_and_drops_the_old_overlay(layer: Layer) -> None:
    target, tmp = layer.mnt / "checkpoint", layer.mnt / "checkpoint.tmp"
    _write(target, b"old-synced", sync=True)
    _write(target, b"-old-dirty", offset=10)
    _write(tmp, b"new-synced", sync=True)
    os.rename(tmp, target)
    assert target.read_bytes() == b"new-synced"

    report = layer.power_loss()

    assert report["total_bytes"] == 0
    assert target.read_bytes() == b"new-synced"
    assert not tmp.exists()


def test_unlink_drops_the_overlay_but_an_open_file_stays_readable(layer: Layer) -> None:
    path = layer.mnt / "gone.log"
    _write(path, b"d" * 50)
    fd = os.open(path, os.O_RDWR)
    os.unlink(path)
    assert os.pread(fd, 100, 0) == b"d" * 50
    os.close(fd)
    keep = layer.mnt / "keep.log"
    _write(keep, b"k" * 5)

    report = layer.power_loss()

    assert report["bytes_dropped"] == {"keep.log": 5}
    assert not path.exists()


def test_truncate_survives_and_clips_dirty_bytes(layer: Layer) -> None:
    shrink, grow = layer.mnt / "shrink", layer.mnt / "grow"
    _write(shrink, b"s" * 1000, sync=True)
    _write(shrink, b"t" * 1000, offset=1000)
    os.truncate(shrink, 500)
    _write(grow, b"g" * 1000, sync=True)
    _write(grow, b"h" * 1000, offset=1000)
    fd = os.open(grow, os.O_RDWR)
    os.ftruncate(fd, 1500)
    os.close(fd)
    assert grow.read_bytes() == b"g" * 1000 + b"h" * 500

    report = layer.power_loss()

    assert report["bytes_dropped"] == {"grow": 500}
    assert shrink.read_bytes() == b"s" * 500
    assert grow.read_bytes() == b"g" * 1000 + bytes(500)


def test_open_with_o_trunc_is_durable_metadata(layer: Layer) -> None:
    path = layer.mnt / "trunc-on-open"
    _write(path, b"o" * 100, sync=True)
    _write(path, b"n" * 10, flags=os.O_TRUNC)
    assert path.read_bytes() == b"n" * 10
    layer.power_loss()
    assert path.read_bytes() == b""


def test_hard_links_share_one_overlay(layer: Layer) -> None:
    first, second = layer.mnt / "first", layer.mnt / "second"
    _write(first, b"1" * 10)
    os.link(first, second)
    _write(second, b"2" * 5, offset=10)
    assert first.read_bytes() == b"1" * 10 + b"2" * 5
    os.unlink(first)  # one link left: the dirty data must still be counted

    report = layer.power_loss()

    assert report["bytes_dropped"] == {"second": 15}
    assert second.read_bytes() == b""


def test_rename_flags_noreplace_and_exchange(layer: Layer) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    a, b = layer.mnt / "a", layer.mnt / "b"
    _write(a, b"AAAA")
    _write(b, b"BB")

    def renameat2(old: Path, new: Path, flags: int) -> int:
        result = libc.renameat2(-100, os.fsencode(old), -100, os.fsencode(new), flags)
        return 0 if result == 0 else ctypes.get_errno()

    assert renameat2(a, b, 1) == errno.EEXIST  # RENAME_NOREPLACE
    assert renameat2(a, b, 2) == 0  # RENAME_EXCHANGE
    assert a.read_bytes() == b"BB" and b.read_bytes() == b"AAAA"

    report = layer.power_loss()

    assert report["bytes_dropped"] == {"a": 2, "b": 4}


def test_metadata_operations_pass_through(layer: Layer) -> None:
    path = layer.mnt / "meta"
    _write(path, b"m", sync=True)
    fd = os.open(path, os.O_RDWR)
    os.posix_fallocate(fd, 0, 8192)  # extends the size: durable metadata
    os.close(fd)
    os.chmod(path, 0o600)
    os.utime(path, ns=(1_000_000_000_000_000_000, 1_500_000_000_123_456_789))
    subprocess.run(["touch", "-a", str(path)], check=True)  # must leave mtime alone
    os.symlink("meta", layer.mnt / "link")
    assert os.readlink(layer.mnt / "link") == "meta"
    assert sorted(os.listdir(layer.mnt)) == ["link", "meta"]
    assert os.statvfs(layer.mnt).f_bsize == os.statvfs(layer.backing).f_bsize

    layer.power_loss()

    st = os.stat(path)
    assert st.st_mode & 0o777 == 0o600
    assert st.st_mtime_ns == 1_500_000_000_123_456_789
    assert st.st_size == 8192
    assert path.read_bytes()[:1] == b"m"


# ------------------------------------------------------------------ JVM

JAVA_PROGRAM = r"""
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;

public class MmapProbe {
    public static void main(String[] args) throws Exception {
        String dir = args[0];
        try (RandomAccessFile raf = new RandomAccessFile(dir + "/forced.index", "rw")) {
            raf.setLength(8192);
            MappedByteBuffer map = raf.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, 8192);
            for (int i = 0; i < 4096; i++) map.put(i, (byte) 'F');
            map.force();
        }
        try (RandomAccessFile raf = new RandomAccessFile(dir + "/unforced.index", "rw")) {
            raf.setLength(8192);
            MappedByteBuffer map = raf.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, 8192);
            for (int i = 0; i < 4096; i++) map.put(i, (byte) 'U');
            if (map.get(100) != 'U') throw new IllegalStateException("mapped read-back failed");
        }
        try (RandomAccessFile raf = new RandomAccessFile(dir + "/segment.log", "rw")) {
            FileChannel ch = raf.getChannel();
            ch.write(ByteBuffer.wrap("durable-records".getBytes()));
            ch.force(true);
            ch.write(ByteBuffer.wrap("-lost-records".getBytes()));
        }
        System.out.println("ok");
    }
}
"""


def test_jvm_mapped_writes_survive_only_when_forced(layer: Layer, tmp_path: Path) -> None:
    java = shutil.which("java")
    if java is None:
        pytest.skip("java is not on PATH: the memory-mapped JVM check needs it")
    source = tmp_path / "MmapProbe.java"
    source.write_text(JAVA_PROGRAM)
    run = subprocess.run([java, "-Xmx64m", str(source), str(layer.mnt)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr

    report = layer.power_loss()

    assert report["bytes_dropped"].get("segment.log") == len("-lost-records")
    # The kernel may or may not have written the unforced page back to the layer yet.
    assert report["bytes_dropped"].get("unforced.index", 0) in (0, 4096)
    assert "forced.index" not in report["bytes_dropped"]
    assert (layer.mnt / "forced.index").read_bytes() == b"F" * 4096 + bytes(4096)
    assert (layer.mnt / "unforced.index").read_bytes() == bytes(8192)
    assert (layer.mnt / "segment.log").read_bytes() == b"durable-records"
