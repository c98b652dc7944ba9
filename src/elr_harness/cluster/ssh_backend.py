"""Nodes as real hosts reached over SSH (paramiko), named by a nodes file.

Everything a run does to a host goes over SSH: tools and Java are checked
first, the Kafka distribution is uploaded once per content hash and linked at
kraft.KAFKA_HOME, configs are written, Kafka is formatted, started, signalled;
partitions are iptables rules tagged with a comment; the page-cache layer is
installed and mounted as in a container. A user other than root runs every
command through `sudo -n` (firewall, FUSE mounts and /opt need root).

Leaving a host as found: before making any of the paths the cluster uses
(kraft's /opt/kafka, /opt/harness, /var/log/kafka, the data dirs), the
harness refuses one that exists and is not its own, and records those it makes
in a manifest on the host; removal (`cluster down`, the end of a run, and the
sweep at the next start after a crash) kills the harness's Kafka and
page-cache daemon, deletes its tagged iptables rules and exactly the paths in
the manifest. Uploaded distributions stay in kafka_dir for the next run.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import shlex
import tarfile
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path, PurePosixPath
from typing import TypeVar

from elr_harness.cluster import kraft
from elr_harness.cluster.firewall import remove_tagged_command
from elr_harness.cluster.node import Attached, ExecResult, Node, NodeSpec
from elr_harness.cluster.node_commands import KafkaProcessCommands
from elr_harness.cluster.nodes_file import HostEntry, NodesFile, read_nodes_file
from elr_harness.cluster.shaping import remove_slow_command
from elr_harness.cluster.ssh_connection import Feed, HostUnreachable, SshHost
from elr_harness.core.config import ClusterConfig, NodeTimeouts, PageCacheConfig
from elr_harness.core.errors import HarnessError
from elr_harness.core.parallel import at_once

#: The harness's own folder on a host: the manifest, and (by default) the
#: uploaded distributions, which are kept between runs.
STATE_DIR = "/opt/elr-harness"
MANIFEST = f"{STATE_DIR}/owned-paths"
FACTS_FILE = f"{kraft.HARNESS_DIR}/facts.json"
#: What a host must have (besides Java), and the Debian package that brings it.
TOOLS = {"iptables": "iptables", "pgrep": "procps", "pkill": "procps", "tar": "tar",
         "timeout": "coreutils", "setsid": "util-linux"}

#: Folders the cleanup never removes, even if a manifest names them.
KEPT = {STATE_DIR, "/opt", "/var", "/var/log", "/var/lib", "/usr", "/etc", "/home", "/root"}

T = TypeVar("T")


class SshNode(KafkaProcessCommands):
    """One host; every operation is a command over its (shared) SSH connection."""

    def __init__(self, spec: NodeSpec, host: SshHost, timeouts: NodeTimeouts) -> None:
        self.spec = spec
        self.host = host
        self.timeouts = timeouts

    def _line(self, cmd: list[str] | str, bound_s: float) -> str:
        """The command, bounded by `timeout` on the host, under sudo -n if not root."""
        inner = cmd if isinstance(cmd, str) else shlex.join(cmd)
        line = f"timeout -s KILL {max(1, int(bound_s))} sh -c {shlex.quote(inner)}"
        return f"sudo -n {line}" if self.host.entry.needs_sudo else line

    def exec(self, cmd: list[str] | str, *, timeout_s: float | None = None,
             detach: bool = False) -> ExecResult:
        bound = self.timeouts.command_s if timeout_s is None else timeout_s
        if detach:
            inner = cmd if isinstance(cmd, str) else shlex.join(cmd)
            sudo = "sudo -n " if self.host.entry.needs_sudo else ""
            self.host.run(f"{sudo}setsid sh -c {shlex.quote(inner)} >/dev/null 2>&1 "
                          "</dev/null &", self.timeouts.quick_command_s)
            return ExecResult(0, "")
        code, out, _ = self.host.run(self._line(cmd, bound), bound)
        return ExecResult(code, out.decode(errors="replace"))

    def run_fed(self, cmd: str, feed: Feed, timeout_s: float) -> ExecResult:
        """A command that reads what `feed` writes on its standard input."""
        code, out, _ = self.host.run(self._line(cmd, timeout_s), timeout_s, feed=feed)
        return ExecResult(code, out.decode(errors="replace"))

    def read_file(self, path: str) -> bytes:
        bound = self.timeouts.command_s
        code, out, err = self.host.run(self._line(["cat", "--", path], bound), bound,
                                       combine_stderr=False)
        if code != 0:
            raise FileNotFoundError(f"{self.spec.name}:{path}: "
                                    f"{err.decode(errors='replace').strip()}")
        return out

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        target = PurePosixPath(path)
        partial = shlex.quote(f"{path}.partial")
        result = self.run_fed(
            f"mkdir -p {shlex.quote(str(target.parent))} && cat > {partial} && "
            f"chmod {mode:o} {partial} && mv {partial} {shlex.quote(path)}",
            lambda write: write(data), self.timeouts.command_s)
        if not result.ok:
            raise HarnessError(f"{self.spec.name}: could not write {path}: "
                               f"{result.output.strip()[-300:]}")

    def host_state(self) -> str:
        """"running" when a command runs on the host, "unreachable" when none can."""
        try:
            return "running" if self.exec("true", timeout_s=self.timeouts.quick_command_s).ok \
                else "no shell"
        except HarnessError:
            return "unreachable"

    def __repr__(self) -> str:
        return f"SshNode({self.spec.name}, {self.host.where})"


class SshProvider:
    """The nodes of a nodes file (the NodeProvider of cluster/node.py over SSH)."""

    def __init__(self, config: ClusterConfig, nodes: NodesFile | None = None) -> None:
        if config.nodes_file is None and nodes is None:
            raise ValueError("the SSH backend needs a nodes file")
        self.config = config
        self.file = nodes or read_nodes_file(Path(str(config.nodes_file)), config.ssh)
        self.nodes: dict[str, SshNode] = {
            h.spec.name: SshNode(h.spec, SshHost(h, self.file.known_hosts,
                                                 self.file.accept_new_host_keys, config.ssh),
                                 config.timeouts)
            for h in self.file.hosts}
        self._checked = False

    def node_specs(self) -> list[NodeSpec]:
        return self.file.specs

    def preflight(self, log: Callable[[str], None]) -> None:
        """Every host answers, logs in, has Java and the tools; else one line naming
        the first host that does not (before anything is changed anywhere)."""
        if self._checked:
            return
        self._each(self._check_host)
        self._checked = True
        log(f"{len(self.nodes)} hosts reachable over SSH, Java and tools present")

    def _check_host(self, node: SshNode) -> None:
        node.host.connect()
        probe = "; ".join([f"command -v {tool} >/dev/null || echo missing {tool}"
                           for tool in TOOLS] + ["java -version 2>&1 | head -n 1 || true"])
        result = node.exec(probe, timeout_s=self.config.timeouts.command_s)
        if "sudo:" in result.output:
            raise HarnessError(f"host {node.host.where}: sudo -n failed ({result.output.strip()}"
                               "); the user needs passwordless sudo, or log in as root")
        missing = [line.split()[1] for line in result.output.splitlines()
                   if line.startswith("missing ")]
        if "java" in missing or not any("version" in line for line in result.output.splitlines()):
            raise HarnessError(f"host {node.host.where}: no Java runtime (`java -version` "
                               "fails); install one, e.g. apt-get install "
                               "openjdk-17-jre-headless")
        if missing:
            packages = sorted({TOOLS[t] for t in missing})
            raise HarnessError(f"host {node.host.where}: missing {', '.join(missing)}; "
                               f"install {' '.join(packages)}")

    def attach(self) -> Attached:
        """The hosts, if the harness's cluster is on them (its facts file is there)."""
        def facts(node: SshNode) -> dict[str, str] | None:
            try:
                return json.loads(node.read_file(FACTS_FILE))
            except (FileNotFoundError, ValueError):
                return None

        found = self._each(facts, tolerate=HostUnreachable)
        if all(isinstance(f, HostUnreachable) for f in found.values()):
            raise next(iter(found.values()))  # type: ignore[misc]
        recorded = [f for f in found.values() if isinstance(f, dict)]
        if not recorded:
            return Attached(self.file.specs, {}, {})
        nodes: dict[str, Node] = dict(self.nodes)
        return Attached(self.file.specs, nodes, {k: str(v) for k, v in recorded[0].items()})

    def clear_leftovers(self, log: Callable[[str], None]) -> None:
        """What a crashed run left on the hosts: its Kafka, mounts, tagged rules, paths."""
        self.preflight(log)
        if self.remove():
            log("removed leftovers of an earlier run")

    def create(self, specs: Sequence[NodeSpec], kafka_home: str, facts: dict[str, str],
               log: Callable[[str], None]) -> dict[str, Node]:
        self.preflight(log)
        home = Path(kafka_home)
        digest = distribution_digest(home)
        log(f"preparing {len(self.nodes)} hosts (Kafka distribution {digest[:12]})")

        def prepare(node: SshNode) -> None:
            self._claim(node)
            entry = node.host.entry
            self._upload(node, entry, home, digest, log)
            recorded = {**facts, "cluster": self.config.name, "node": node.spec.name}
            node.write_file(FACTS_FILE, json.dumps(recorded).encode())

        self._each(prepare)
        return dict(self.nodes)

    def remove(self) -> int:
        """Undo everything the harness did on each host; how many hosts had anything."""
        removed = self._each(self._clean_host)
        return sum(1 for had in removed.values() if had)

    # -- internals -------------------------------------------------------------

    def owned_paths(self) -> list[str]:
        """The paths a node of the cluster uses, all made (and removed) by the harness."""
        layer = PageCacheConfig()
        return sorted({kraft.KAFKA_HOME, kraft.HARNESS_DIR, kraft.LOG_DIR,
                       self.config.log_dir, self.config.metadata_log_dir, layer.backing_dir,
                       layer.mountpoint, layer.control_dir, layer.files_dir})

    def _removable(self) -> set[str]:
        """Paths the manifest may name: the owned ones and their ancestors, never a
        system folder nor the harness's own (guards rm -rf against a bad manifest)."""
        return {a for path in self.owned_paths() for a in _ancestors(path)} - KEPT

    def _claim(self, node: SshNode) -> None:
        """Refuse a path that exists and is not the harness's; record those it makes."""
        paths = self.owned_paths()
        candidates = sorted({p for path in paths for p in _ancestors(path)})
        probe = (f"cat {MANIFEST} 2>/dev/null; echo ---; for p in {shlex.join(candidates)}; "
                 'do if [ -e "$p" ] || [ -L "$p" ]; then echo "$p"; fi; done')
        output = node.exec(probe, timeout_s=self.config.timeouts.quick_command_s).output
        manifest, _, existing_text = output.partition("---\n")
        owned = set(manifest.split())
        existing = set(existing_text.split())
        new: set[str] = set()
        for path in paths:
            if any(a in owned | new for a in _ancestors(path)):
                continue
            if path in existing:
                raise HarnessError(f"host {node.host.where}: {path} exists and was not made "
                                   "by the harness; move it away (the harness never "
                                   "overwrites what it did not make)")
            top = path
            while (posixpath.dirname(top) not in existing | {"/", STATE_DIR}):
                top = posixpath.dirname(top)
            new.add(top)
        if new:
            line = "\n".join(sorted(new)) + "\n"
            result = node.run_fed(f"mkdir -p {STATE_DIR} && cat >> {MANIFEST}",
                                  lambda write: write(line.encode()),
                                  self.config.timeouts.quick_command_s)
            if not result.ok:
                raise HarnessError(f"host {node.host.where}: cannot write {MANIFEST}: "
                                   f"{result.output.strip()}")
        dirs = [p for p in paths if p != kraft.KAFKA_HOME]
        node.exec(["mkdir", "-p", *dirs], timeout_s=self.config.timeouts.quick_command_s)

    def _upload(self, node: SshNode, entry: HostEntry, home: Path, digest: str,
                log: Callable[[str], None]) -> None:
        """The distribution at kafka_dir/<digest> (sent once per content), linked at
        kraft.KAFKA_HOME."""
        target = shlex.quote(f"{entry.kafka_dir}/{digest}")
        link = shlex.quote(kraft.KAFKA_HOME)
        quick = self.config.timeouts.quick_command_s
        if not node.exec(f"test -f {target}/.complete", timeout_s=quick).ok:
            log(f"uploading Kafka to {node.spec.name}:{entry.kafka_dir}")
            partial = shlex.quote(f"{entry.kafka_dir}/{digest}.partial")
            result = node.run_fed(
                f"rm -rf {partial} && mkdir -p {partial} && tar -x -C {partial} && "
                f"touch {partial}/.complete && rm -rf {target} && mv {partial} {target}",
                lambda write: _tar(home, write), self.config.ssh.upload_timeout_s)
            if not result.ok:
                raise HarnessError(f"host {node.host.where}: uploading Kafka failed: "
                                   f"{result.output.strip()[-300:]}")
        result = node.exec(f"ln -sfn {target} {link}", timeout_s=quick)
        if not result.ok:
            raise HarnessError(f"host {node.host.where}: cannot link {kraft.KAFKA_HOME}: "
                               f"{result.output.strip()}")

    def _clean_host(self, node: SshNode) -> bool:
        """Kill, unmount, unfirewall (partitions' rules, a slow network's qdiscs and
        rules), delete the manifest's paths; True if any were."""
        layer = PageCacheConfig()
        quick = self.config.timeouts.quick_command_s
        listed = node.exec(f"cat {MANIFEST} 2>/dev/null", timeout_s=quick).output.split()
        allowed = self._removable()
        stray = [p for p in listed if p not in allowed]
        if stray:
            raise HarnessError(f"host {node.host.where}: {MANIFEST} names {stray[0]}, which "
                               "the harness never makes; not removing anything there")
        script = " ; ".join([
            f"pkill -KILL -f {shlex.quote(kraft.KAFKA_PROCESS_PATTERN)}",
            # [p]: the pattern must not match this very shell's command line
            f"pkill -KILL -f {shlex.quote(layer.files_dir + '/[p]agecache_fs.py')}",
            "sleep 0.2",
            f"if grep -q ' {layer.mountpoint} fuse' /proc/mounts; then "
            f"fusermount3 -u -z {shlex.quote(layer.mountpoint)} || "
            f"umount -l {shlex.quote(layer.mountpoint)}; fi",
            remove_tagged_command(),
            remove_slow_command(),
            *(f"rm -rf {shlex.quote(p)}" for p in listed),
            f"rm -f {MANIFEST}",
            "true"])
        result = node.exec(script, timeout_s=self.config.timeouts.command_s)
        if not result.ok:
            raise HarnessError(f"host {node.host.where}: cleaning up failed: "
                               f"{result.output.strip()[-300:]}")
        return bool(listed)

    def _each(self, action: Callable[[SshNode], T],
              tolerate: type[Exception] | None = None) -> dict[str, T | Exception]:
        """action on every host at once, by host name; the first error (in the file's
        order) is raised unless it is of the `tolerate` kind, which is returned instead."""
        return dict(zip(self.nodes, at_once(action, list(self.nodes.values()), tolerate),
                        strict=True))


def _ancestors(path: str) -> list[str]:
    """path and its parents, up to (not including) /."""
    found = []
    while path != "/":
        found.append(path)
        path = posixpath.dirname(path)
    return found


@cache
def distribution_digest(home: Path) -> str:
    """A hash of the distribution's file names and contents: equal contents share
    one upload on a host, whatever the local path."""
    digest = hashlib.sha256()
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(home)).encode() + b"\0")
        with open(path, "rb") as stream:
            while block := stream.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()[:32]


def _tar(home: Path, write: Callable[[bytes], None]) -> None:
    """Stream the distribution as a tar archive (never all of it in memory)."""

    class _Sink:
        def write(self, data: bytes) -> int:
            write(bytes(data))
            return len(data)

    with tarfile.open(fileobj=_Sink(), mode="w|") as tar:  # type: ignore[arg-type]
        for path in sorted(home.rglob("*")):
            if path.name != ".complete":
                tar.add(path, arcname=str(path.relative_to(home)), recursive=False)
