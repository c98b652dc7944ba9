"""Disk errors of the FUSE page-cache layer, mounted for real over temp dirs.

Why: the disk-fault nemesis is only as honest as the layer's fault mode. These
tests mount pagecache_fs.py (test_pagecache_fs.py's rig), switch a fault on and
off the way the nemesis does (control file + SIGUSR2) and check that exactly
one directory fails exactly the operations asked, with the errno asked, that a
failed fsync drops (and counts) the file's unsynced bytes only when told to,
and that healing leaves a layer that works as before.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_pagecache_fs import Layer, _wait, _write

from elr_harness.nemesis.pagecache.pagecache_faults import CONTROL_NAME, STATE_NAME, DiskFault


@pytest.fixture
def layer(tmp_path: Path) -> Iterator[Layer]:
    paths = [tmp_path / name for name in ("backing", "mnt", "control")]
    for path in paths:
        path.mkdir()
    for sub in ("dir-0", "dir-1", "dir-10"):
        (paths[0] / sub).mkdir()
    mounted = Layer(*paths)
    try:
        mounted.start()
        yield mounted
    finally:
        mounted.cleanup()


def _control(layer: Layer, fault: Any) -> dict[str, Any]:
    """What the nemesis does: write the request, SIGUSR2, wait for the answer to it."""
    ident = uuid.uuid4().hex
    fault_json = fault.to_json() if isinstance(fault, DiskFault) else fault
    (layer.control / CONTROL_NAME).write_text(json.dumps({"id": ident, "fault": fault_json}))
    assert layer.proc is not None
    layer.proc.send_signal(signal.SIGUSR2)
    answer: dict[str, Any] = {}

    def answered() -> bool:
        nonlocal answer
        try:
            answer = json.loads((layer.control / STATE_NAME).read_text())
        except (OSError, ValueError):
            return False
        return answer.get("id") == ident

    _wait(answered, "the daemon's answer")
    return answer


def _errno_of(action: Any) -> int | None:
    try:
        action()
    except OSError as err:
        return err.errno
    return None


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_then_fsync(path: Path, data: bytes, offset: int = 0) -> int | None:
    """Write (which must work) then fsync on the same descriptor; fsync's errno."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, offset)
        return _errno_of(lambda: os.fsync(fd))
    finally:
        os.close(fd)


def test_a_write_fault_fails_writes_in_one_directory_only(layer: Layer) -> None:
    before = layer.mnt / "dir-1" / "seg.log"
    _write(before, b"S" * 100, sync=True)
    answer = _control(layer, DiskFault("dir-1", "EIO", ("write",), drop=False))
    assert answer["fault"]["directory"] == "dir-1" and answer["failed"] == {"fsync": 0,
                                                                            "write": 0}
    assert _errno_of(lambda: _write(layer.mnt / "dir-1" / "new.log", b"x")) == errno.EIO
    assert _errno_of(lambda: _write(before, b"y", offset=100)) == errno.EIO
    # the other directories (dir-10 only shares a prefix) and the root work on
    for path in (layer.mnt / "dir-0" / "a.log", layer.mnt / "dir-10" / "b.log",
                 layer.mnt / "top.log"):
        _write(path, b"ok", sync=True)
        assert path.read_bytes() == b"ok"
    # only writes fail: an fsync in dir-1 still works, and the failed write never
    # reached the layer's overlay (the fsync would have made it durable)
    _fsync_path(before)
    assert (layer.backing / "dir-1" / "seg.log").read_bytes() == b"S" * 100
    healed = _control(layer, None)
    assert healed["fault"] is None and healed["failed"] == {"fsync": 0, "write": 2}
    _write(before, b"y", offset=100, sync=True)
    assert before.read_bytes() == b"S" * 100 + b"y"
    assert layer.power_loss()["total_bytes"] == 0


def test_an_fsync_fault_with_drop_forgets_the_unsynced_bytes_and_counts_them(
        layer: Layer) -> None:
    seg = layer.mnt / "dir-0" / "seg.log"
    _write(seg, b"S" * 1000, sync=True)
    _control(layer, DiskFault("dir-0", "ENOSPC", ("fsync",), drop=True))
    assert _write_then_fsync(seg, b"U" * 300, offset=1000) == errno.ENOSPC
    # Linux after a writeback error: the data never reached the disk and is gone (the
    # kernel's own page cache may still show it, as Linux's does, so the disk is read)
    assert (layer.backing / "dir-0" / "seg.log").read_bytes() == b"S" * 1000
    assert _write_then_fsync(layer.mnt / "dir-1" / "other.log", b"o" * 50) is None
    dir_fd = os.open(layer.mnt / "dir-0", os.O_RDONLY)
    try:
        assert _errno_of(lambda: os.fsync(dir_fd)) == errno.ENOSPC, "a directory's fsync too"
    finally:
        os.close(dir_fd)
    healed = _control(layer, None)
    assert healed["bytes_dropped"] == {"dir-0/seg.log": 300}
    assert healed["total_bytes_dropped"] == 300 and healed["failed"]["fsync"] == 2
    assert _write_then_fsync(seg, b"V" * 10, offset=1000) is None
    report = layer.power_loss()
    assert report["total_bytes"] == 0
    assert (layer.backing / "dir-0" / "seg.log").read_bytes() == b"S" * 1000 + b"V" * 10


def test_an_fsync_fault_without_drop_keeps_the_data_for_a_later_fsync(layer: Layer) -> None:
    seg = layer.mnt / "dir-1" / "seg.log"
    answer = _control(layer, DiskFault("dir-1", "EIO", ("fsync", "write"), drop=False))
    assert answer["fault"]["operations"] == ["fsync", "write"]
    assert _errno_of(lambda: _write(seg, b"x")) == errno.EIO  # created, but nothing written
    _control(layer, None)
    fd = os.open(seg, os.O_RDWR)
    try:
        os.pwrite(fd, b"D" * 64, 0)
        _control(layer, DiskFault("dir-1", "EIO", ("fsync",), drop=False))
        assert _errno_of(lambda: os.fsync(fd)) == errno.EIO
        assert seg.read_bytes() == b"D" * 64, "the dirty bytes are still there"
        healed = _control(layer, None)
        assert healed["total_bytes_dropped"] == 0 and healed["failed"] == {"fsync": 1,
                                                                          "write": 0}
        os.fsync(fd)
    finally:
        os.close(fd)
    layer.power_loss()
    assert (layer.mnt / "dir-1" / "seg.log").read_bytes() == b"D" * 64


def test_a_fault_on_the_whole_mount_and_a_new_fault_restarts_the_counts(layer: Layer) -> None:
    _control(layer, DiskFault("", "EIO", ("write",), drop=False))
    for sub in ("dir-0", "dir-1"):
        assert _errno_of(lambda s=sub: _write(layer.mnt / s / "f", b"x")) == errno.EIO
    assert _control(layer, DiskFault("dir-0", "ENOSPC", ("write",), drop=False))["failed"] == {
        "fsync": 0, "write": 0}
    assert _errno_of(lambda: _write(layer.mnt / "dir-0" / "f", b"x")) == errno.ENOSPC
    _write(layer.mnt / "dir-1" / "f", b"x", sync=True)
    assert _control(layer, None)["failed"]["write"] == 1


@pytest.mark.parametrize("fault", [
    {"directory": "../etc", "errno": "EIO", "operations": ["write"], "drop": False},
    {"directory": "dir-0", "errno": "EPERM", "operations": ["write"], "drop": False},
    {"directory": "dir-0", "errno": "EIO", "operations": ["read"], "drop": False},
    {"directory": "dir-0", "errno": "EIO", "operations": []},
    "dir-0",
])
def test_a_bad_request_is_answered_with_an_error_and_changes_nothing(
        layer: Layer, fault: Any) -> None:
    _control(layer, DiskFault("dir-1", "EIO", ("write",), drop=False))
    answer = _control(layer, fault)
    assert set(answer) == {"id", "error"} and answer["error"]
    assert _errno_of(lambda: _write(layer.mnt / "dir-1" / "f", b"x")) == errno.EIO
    _write(layer.mnt / "dir-0" / "f", b"x", sync=True)


def test_a_fault_is_named_relative_to_the_mount_and_covers_its_subtree() -> None:
    fault = DiskFault("dir-1", "EIO", ("fsync",), drop=True)
    assert fault.covers("dir-1") and fault.covers("/dir-1/t-0/0.log")
    assert not fault.covers("dir-10/t-0/0.log") and not fault.covers("dir-0/x")
    assert DiskFault("", "EIO", ("write",), drop=False).covers("anything/at/all")
    assert DiskFault.from_json(fault.to_json()) == fault
    for bad in (("/abs", "EIO", ("write",)), ("a/../b", "EIO", ("write",)),
                ("a", "EIO", ("write", "read")), ("a", "EAGAIN", ("write",))):
        with pytest.raises(ValueError):
            DiskFault(*bad, drop=False)
