"""Host-side control of the page-cache layer (nemesis/pagecache/control.py) through
the Node protocol.

Why: the nemesis drives the layer only through Node.exec/read_file/write_file.
Here a Node that runs its commands on this host stands in for a container, so
install, mount, power loss (with remount) and clean unmount run for real
against a real FUSE mount; the container path is the integration tests' job.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

if not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None:
    pytest.skip("needs /dev/fuse and fusermount3 to mount the layer", allow_module_level=True)

from elr_harness.cluster.node import ExecResult, NodeSpec, Role  # noqa: E402
from elr_harness.core.config import PageCacheConfig  # noqa: E402
from elr_harness.core.errors import HarnessError  # noqa: E402
from elr_harness.nemesis.pagecache import control as pagecache  # noqa: E402


class LocalNode:
    """The Node protocol on this host: commands run via subprocess, files are local."""

    def __init__(self) -> None:
        self.spec = NodeSpec(name="local-test", role=Role.BROKER, node_id=1, address="127.0.0.1")
        self.fake_kafka_pid: int | None = None

    def exec(self, cmd: list[str] | str, *, timeout_s: float = 60.0,
             detach: bool = False) -> ExecResult:
        args = ["sh", "-c", cmd] if isinstance(cmd, str) else cmd
        if detach:
            subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
            return ExecResult(0, "")
        run = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s,
                             check=False)
        return ExecResult(run.returncode, run.stdout + run.stderr)

    def signal_kafka(self, signal_name: str) -> bool:
        return False

    def start_kafka(self) -> None:
        raise AssertionError("the page-cache layer must never start Kafka")

    def kafka_pid(self) -> int | None:
        return self.fake_kafka_pid

    def read_file(self, path: str) -> bytes:
        return Path(path).read_bytes()

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        Path(path).write_bytes(data)
        os.chmod(path, mode)


@dataclass
class Setup:
    node: LocalNode
    config: PageCacheConfig
    backing: Path
    mnt: Path
    control: Path


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    config = replace(PageCacheConfig(), files_dir=str(tmp_path / "opt"),
                     backing_dir=str(tmp_path / "backing"), mountpoint=str(tmp_path / "mnt"),
                     control_dir=str(tmp_path / "control"), python="python3",
                     mount_timeout_s=20.0, unmount_timeout_s=20.0,
                     fault_control_timeout_s=3.0, fault_signal_retry_s=0.3)
    node = LocalNode()
    try:
        yield Setup(node, config, Path(config.backing_dir), Path(config.mountpoint),
                    Path(config.control_dir))
    finally:
        mnt = config.mountpoint
        for _ in range(3):  # a crashed-and-remounted layer may be stacked once
            if subprocess.run(["mountpoint", "-q", mnt], check=False).returncode != 0:
                break
            subprocess.run(["fusermount3", "-u", "-z", mnt], check=False)
        _kill_our_daemon(Path(config.control_dir))


def _kill_our_daemon(control: Path) -> None:
    """Kill the daemon this test started, checking the pid is still that daemon."""
    pid_file = control / "pid"
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return
    if os.fsencode(str(control)) in cmdline and any(b"pagecache_fs.py" in a for a in cmdline):
        os.kill(pid, 9)


def _mount(s: Setup) -> int:
    pagecache.install(s.node, files_dir=s.config.files_dir, config=s.config)
    return pagecache.mount(s.node, s.config.backing_dir, s.config.mountpoint,
                           s.config.control_dir, files_dir=s.config.files_dir, config=s.config)


def _write(path: Path, data: bytes, sync: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def test_install_copies_the_daemon_and_mfusepy(setup: Setup) -> None:
    pagecache.install(setup.node, files_dir=setup.config.files_dir, config=setup.config)
    files = Path(setup.config.files_dir)
    assert (files / "pagecache_fs.py").read_bytes() == \
        Path(pagecache.__file__).with_name("pagecache_fs.py").read_bytes()
    assert (files / "mfusepy.py").stat().st_size > 10_000
    assert (files / "pagecache_faults.py").read_bytes() == \
        Path(pagecache.__file__).with_name("pagecache_faults.py").read_bytes()


def test_a_disk_fault_is_set_and_cleared_through_the_node(setup: Setup) -> None:
    """The nemesis's path: control file + SIGUSR2 through Node.exec, answer awaited."""
    import errno

    from elr_harness.nemesis.pagecache.pagecache_faults import DiskFault

    _mount(setup)
    (setup.mnt / "dir-1").mkdir()
    layer = pagecache.PageCacheLayer(setup.config)
    assert layer.relative(str(setup.mnt / "dir-1")) == "dir-1"
    assert layer.relative(str(setup.mnt)) == ""
    with pytest.raises(HarnessError, match="not under the page-cache mount"):
        layer.relative("/elsewhere/dir-1")
    answer = layer.disk_fault(setup.node, DiskFault("dir-1", "ENOSPC", ("write",), drop=False))
    assert answer["fault"] == {"directory": "dir-1", "errno": "ENOSPC",
                               "operations": ["write"], "drop": False}
    with pytest.raises(OSError) as failed:
        _write(setup.mnt / "dir-1" / "seg", b"x", sync=False)
    assert failed.value.errno == errno.ENOSPC
    _write(setup.mnt / "seg", b"x", sync=True)
    healed = layer.disk_fault(setup.node, None)
    assert healed["fault"] is None and healed["failed"] == {"fsync": 0, "write": 1}
    _write(setup.mnt / "dir-1" / "seg", b"y", sync=True)
    assert (setup.backing / "dir-1" / "seg").read_bytes() == b"y"
    pid = int((setup.control / "pid").read_text())
    os.kill(pid, 9)
    _wait_gone(pid)
    with pytest.raises(HarnessError, match="no live page-cache layer"):
        layer.disk_fault(setup.node, None)
    subprocess.run(["fusermount3", "-u", "-z", str(setup.mnt)], check=True)  # the dead mount


def _wait_gone(pid: int, timeout_s: float = 10.0) -> None:
    """Until the killed daemon is gone or a zombie (SIGKILL lands asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                return
        except FileNotFoundError:
            return
        time.sleep(0.05)
    raise AssertionError(f"pid {pid} still runs")


class FlakyNode(LocalNode):
    """An engine under load: the first look at the pid file fails, the first signal is
    lost, the second is delivered but its exit status is not known (Docker's exec
    inspected before the exit was recorded answers None)."""

    def __init__(self) -> None:
        super().__init__()
        self.pid_looks = 0
        self.kills = 0

    def exec(self, cmd: list[str] | str, *, timeout_s: float = 60.0,
             detach: bool = False) -> ExecResult:
        if isinstance(cmd, list) and cmd[0] == "cat" and cmd[1].endswith("/pid"):
            self.pid_looks += 1
            if self.pid_looks == 1:
                return ExecResult(-1, "")
        if isinstance(cmd, list) and cmd[:2] == ["kill", "-USR2"]:
            self.kills += 1
            if self.kills == 1:
                return ExecResult(0, "")
            super().exec(cmd, timeout_s=timeout_s)
            return ExecResult(-1, "")
        return super().exec(cmd, timeout_s=timeout_s, detach=detach)


def test_a_disk_fault_request_survives_an_engine_that_answers_late(setup: Setup) -> None:
    from elr_harness.nemesis.pagecache.pagecache_faults import DiskFault

    _mount(setup)
    flaky = FlakyNode()
    answer = pagecache.set_disk_fault(flaky, DiskFault("", "EIO", ("write",), drop=False),
                                      setup.config.control_dir, setup.config)
    assert answer["fault"]["errno"] == "EIO"
    assert (flaky.pid_looks, flaky.kills) == (2, 2)
    with pytest.raises(OSError):
        _write(setup.mnt / "f", b"x", sync=False)
    assert pagecache.set_disk_fault(setup.node, None, setup.config.control_dir,
                                    setup.config)["failed"]["write"] == 1


def test_power_loss_reports_drops_and_remounts(setup: Setup) -> None:
    first_pid = _mount(setup)
    assert pagecache.is_mounted(setup.node, setup.config.mountpoint, config=setup.config)
    (setup.mnt / "topic-0").mkdir()
    _write(setup.mnt / "topic-0" / "0.log", b"durable", sync=True)
    _write(setup.mnt / "topic-0" / "0.log", b"volatile", sync=False)

    report = pagecache.power_loss(setup.node, setup.config.mountpoint, setup.config.control_dir,
                                  files_dir=setup.config.files_dir, config=setup.config)

    assert report == {"bytes_dropped": {"topic-0/0.log": 8}, "files": 1, "total_bytes": 8}
    new_pid = int((setup.control / "pid").read_text())
    assert new_pid != first_pid
    assert not Path(f"/proc/{first_pid}").exists() or \
        Path(f"/proc/{first_pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    assert pagecache.is_mounted(setup.node, setup.config.mountpoint, config=setup.config)
    assert (setup.mnt / "topic-0" / "0.log").read_bytes() == b"durable"
    _write(setup.mnt / "topic-0" / "0.log", b"-again", sync=False)  # the new layer works
    assert (setup.mnt / "topic-0" / "0.log").read_bytes() == b"durable-again"


def test_power_loss_without_remount_leaves_the_mountpoint_unmounted(setup: Setup) -> None:
    _mount(setup)
    report = pagecache.power_loss(setup.node, setup.config.mountpoint, setup.config.control_dir,
                                  remount_after=False, config=setup.config)
    assert report["total_bytes"] == 0
    assert not pagecache.is_mounted(setup.node, setup.config.mountpoint, config=setup.config)
    pagecache.remount(setup.node, setup.config.backing_dir, setup.config.mountpoint,
                      setup.config.control_dir, files_dir=setup.config.files_dir,
                      config=setup.config)
    assert pagecache.is_mounted(setup.node, setup.config.mountpoint, config=setup.config)


def test_power_loss_refuses_while_kafka_runs(setup: Setup) -> None:
    _mount(setup)
    _write(setup.mnt / "f", b"x", sync=False)
    setup.node.fake_kafka_pid = 4242
    with pytest.raises(HarnessError, match="kill Kafka"):
        pagecache.power_loss(setup.node, setup.config.mountpoint, setup.config.control_dir,
                             config=setup.config)
    assert (setup.mnt / "f").read_bytes() == b"x", "the layer must be untouched"


def test_clean_unmount_writes_everything_back(setup: Setup) -> None:
    _mount(setup)
    data = os.urandom(300_000)
    _write(setup.mnt / "segment", data, sync=False)
    assert (setup.backing / "segment").stat().st_size == 0
    pagecache.clean_unmount(setup.node, setup.config.mountpoint, setup.config.control_dir,
                            config=setup.config)
    assert not pagecache.is_mounted(setup.node, setup.config.mountpoint, config=setup.config)
    assert (setup.backing / "segment").read_bytes() == data
    # A second call is a no-op on an unmounted mountpoint.
    pagecache.clean_unmount(setup.node, setup.config.mountpoint, setup.config.control_dir,
                            config=setup.config)


def test_mounting_twice_is_refused_but_a_dead_mount_is_replaced(setup: Setup) -> None:
    pid = _mount(setup)
    with pytest.raises(HarnessError, match="already has a live"):
        pagecache.mount(setup.node, setup.config.backing_dir, setup.config.mountpoint,
                        setup.config.control_dir, files_dir=setup.config.files_dir,
                        config=setup.config)
    os.kill(pid, 9)  # the daemon dies without unmounting: the mount is dead
    _wait_gone(pid)  # SIGKILL lands asynchronously; a loaded machine showed it alive
    new_pid = pagecache.mount(setup.node, setup.config.backing_dir, setup.config.mountpoint,
                              setup.config.control_dir, files_dir=setup.config.files_dir,
                              config=setup.config)
    assert new_pid != pid
    _write(setup.mnt / "after", b"ok", sync=True)
    assert (setup.backing / "after").read_bytes() == b"ok"


def test_bad_paths_are_refused_before_anything_runs(setup: Setup) -> None:
    with pytest.raises(HarnessError, match="absolute path"):
        pagecache.mount(setup.node, "relative/backing", setup.config.mountpoint,
                        setup.config.control_dir, config=setup.config)
    with pytest.raises(HarnessError, match="no live page-cache layer"):
        pagecache.power_loss(setup.node, setup.config.mountpoint, setup.config.control_dir,
                             config=setup.config)


def test_ensure_does_not_remount_a_live_layer_that_one_look_missed(setup: Setup) -> None:
    """A restart's ensure() met one failed exec (a real run's disk-fault end): mount()
    then refused the live layer. Now a layer must look dead every time to be remounted."""
    pid = _mount(setup)
    layer = pagecache.PageCacheLayer(setup.config)
    flaky = FlakyNode()
    layer.ensure(flaky)
    assert flaky.pid_looks == 2 and int((setup.control / "pid").read_text()) == pid
    os.kill(pid, 9)
    _wait_gone(pid)
    layer.ensure(setup.node)  # a dead one is replaced
    assert int((setup.control / "pid").read_text()) != pid
    assert pagecache.is_mounted(setup.node, setup.config.mountpoint, config=setup.config)
