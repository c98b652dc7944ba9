"""Nodes as Docker containers on a private network the harness creates.

Each container runs docker-init with `sleep infinity` as its only job, and
Kafka is a separate process launched with `docker exec`. So killing Kafka
(SIGKILL, SIGSTOP, a power loss) leaves the container, its network namespace
(and iptables rules) and the page-cache layer in place, as a real machine's
would be.
"""

from __future__ import annotations

import io
import json
import tarfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

import docker
import docker.errors
from docker.models.containers import Container

from elr_harness.cluster import kraft
from elr_harness.cluster.class_archive import ensure_archive
from elr_harness.cluster.image import ensure_image
from elr_harness.cluster.node import Attached, ExecResult, Node, NodeSpec, Role
from elr_harness.cluster.node_commands import KafkaProcessCommands
from elr_harness.core.config import (
    LABEL,
    SOAK_LABEL,
    ClusterConfig,
    NodeTimeouts,
    owner_labels,
    soak_token,
)
from elr_harness.core.errors import ClusterStartError, EngineUnavailable, HarnessError
from elr_harness.core.parallel import at_once
from elr_harness.core.wait import wait_until


def connect(timeout_s: float = NodeTimeouts.engine_s) -> docker.DockerClient:
    """A client of the local engine, or a clear message on how to start one."""
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
        return client
    except docker.errors.DockerException as err:
        raise EngineUnavailable(
            "no Docker engine answers (" + str(err).split("(")[0].strip() + "). "
            "Start one with `bash scripts/setup.sh` (installs Debian's docker.io and starts "
            "dockerd), or run `dockerd &` as root, then try again."
        ) from err


def labels(cluster_name: str, **extra: str) -> dict[str, str]:
    return {LABEL: "1", f"{LABEL}.cluster": cluster_name, **owner_labels(), **extra}


def network_name(config: ClusterConfig) -> str:
    return f"{LABEL}-{config.name}"


def container_name(config: ClusterConfig, spec: NodeSpec) -> str:
    return f"{LABEL}-{config.name}-{spec.name}"


class DockerNode(KafkaProcessCommands):
    """One node: a long-lived container in which Kafka comes and goes."""

    def __init__(self, spec: NodeSpec, container: Container,
                 timeouts: NodeTimeouts | None = None) -> None:
        self.spec = spec
        self.container = container
        self.timeouts = timeouts or NodeTimeouts()

    def exec(self, cmd: list[str] | str, *, timeout_s: float | None = None,
             detach: bool = False) -> ExecResult:
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        if detach:
            self.container.exec_run(argv, detach=True)
            return ExecResult(0, "")
        # `timeout` bounds the command inside the node; the engine call has its own bound.
        bound = self.timeouts.command_s if timeout_s is None else timeout_s
        bounded = ["timeout", "-s", "KILL", str(max(1, int(bound))), *argv]
        try:
            result = self.container.exec_run(bounded, demux=False)
        except docker.errors.APIError as err:
            raise HarnessError(f"{self.spec.name}: exec failed: {err.explanation}") from err
        output = (result.output or b"").decode(errors="replace")
        return ExecResult(result.exit_code if result.exit_code is not None else -1, output)

    def read_file(self, path: str) -> bytes:
        """The file's bytes, read inside the node (so FUSE mounts are seen too); read
        again when docker-py lost its place in the output's frames, or when fewer
        bytes came than the file held just before (its size, printed first by the
        same exec): a read cut short under load must never pass for a short file
        (a replica read as empty was judged diverged). A file that grows meanwhile
        gives more, which is kept."""
        attempts = max(1, self.timeouts.read_file_attempts)
        problem = ""
        for _ in range(attempts):
            try:
                result = self.container.exec_run(
                    ["sh", "-c", 'stat -c %s -- "$1" && exec cat -- "$1"', "sh", path],
                    demux=True)
            except docker.errors.APIError as err:
                raise HarnessError(f"{self.spec.name}: reading {path} failed: "
                                   f"{err.explanation}") from err
            except ValueError as err:  # a frame whose stream id is neither 1 nor 2
                problem = str(err)
                continue
            stdout, stderr = result.output if result.output else (None, None)
            if result.exit_code != 0:
                raise FileNotFoundError(f"{self.spec.name}:{path}: "
                                        f"{(stderr or b'').decode(errors='replace').strip()}")
            size, _, data = (stdout or b"").partition(b"\n")
            if size.isdigit() and len(data) >= int(size):
                return data
            problem = f"{len(data)} bytes read of {size.decode(errors='replace')[:20]!r}"
        raise HarnessError(f"{self.spec.name}: reading {path} failed {attempts} times: "
                           f"{problem}")

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """One archive put at the root: the engine makes missing parent folders
        (0755, as `mkdir -p` did), which saves an exec per file (a run writes
        about 20, and the page-cache layer's requests are files too)."""
        target = PurePosixPath(path)
        if not target.is_absolute():
            raise HarnessError(f"{self.spec.name}: {path} is not an absolute path")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            info = tarfile.TarInfo(str(target.relative_to("/")))
            info.size = len(data)
            info.mode = mode
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
        if not self.container.put_archive("/", buffer.getvalue()):
            raise HarnessError(f"{self.spec.name}: could not write {path}")

    def host_state(self) -> str:
        """The container's state as the engine reports it (running, exited, paused)."""
        self.container.reload()
        return str(self.container.status)

    def __repr__(self) -> str:
        return f"DockerNode({self.spec.name}, {self.spec.address})"


def create_node(client: docker.DockerClient, config: ClusterConfig, spec: NodeSpec,
                image: str, kafka_home: str, extra_labels: dict[str, str],
                class_archive: Path | None = None) -> DockerNode:
    """Create and start the container of one node (Kafka itself is not started),
    with Kafka's distribution and the class archive, if any, mounted read-only."""
    volumes = {kafka_home: {"bind": kraft.KAFKA_HOME, "mode": "ro"}}
    if class_archive is not None:
        volumes[str(class_archive)] = {"bind": kraft.CLASS_ARCHIVE, "mode": "ro"}
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
        volumes=volumes,
        environment={"LANG": "C.UTF-8"},
        stop_signal="SIGKILL",
    )
    return DockerNode(spec, container, config.timeouts)



class NotOurs(ClusterStartError):
    """A cluster of this name is there, and not the soak's whose token this process
    carries: it is left as it is."""


class DockerProvider:
    """The nodes of one cluster as containers on a private bridge network, found
    again by label (the NodeProvider of cluster/node.py).

    With a soak's token (`token`, else SOAK_TOKEN_ENV's), it removes a cluster of
    its name only when every container and network of it carries that token's
    label: a copied or stale soak.json names `elr`, every `harness run`'s default,
    and a resumed soak must not remove somebody's cluster of that name."""

    def __init__(self, config: ClusterConfig, client: docker.DockerClient | None = None,
                 token: str | None = None) -> None:
        self.config = config
        self.client = client or connect(config.timeouts.engine_s)
        self.token = token if token is not None else soak_token()

    def node_specs(self) -> list[NodeSpec]:
        return kraft.node_specs(self.config)

    def preflight(self, log: Callable[[str], None]) -> None:
        """Nothing to check: the engine answered when this provider was made."""

    def _ours(self) -> dict[str, list[str]]:
        return {"label": [f"{LABEL}.cluster={self.config.name}"]}

    def attach(self) -> Attached:
        containers = self.client.containers.list(all=True, filters=self._ours())
        by_name = {c.labels.get(f"{LABEL}.node"): c for c in containers}
        specs = _specs_from_labels(containers)
        nodes: dict[str, Node] = {s.name: DockerNode(s, by_name[s.name], self.config.timeouts)
                                  for s in specs if s.name in by_name}
        labels_of_one = containers[0].labels if containers else {}
        facts = {key: labels_of_one[f"{LABEL}.{key}"]
                 for key in ("kafka-version", "elr", "transactions")
                 if f"{LABEL}.{key}" in labels_of_one}
        return Attached(specs, nodes, facts)

    def remove(self) -> int:
        """Remove the cluster's containers and network; NotOurs, removing nothing,
        when a soak's token is set and one of them does not carry it."""
        containers = self.client.containers.list(all=True, filters=self._ours())
        networks = self.client.networks.list(filters=self._ours())
        self._require_ours(containers, networks)
        removed = 0
        for container in containers:
            try:
                container.remove(force=True)
                removed += 1
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as err:
                # 409 "removal ... already in progress": another process (the earlier
                # run's own teardown) removes it; it is gone once that is done
                if err.status_code != 409 or "already in progress" not in str(err):
                    raise
                self._wait_gone(container)
                removed += 1
        for network in networks:
            _remove_network(network, self.config.timeouts.network_remove_retry_s,
                            self.config.timeouts.network_attempts)
        return removed

    def _wait_gone(self, container) -> None:
        """Wait (bounded) until a container someone else is removing has gone."""
        def gone() -> bool:
            try:
                container.reload()
            except docker.errors.NotFound:
                return True
            return False

        bound = self.config.timeouts.container_gone_s
        if not wait_until(gone, bound, self.config.timeouts.container_gone_poll_s):
            raise HarnessError(f"container {container.name} was still being removed by "
                               f"another process after {bound:g} s; remove it with "
                               f"`docker rm -f {container.name}` and run again")

    def _require_ours(self, containers: list, networks: list) -> None:
        if self.token is None:
            return
        foreign = [c.name for c in containers if c.labels.get(SOAK_LABEL) != self.token] + [
            n.name for n in networks
            if (n.attrs.get("Labels") or {}).get(SOAK_LABEL) != self.token]
        if foreign:
            raise NotOurs(f"cluster '{self.config.name}' is up and is not this soak's "
                          f"({foreign[0]} lacks its label {SOAK_LABEL}); it is left as it is: "
                          f"stop it if it is yours, or give the soak another --name and "
                          f"--subnet")

    def clear_leftovers(self, log: Callable[[str], None]) -> None:
        """A crashed run may have left containers behind: remove them first, and
        any harness network without containers on this cluster's subnet (one left
        by a cluster of another name would make this one's network overlap)."""
        if self.remove():
            log("removed leftovers of an earlier run")
        # under a soak's token, only networks of that soak are its leftovers
        mine = f"{SOAK_LABEL}={self.token}" if self.token is not None else LABEL
        for network in self._networks_on_subnet({"label": [mine]}):
            if not network.attrs.get("Containers"):
                _remove_network(network, self.config.timeouts.network_remove_retry_s,
                            self.config.timeouts.network_attempts)
                log(f"removed leftover network {network.name}")

    def create(self, specs: Sequence[NodeSpec], kafka_home: str, facts: dict[str, str],
               log: Callable[[str], None]) -> dict[str, Node]:
        image = ensure_image(self.client, self.config.image, log)
        archive = ensure_archive(self.client, self.config, image, kafka_home,
                                 labels(self.config.name), log)
        self.create_network(log)

        def create_one(spec: NodeSpec) -> DockerNode:
            labels_of_node = {
                f"{LABEL}.spec": json.dumps({"name": spec.name, "role": spec.role.value,
                                             "id": spec.node_id, "address": spec.address}),
                **{f"{LABEL}.{key}": value for key, value in facts.items()}}
            return create_node(self.client, self.config, spec, image, kafka_home,
                               labels_of_node, archive)

        # each container has its own name and address, so the engine makes them at
        # once: one after another, the six and their files took 4.4 s of set-up
        made = at_once(create_one, list(specs))
        return {spec.name: node for spec, node in zip(specs, made, strict=True)}

    def create_network(self, log: Callable[[str], None]) -> None:
        """Create the cluster's network. The engine may still hold the pool of a
        network removed a moment ago ("Pool overlaps"): sweep and retry, bounded."""
        ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(
            subnet=self.config.subnet, gateway=kraft.gateway(self.config))])
        attempts = self.config.timeouts.network_attempts
        for attempt in range(attempts):
            try:
                self.client.networks.create(network_name(self.config), driver="bridge",
                                            ipam=ipam, labels=labels(self.config.name))
                return
            except docker.errors.APIError as err:
                overlap = "overlap" in str(err.explanation).lower()
                if not overlap or attempt == attempts - 1:
                    users = [network.name for network in self._networks_on_subnet()]
                    raise ClusterStartError(
                        f"cannot create network {self.config.subnet}: {err.explanation}"
                        + (f" (in use by network {', '.join(users)}; `harness cluster "
                           f"down --name NAME` or another --subnet)" if users else "")) from err
                log(f"subnet {self.config.subnet} still taken; retrying")
                time.sleep(self.config.timeouts.network_retry_s)
                self.clear_leftovers(log)

    def _networks_on_subnet(self, filters: dict | None = None) -> list:
        """Docker networks (matching filters) whose pool is this cluster's subnet,
        reloaded so their containers are listed too."""
        found = []
        for network in self.client.networks.list(filters=filters or {}):
            network.reload()
            pools = network.attrs.get("IPAM", {}).get("Config") or []
            if any(p.get("Subnet") == self.config.subnet for p in pools):
                found.append(network)
        return found


def _specs_from_labels(containers: list) -> list[NodeSpec]:
    """The topology of a running cluster, as its containers' labels record it."""
    specs = []
    for c in containers:
        spec = c.labels.get(f"{LABEL}.spec")
        if spec:
            data = json.loads(spec)
            specs.append(NodeSpec(data["name"], Role(data["role"]), data["id"],
                                  data["address"]))
    return sorted(specs, key=lambda s: (s.role is Role.BROKER, s.node_id))


def _remove_network(network, retry_s: float, attempts: int) -> None:
    """Remove a network; its endpoints can take a moment to go after a forced
    container removal, so it is retried (bounded) rather than left behind."""
    for attempt in range(attempts):
        try:
            network.remove()
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError:
            if attempt == attempts - 1:
                raise
            time.sleep(retry_s)
