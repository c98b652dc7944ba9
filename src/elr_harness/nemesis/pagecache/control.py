"""Host-side control of the page-cache-loss layer (pagecache_fs.py) in a node.

Why: the page-cache-loss nemesis simulates a power cut on a broker. Its log dirs
sit on a FUSE layer that keeps unsynced writes in memory (see pagecache_fs.py
for the crash model); this module installs that layer in a node, mounts it,
crashes it (dropping every unsynced byte) and unmounts it cleanly, using only
the cluster.node.Node protocol, so it works on Docker containers and SSH hosts.

Call order of a power loss: kill Kafka with SIGKILL, then `power_loss(...)`,
which crashes the layer, lazily unmounts it and (by default) mounts a fresh
layer over the same backing dir before it returns the report, so the log dir is
never left as a bare directory Kafka could start on; then restart Kafka.

A disk error (`set_disk_fault`) needs no restart of anything: the live daemon
is told through a control file and SIGUSR2 (pagecache_faults.py) to fail one
directory's write and/or fsync, and later to stop failing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from elr_harness.cluster.node import ExecResult, Node, exec_answered
from elr_harness.core.config import PageCacheConfig
from elr_harness.core.errors import HarnessError
from elr_harness.core.wait import wait_until
from elr_harness.nemesis.pagecache.pagecache_faults import CONTROL_NAME, STATE_NAME, DiskFault

DEFAULTS = PageCacheConfig()
DAEMON_FILE = "pagecache_fs.py"
#: What the daemon imports from beside it (besides mfusepy).
FAULTS_FILE = "pagecache_faults.py"
REPORT_NAME = "dropped.json"
PID_NAME = "pid"
LOG_NAME = "daemon.log"
#: The daemon names its mount "pagecache:<backing dir>" (first field of /proc/mounts).
FSNAME_PREFIX = "pagecache:"


def install(node: Node, files_dir: str = DEFAULTS.files_dir,
            config: PageCacheConfig = DEFAULTS) -> None:
    """Copy the daemon and mfusepy into the node and check that they load there."""
    ctl = _Control(node, config)
    ctl.run(["mkdir", "-p", files_dir], "create the layer's directory")
    node.write_file(f"{files_dir}/{DAEMON_FILE}",
                    Path(__file__).with_name(DAEMON_FILE).read_bytes(), mode=0o755)
    node.write_file(f"{files_dir}/{FAULTS_FILE}",
                    Path(__file__).with_name(FAULTS_FILE).read_bytes(), mode=0o644)
    node.write_file(f"{files_dir}/mfusepy.py", _mfusepy_source().read_bytes(), mode=0o644)
    probe = f"import sys; sys.path.insert(0, {files_dir!r}); import mfusepy"
    result = node.exec([config.python, "-c", probe], timeout_s=config.mount_timeout_s)
    if not result.ok:
        raise HarnessError(
            f"the page-cache layer cannot load on {node.spec.name} (is fuse3 installed?):\n"
            + "\n".join(result.output.rstrip().splitlines()[-config.log_tail_lines:]))


def mount(node: Node, backing: str = DEFAULTS.backing_dir,
          mountpoint: str = DEFAULTS.mountpoint, control_dir: str = DEFAULTS.control_dir,
          *, files_dir: str = DEFAULTS.files_dir, config: PageCacheConfig = DEFAULTS) -> int:
    """Start the layer over backing on mountpoint; returns the daemon's pid once mounted.

    A leftover mount whose daemon is dead (after a crash) is lazily unmounted
    first; a live one is an error, since stacking two layers would hide data.
    """
    for label, path in (("backing dir", backing), ("mountpoint", mountpoint),
                        ("control dir", control_dir)):
        if not path.startswith("/") or any(ch in path for ch in ",\n\t "):
            raise HarnessError(f"page-cache {label} must be an absolute path without commas "
                               f"or white space: {path!r}")
    ctl = _Control(node, config)
    if ctl.mount_source(mountpoint) is not None:
        pid = ctl.daemon_pid(control_dir)
        if pid is not None and ctl.alive(pid):
            raise HarnessError(f"{mountpoint} on {node.spec.name} already has a live "
                               f"page-cache layer (pid {pid})")
        ctl.lazy_unmount(mountpoint)
    ctl.run(["mkdir", "-p", backing, mountpoint, control_dir], "create the layer's dirs")
    launch = node.exec([config.python, f"{files_dir}/{DAEMON_FILE}", backing, mountpoint,
                        "--control-dir", control_dir], timeout_s=config.mount_timeout_s)
    if not launch.ok:
        raise HarnessError(
            f"the page-cache layer did not mount on {mountpoint} on {node.spec.name} "
            f"(launcher exit {launch.exit_code}); daemon log tail:\n{ctl.log_tail(control_dir)}")
    ctl.wait_until(lambda: ctl.mount_source(mountpoint) is not None, config.mount_timeout_s,
                   f"the page-cache mount on {mountpoint} on {node.spec.name} did not show in "
                   "/proc/mounts", control_dir)
    pid = ctl.daemon_pid(control_dir)
    if pid is None:
        raise HarnessError(f"the page-cache layer on {node.spec.name} mounted but wrote no pid "
                           f"to {control_dir}/{PID_NAME}")
    return pid


def remount(node: Node, backing: str = DEFAULTS.backing_dir,
            mountpoint: str = DEFAULTS.mountpoint, control_dir: str = DEFAULTS.control_dir,
            *, files_dir: str = DEFAULTS.files_dir, config: PageCacheConfig = DEFAULTS) -> int:
    """Mount a fresh layer where a crashed one was (mount() clears the dead mount)."""
    return mount(node, backing, mountpoint, control_dir, files_dir=files_dir, config=config)


def power_loss(node: Node, mountpoint: str = DEFAULTS.mountpoint,
               control_dir: str = DEFAULTS.control_dir, *, remount_after: bool = True,
               files_dir: str = DEFAULTS.files_dir,
               config: PageCacheConfig = DEFAULTS) -> dict[str, Any]:
    """Crash the layer: every byte never fsynced is gone. Returns the daemon's report.

    The report is {"bytes_dropped": {path: bytes}, "files": N, "total_bytes": N},
    paths relative to the log dir. Kafka must already be dead (kill -9): a live
    JVM would keep using the crashed mount. With remount_after (the default) a
    fresh layer is mounted over the same backing dir before this returns.
    """
    ctl = _Control(node, config)
    if node.kafka_pid() is not None:
        raise HarnessError(f"power loss on {node.spec.name}: kill Kafka (SIGKILL) before "
                           "dropping its page cache")
    backing = ctl.mount_source(mountpoint)
    pid = ctl.daemon_pid(control_dir)
    if backing is None or pid is None or not ctl.alive(pid):
        raise HarnessError(f"power loss on {node.spec.name}: no live page-cache layer on "
                           f"{mountpoint}")
    report_path = f"{control_dir}/{REPORT_NAME}"
    ctl.run(["rm", "-f", report_path], "remove an old report")
    ctl.run(["kill", "-USR1", str(pid)], "signal the page-cache daemon")
    report = ctl.wait_for_report(report_path, control_dir)
    ctl.wait_until(lambda: not ctl.alive(pid), config.exit_timeout_s,
                   f"the crashed page-cache daemon (pid {pid}) on {node.spec.name} did not exit",
                   control_dir)
    ctl.lazy_unmount(mountpoint)
    if remount_after:
        mount(node, backing, mountpoint, control_dir, files_dir=files_dir, config=config)
    return report


def clean_unmount(node: Node, mountpoint: str = DEFAULTS.mountpoint,
                  control_dir: str = DEFAULTS.control_dir,
                  config: PageCacheConfig = DEFAULTS) -> None:
    """Shut the layer down like a clean machine shutdown: all dirty data is written back.

    Stop Kafka first; a mount that is still busy is detached lazily by the daemon
    and this waits (bounded) for its last user to let go.
    """
    ctl = _Control(node, config)
    if ctl.mount_source(mountpoint) is None:
        return
    pid = ctl.daemon_pid(control_dir)
    if pid is None or not ctl.alive(pid):
        ctl.lazy_unmount(mountpoint)
        return
    ctl.run(["kill", "-TERM", str(pid)], "signal the page-cache daemon")
    ctl.wait_until(lambda: not ctl.alive(pid) and ctl.mount_source(mountpoint) is None,
                   config.unmount_timeout_s,
                   f"the page-cache layer on {mountpoint} on {node.spec.name} did not unmount",
                   control_dir)


def set_disk_fault(node: Node, fault: DiskFault | None,
                   control_dir: str = DEFAULTS.control_dir,
                   config: PageCacheConfig = DEFAULTS) -> dict[str, Any]:
    """Make the live layer fail as `fault` says (None: stop failing); its answer.

    The answer is the daemon's state once the change is in force: the fault,
    how many operations it failed, and the bytes a failed fsync dropped
    ({"fault", "failed", "bytes_dropped", "total_bytes_dropped"}).
    """
    ctl = _Control(node, config)
    pid: int | None = None

    def live() -> bool:
        nonlocal pid
        pid = ctl.daemon_pid(control_dir)
        return pid is not None and ctl.alive(pid)

    # One look is no proof: an engine may answer an exec before it knows its exit code.
    if not wait_until(live, config.fault_control_timeout_s, config.poll_interval_s):
        raise HarnessError(f"disk fault on {node.spec.name}: no live page-cache layer "
                           f"(control dir {control_dir})")
    ident = uuid.uuid4().hex
    request = {"id": ident, "fault": None if fault is None else fault.to_json()}
    node.write_file(f"{control_dir}/{CONTROL_NAME}", json.dumps(request).encode())
    answer: dict[str, Any] = {}

    def answered() -> bool:
        nonlocal answer
        result = node.exec(["cat", f"{control_dir}/{STATE_NAME}"],
                           timeout_s=config.exit_timeout_s)
        try:
            answer = json.loads(result.output) if result.ok else {}
        except json.JSONDecodeError:
            answer = {}
        return isinstance(answer, dict) and answer.get("id") == ident

    def signalled_and_answered() -> bool:
        # The daemon's answer, not kill's exit status, says the signal arrived; a
        # request applied twice is the same request (its id, its fault).
        node.exec(["kill", "-USR2", str(pid)], timeout_s=config.exit_timeout_s)
        return wait_until(answered, config.fault_signal_retry_s, config.poll_interval_s)

    ctl.wait_until(signalled_and_answered, config.fault_control_timeout_s,
                   f"the page-cache layer on {node.spec.name} did not answer a disk-fault "
                   "request", control_dir)
    if "error" in answer:
        raise HarnessError(f"the page-cache layer on {node.spec.name} refused a disk fault: "
                           f"{answer['error']}")
    return {key: value for key, value in answer.items() if key != "id"}


def is_mounted(node: Node, mountpoint: str = DEFAULTS.mountpoint,
               config: PageCacheConfig = DEFAULTS) -> bool:
    """Whether a page-cache layer is mounted on mountpoint (live or crashed)."""
    return _Control(node, config).mount_source(mountpoint) is not None


# ---------------------------------------------------------------- internals


def _mfusepy_source() -> Path:
    """mfusepy's file, found without importing it (that would need libfuse on this host)."""
    spec = importlib.util.find_spec("mfusepy")
    if spec is None or spec.origin is None:
        raise HarnessError("the Python package mfusepy is not installed (pip install mfusepy)")
    return Path(spec.origin)


def _unescape(field: str) -> str:
    """Undo /proc/mounts' octal escapes (space, tab, newline, backslash)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


class _Control:
    """The small node commands the public functions are made of, with their bounds."""

    def __init__(self, node: Node, config: PageCacheConfig) -> None:
        self.node = node
        self.config = config

    def run(self, cmd: list[str], what: str) -> str:
        result = self.node.exec(cmd, timeout_s=self.config.exit_timeout_s)
        if not result.ok:
            raise HarnessError(f"could not {what} on {self.node.spec.name} "
                               f"({shlex.join(cmd)}): {result.output.strip()}")
        return result.output

    def read(self, path: str) -> ExecResult:
        """`cat path`. Every file read here is non-empty when it exists (/proc/mounts, a
        pid, a process's stat, the report), so an empty success is output the Docker
        engine lost (moby/moby#27289): read again, lost_output_retries times."""
        return exec_answered(self.node, ["cat", path],
                             lambda r: not r.ok or bool(r.output.strip()),
                             self.config.lost_output_retries,
                             timeout_s=self.config.exit_timeout_s)

    def mount_source(self, mountpoint: str) -> str | None:
        """The backing dir of the page-cache mount on mountpoint, from /proc/mounts."""
        target = os.path.normpath(mountpoint)
        mounts = self.read("/proc/mounts")
        if not mounts.ok:
            raise HarnessError(f"could not read /proc/mounts on {self.node.spec.name}: "
                               f"{mounts.output.strip()}")
        for line in mounts.output.splitlines():
            fields = line.split()
            if len(fields) < 3 or not fields[2].startswith("fuse"):
                continue
            if _unescape(fields[1]) == target and fields[0].startswith(FSNAME_PREFIX):
                return _unescape(fields[0])[len(FSNAME_PREFIX):]
        return None

    def daemon_pid(self, control_dir: str) -> int | None:
        result = self.read(f"{control_dir}/{PID_NAME}")
        text = result.output.strip()
        return int(text) if result.ok and text.isdigit() else None

    def alive(self, pid: int) -> bool:
        """Whether pid runs (a zombie, which nobody may reap in a container, counts as gone)."""
        result = self.read(f"/proc/{pid}/stat")
        if not result.ok or ")" not in result.output:
            return False
        return result.output.rsplit(")", 1)[1].split()[0] not in ("Z", "X")

    def lazy_unmount(self, mountpoint: str) -> None:
        result = self.node.exec(["fusermount3", "-u", "-z", mountpoint],
                                timeout_s=self.config.exit_timeout_s)
        if not result.ok and self.mount_source(mountpoint) is not None:
            raise HarnessError(f"could not unmount {mountpoint} on {self.node.spec.name}: "
                               f"{result.output.strip()}")

    def wait_for_report(self, path: str, control_dir: str) -> dict[str, Any]:
        result = None

        def written() -> bool:
            # the report is renamed into place whole: an empty read is a lost one
            nonlocal result
            result = self.read(path)
            return result.ok and bool(result.output.strip())

        if not wait_until(written, self.config.report_timeout_s, self.config.poll_interval_s):
            raise HarnessError(
                f"no page-cache report {path} on {self.node.spec.name} within "
                f"{self.config.report_timeout_s:.0f} s; daemon log tail:\n"
                f"{self.log_tail(control_dir)}")
        assert result is not None
        return self._parse_report(path, result.output)

    def _parse_report(self, path: str, text: str) -> dict[str, Any]:
        try:
            report = json.loads(text)
        except json.JSONDecodeError as exc:
            raise HarnessError(f"the page-cache report {path} on {self.node.spec.name} is not "
                               f"JSON: {exc}") from exc
        if not isinstance(report, dict) or not {"bytes_dropped", "files",
                                                "total_bytes"} <= set(report):
            raise HarnessError(f"the page-cache report {path} on {self.node.spec.name} lacks "
                               f"fields: {text[:200]!r}")
        return report

    def wait_until(self, done: Callable[[], bool], timeout_s: float, failure: str,
                   control_dir: str) -> None:
        if not wait_until(done, timeout_s, self.config.poll_interval_s):
            raise HarnessError(f"{failure} within {timeout_s:.0f} s; daemon log tail:\n"
                               f"{self.log_tail(control_dir)}")

    def log_tail(self, control_dir: str) -> str:
        result = self.node.exec(
            ["tail", "-n", str(self.config.log_tail_lines), f"{control_dir}/{LOG_NAME}"],
            timeout_s=self.config.exit_timeout_s)
        return result.output.rstrip() if result.output.strip() else "(daemon log is empty)"


class PageCacheLayer:
    """The layer as a cluster's broker storage (cluster.node.StorageLayer).

    Brokers are formatted on the backing dir, then the layer is mounted over
    their log dirs before Kafka first starts, and again before any restart.
    """

    def __init__(self, config: PageCacheConfig = DEFAULTS) -> None:
        self.config = config
        self.backing_dir = config.backing_dir

    def prepare(self, node: Node) -> None:
        install(node, self.config.files_dir, self.config)
        mount(node, self.config.backing_dir, self.config.mountpoint, self.config.control_dir,
              files_dir=self.config.files_dir, config=self.config)

    def ensure(self, node: Node) -> None:
        """Mount a fresh layer unless a live one is there (mount() clears a dead one).

        The layer must look dead `dead_looks` times before it is remounted: one look
        is no proof (an engine may answer an exec before it knows its exit status,
        and mount() refuses a live layer)."""
        ctl = _Control(node, self.config)

        def live() -> bool:
            try:
                pid = ctl.daemon_pid(self.config.control_dir)
                return (pid is not None and ctl.alive(pid)
                        and ctl.mount_source(self.config.mountpoint) is not None)
            except HarnessError:
                return False

        for look in range(self.config.dead_looks):
            if look:
                time.sleep(self.config.poll_interval_s)
            if live():
                return
        mount(node, self.config.backing_dir, self.config.mountpoint,
              self.config.control_dir, files_dir=self.config.files_dir, config=self.config)

    def power_loss(self, node: Node) -> dict[str, Any]:
        """Drop every byte never fsynced (Kafka must be dead); remounts before returning."""
        return power_loss(node, self.config.mountpoint, self.config.control_dir,
                          files_dir=self.config.files_dir, config=self.config)

    def relative(self, path: str) -> str:
        """A path Kafka sees (a log dir) relative to the mount, as a disk fault names it."""
        mount = os.path.normpath(self.config.mountpoint)
        path = os.path.normpath(path)
        if path == mount:
            return ""
        if not path.startswith(mount + "/"):
            raise HarnessError(f"{path} is not under the page-cache mount {mount}")
        return path[len(mount) + 1:]

    def disk_fault(self, node: Node, fault: DiskFault | None) -> dict[str, Any]:
        """Fail (or stop failing) one directory of the live layer; the daemon's answer."""
        return set_disk_fault(node, fault, self.config.control_dir, self.config)
