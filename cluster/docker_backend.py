"""Nodes as Docker containers on a private network the harness creates.

Each container runs docker-init with `sleep infinity` as its only job, and
Kafka is a separate process launched with `docker exec`. So killing Kafka
(SIGKILL, SIGSTOP, a power loss) leaves the container, its network namespace
(and iptables rules) and the page-cache layer in place, as a real machine's
would be.
"""

from __future__ import annotations

import io
import tarfile
import time
from pathlib import PurePosixPath

import docker
import docker.errors
from docker.models.containers import Container

from cluster import kraft
from cluster.node import ExecResult, NodeSpec
from harness.core.config import LABEL, ClusterConfig
from harness.core.errors import EngineUnavailable, HarnessError

SIGNALS = {"TERM", "KILL", "STOP", "CONT"}


def connect() -> docker.DockerClient:
    """A client of the local engine, or a clear message on how to start one."""
    try:
        client = docker.from_env(timeout=120)
        client.ping()
        return client
    except docker.errors.DockerException as err:
        raise EngineUnavailable(
            "no Docker engine answers (" + str(err).split("(")[0].strip() + "). "
            "Start one with `bash scripts/setup.sh` (installs Debian's docker.io and starts "
            "dockerd), or run `dockerd &` as root, then try again."
        ) from err


def labels(cluster_name: str, **extra: str) -> dict[str, str]:
    return {LABEL: "1", f"{LABEL}.cluster": cluster_name, **extra}


def network_name(config: ClusterConfig) -> str:
    return f"{LABEL}-{config.name}"


def container_name(config: ClusterConfig, spec: NodeSpec) -> str:
    return f"{LABEL}-{config.name}-{spec.name}"


class DockerNode:
    """One node: a long-lived container in which Kafka comes and goes."""

    def __init__(self, spec: NodeSpec, container: Container) -> None:
        self.spec = spec
        self.container = container

    def exec(self, cmd: list[str] | str, *, timeout_s: float = 60.0,
             detach: bool = False) -> ExecResult:
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        if detach:
            self.container.exec_run(argv, detach=True)
            return ExecResult(0, "")
        # `timeout` bounds the command inside the node; the engine call has its own bound.
        bounded = ["timeout", "-s", "KILL", str(max(1, int(timeout_s))), *argv]
        try:
            result = self.container.exec_run(bounded, demux=False)
        except docker.errors.APIError as err:
            raise HarnessError(f"{self.spec.name}: exec failed: {err.explanation}") from err
        output = (result.output or b"").decode(errors="replace")
        return ExecResult(result.exit_code if result.exit_code is not None else -1, output)

    def kafka_pid(self) -> int | None:
        result = self.exec(["pgrep", "-f", kraft.KAFKA_PROCESS_PATTERN], timeout_s=10)
        pids = [int(p) for p in result.output.split() if p.isdigit()]
        return pids[0] if pids else None

    def signal_kafka(self, signal_name: str) -> bool:
        if signal_name not in SIGNALS:
            raise ValueError(f"unknown signal {signal_name}; one of {sorted(SIGNALS)}")
        result = self.exec(["pkill", f"-{signal_name}", "-f", kraft.KAFKA_PROCESS_PATTERN],
                           timeout_s=10)
        return result.exit_code == 0

    def start_kafka(self) -> None:
        result = self.exec(["sh", kraft.START_SCRIPT], timeout_s=20)
        if not result.ok:
            raise HarnessError(f"{self.spec.name}: starting Kafka failed: {result.output[-500:]}")

    def wait_kafka_gone(self, timeout_s: float = 30.0) -> bool:
        """True once no Kafka process is left in the node (after KILL or TERM)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.kafka_pid() is None:
                return True
            time.sleep(0.1)
        return False

    def read_file(self, path: str) -> bytes:
        """The file's bytes, read inside the node (so FUSE mounts are seen too)."""
        result = self.container.exec_run(["cat", "--", path], demux=True)
        stdout, stderr = result.output if result.output else (None, None)
        if result.exit_code != 0:
            raise FileNotFoundError(
                f"{self.spec.name}:{path}: {(stderr or b'').decode(errors='replace').strip()}")
        return stdout or b""

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        target = PurePosixPath(path)
        self.exec(["mkdir", "-p", str(target.parent)], timeout_s=10)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            info = tarfile.TarInfo(target.name)
            info.size = len(data)
            info.mode = mode
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
        if not self.container.put_archive(str(target.parent), buffer.getvalue()):
            raise HarnessError(f"{self.spec.name}: could not write {path}")

    def log_tail(self, lines: int = 30) -> str:
        """The last lines Kafka wrote (server.log, else the JVM's stdout)."""
        cmd = (f"tail -n {lines} {kraft.SERVER_LOG} 2>/dev/null; "
               f"tail -n {lines} {kraft.STDOUT_LOG} 2>/dev/null")
        return self.exec(cmd, timeout_s=10).output

    def __repr__(self) -> str:
        return f"DockerNode({self.spec.name}, {self.spec.address})"


def create_node(client: docker.DockerClient, config: ClusterConfig, spec: NodeSpec,
                image: str, kafka_home: str, extra_labels: dict[str, str]) -> DockerNode:
    """Create and start the container of one node (Kafka itself is not started)."""
    container = client.containers.run(
        image,
        ["sleep", "infinity"],
        name=container_name(config, spec),
        hostname=spec.name,
        detach=True,
        init=True,
        labels=labels(config.name, **{f"{LABEL}.node": spec.name,
                                      f"{LABEL}.role": spec.role.value}, **extra_labels),
        network=network_name(config),
        networking_config={network_name(config):
                           client.api.create_endpoint_config(ipv4_address=spec.address)},
        cap_add=["NET_ADMIN", "SYS_ADMIN"],
        devices=["/dev/fuse:/dev/fuse:rwm"],
        security_opt=["apparmor:unconfined"],
        volumes={kafka_home: {"bind": kraft.KAFKA_HOME, "mode": "ro"}},
        environment={"LANG": "C.UTF-8"},
        stop_signal="SIGKILL",
    )
    return DockerNode(spec, container)

