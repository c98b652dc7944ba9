"""Containers that stand in for real hosts of the SSH backend: sshd is their only
job, a key made for the occasion their only login, and nothing is run in them
with `docker exec` after they start, so the harness reaches them as it would
reach machines. Used by tests/integration/test_ssh.py and
benchmarks/fault_latency.py --ssh-containers.

They are made from the node image (it carries openssh-server, Java, iptables,
fuse3) on a network of their own, named and labelled by `name`, so that
nothing of another cluster is touched; `sshd_hosts` removes them on exit.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import docker
import paramiko
import yaml

from elr_harness.cluster.docker_backend import labels
from elr_harness.cluster.image import ensure_image
from elr_harness.core.config import LABEL, ImageConfig

NODES = ["controller-1", "controller-2", "controller-3", "broker-1", "broker-2", "broker-3"]
#: sshd as the container's only job; the public key in AUTHORIZED_KEY its only login.
SSHD = ("mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh && "
        'printf "%s\\n" "$AUTHORIZED_KEY" > /root/.ssh/authorized_keys && '
        "chmod 600 /root/.ssh/authorized_keys && ssh-keygen -A >/dev/null && "
        "exec /usr/sbin/sshd -D -e")


@dataclass
class Hosts:
    addresses: dict[str, str]
    key_file: Path
    folder: Path

    def nodes_file(self, name: str, *, accept_new: bool, known_hosts: Path | None = None,
                   replace: dict[str, str] | None = None) -> Path:
        """A nodes file for the hosts (an address of `replace` swapped in)."""
        addresses = {**self.addresses, **(replace or {})}
        path = self.folder / name
        path.write_text(yaml.safe_dump({
            "accept_new_host_keys": accept_new,
            "known_hosts": str(known_hosts or self.folder / "known_hosts"),
            "defaults": {"user": "root", "key_file": str(self.key_file)},
            "nodes": [{"name": n, "role": n.split("-")[0], "address": addresses[n]}
                      for n in NODES]}))
        return path

    def ssh(self, node: str, command: str) -> tuple[int, str]:
        """A command on a host, from the test itself (to look, never to help)."""
        client = paramiko.SSHClient()
        client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        client.connect(self.addresses[node], username="root", key_filename=str(self.key_file),
                       look_for_keys=False, allow_agent=False, timeout=10)
        try:
            _, out, _ = client.exec_command(command, timeout=60)
            text = out.read().decode()
            return out.channel.recv_exit_status(), text
        finally:
            client.close()


def remove_hosts(client: docker.DockerClient, name: str) -> None:
    """The containers and network of `name`, and nothing else."""
    for container in client.containers.list(all=True,
                                            filters={"label": f"{LABEL}.cluster={name}"}):
        container.remove(force=True)
    for network in client.networks.list(names=[f"{LABEL}-{name}"]):
        network.remove()


@contextmanager
def sshd_hosts(client: docker.DockerClient, folder: Path, name: str,
               subnet: str) -> Iterator[Hosts]:
    """Six sshd containers (three controllers, three brokers) at .11 to .16 of subnet."""
    key = paramiko.RSAKey.generate(2048)
    key_file = folder / "id_rsa"
    key.write_private_key_file(str(key_file))
    image = ensure_image(client, ImageConfig())
    remove_hosts(client, name)
    network = ipaddress.ip_network(subnet)
    net_name = f"{LABEL}-{name}"
    addresses = {node: str(network.network_address + 11 + i) for i, node in enumerate(NODES)}
    try:
        client.networks.create(
            net_name, driver="bridge", labels=labels(name),
            ipam=docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(
                subnet=subnet, gateway=str(network.network_address + 1))]))
        for node, address in addresses.items():
            client.containers.run(
                image, ["sh", "-c", SSHD], name=f"{net_name}-{node}", hostname=node,
                detach=True, init=True, labels=labels(name),
                environment={"AUTHORIZED_KEY": f"{key.get_name()} {key.get_base64()}",
                             "LANG": "C.UTF-8"},
                network=net_name,
                networking_config={net_name: client.api.create_endpoint_config(
                    ipv4_address=address)},
                # what a host of the page-cache layer and iptables partitions allows
                cap_add=["NET_ADMIN", "SYS_ADMIN"], devices=["/dev/fuse:/dev/fuse:rwm"],
                security_opt=["apparmor:unconfined"], stop_signal="SIGKILL")
        for address in addresses.values():
            _wait_for_port(address, 22, 30)
        yield Hosts(addresses, key_file, folder)
    finally:
        remove_hosts(client, name)


def _wait_for_port(address: str, port: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection((address, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
