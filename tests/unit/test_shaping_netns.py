"""A slow network on real tc and iptables (#33): two network namespaces joined by
a veth pair stand for two nodes, the FaultInjector drives them through the Node
protocol's exec, and what the kernel then holds and does is read back.

It shapes the link (a transfer takes as long as its rate says), ending it
removes exactly its own qdisc and rules, a partition's heal leaves it in force
and it leaves a partition in force, and a host's own root qdisc is never
replaced. Kafka under a slow network: tests/integration/test_fault_slow_network.py.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from elr_harness.cluster.node import ExecResult, NodeSpec, Role
from elr_harness.cluster.shaping import remove_slow_command
from elr_harness.core.config import NodeTimeouts
from elr_harness.core.errors import HarnessError
from elr_harness.core.history import Fault
from elr_harness.nemesis import grudges
from elr_harness.nemesis.faults import partition, slow_network
from elr_harness.nemesis.injector import FaultInjector

PORT = 7071
#: Prints "ready" once listening, then the bytes received on one connection and the
#: seconds from its accept to its end (the sender's start-up is not counted).
RECEIVE = ("import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, "
           "socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', {port})); s.listen(1); "
           "print('ready', flush=True); c, _ = s.accept(); t = time.monotonic(); n = 0\n"
           "while True:\n    b = c.recv(65536)\n    if not b: break\n    n += len(b)\n"
           "print(n, time.monotonic() - t)")
SEND = ("import socket; s = socket.create_connection(('{ip}', {port}), timeout=10); "
        "s.settimeout(60); s.sendall(b'x' * {size}); s.close()")

#: 100 UDP datagrams to sys.argv[1] (a dropped one's EPERM is no error here).
DATAGRAMS = ("import socket, sys\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
             "for _ in range(100):\n    try:\n        s.sendto(b'x', (sys.argv[1], 9))\n"
             "    except OSError:\n        pass\n")


class NetnsNode:
    """A node whose commands run in its own network namespace (as root)."""

    def __init__(self, spec: NodeSpec, namespace: str) -> None:
        self.spec = spec
        self.namespace = namespace

    def exec(self, cmd: str, timeout_s: float = 30.0) -> ExecResult:
        proc = subprocess.run(["ip", "netns", "exec", self.namespace, "sh", "-c", cmd],
                              capture_output=True, text=True, timeout=timeout_s)
        return ExecResult(proc.returncode, proc.stdout + proc.stderr)

    def kafka_pid(self) -> int:
        return 1

    def sh(self, cmd: str) -> str:
        result = self.exec(cmd)
        assert result.ok, result.output
        return result.output


@dataclass
class Config:
    dead_look_spacing_s: float = 0.0
    timeouts: NodeTimeouts = field(default_factory=NodeTimeouts)


@dataclass
class Cluster:
    nodes: dict[str, NetnsNode]
    config: Config = field(default_factory=Config)


class Lines:
    def __init__(self) -> None:
        self.lines: list[dict] = []

    def record(self, **fields) -> dict:  # noqa: ANN003
        self.lines.append(fields)
        return fields


@pytest.fixture
def pair() -> Iterator[tuple[FaultInjector, NetnsNode, NetnsNode, Lines]]:
    """broker-1 (10.77.0.1, veth s1) and broker-2 (10.77.0.2, veth s2), each with a
    host's own firewall rule and root qdisc on lo that must survive everything."""
    names = [f"elrslow{os.getpid()}a", f"elrslow{os.getpid()}b"]
    try:
        for ns in names:
            subprocess.run(["ip", "netns", "add", ns], check=True)
        subprocess.run(["ip", "link", "add", "s1", "netns", names[0], "type", "veth", "peer",
                        "name", "s2", "netns", names[1]], check=True)
        nodes = [NetnsNode(NodeSpec(f"broker-{i}", Role.BROKER, i, f"10.77.0.{i}"), ns)
                 for i, ns in enumerate(names, 1)]
        for i, node in enumerate(nodes, 1):
            node.sh(f"ip addr add 10.77.0.{i}/24 dev s{i} && ip link set s{i} up && "
                    "ip link set lo up && iptables -A INPUT -s 10.77.0.99/32 -j DROP && "
                    "tc qdisc add dev lo root handle 5: htb")
        lines = Lines()
        injector = FaultInjector(Cluster({n.spec.name: n for n in nodes}), lines)  # type: ignore[arg-type]
        yield injector, nodes[0], nodes[1], lines
    finally:
        for ns in names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def transfer_s(sender: NetnsNode, receiver: NetnsNode, size: int) -> float:
    """Seconds the receiver took to get `size` bytes the sender wrote over TCP."""
    server = subprocess.Popen(
        ["ip", "netns", "exec", receiver.namespace, sys.executable, "-c",
         RECEIVE.format(port=PORT)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        subprocess.run(["ip", "netns", "exec", sender.namespace, sys.executable, "-c",
                        SEND.format(ip=receiver.spec.address, port=PORT, size=size)],
                       check=True, timeout=90)
        out, _ = server.communicate(timeout=90)
    finally:
        server.kill()
    received, took = out.split()
    assert int(received) == size
    return float(took)


def ours(node: NetnsNode) -> tuple[list[str], list[str]]:
    qdiscs = [q for q in node.sh("tc qdisc show").splitlines() if "e1a:" in q]
    rules = [r for r in node.sh("iptables -S").splitlines() if "elr-harness-slow" in r]
    return qdiscs, rules


def theirs(node: NetnsNode) -> tuple[list[str], list[str]]:
    """The host's own qdisc and rule, and the partition's rules."""
    qdiscs = [q for q in node.sh("tc qdisc show").splitlines() if q.startswith("qdisc htb 5:")]
    rules = [r for r in node.sh("iptables -S").splitlines()
             if r.startswith("-A") and "elr-harness-slow" not in r]
    return qdiscs, rules


def test_it_shapes_and_drops_then_ends_with_only_its_own_marks_gone(pair) -> None:
    injector, one, two, lines = pair
    size = 24_000
    fast = transfer_s(two, one, size)
    slow_network.throttle(injector, "broker-1", ["broker-2"], 128, 0.0)
    # the root qdisc of broker-1's link, unclassified traffic unshaped (default 0)
    (qdisc,) = ours(one)[0]
    assert qdisc.startswith("qdisc htb e1a: dev s1 root refcnt 3 r2q 10 default 0 "), qdisc
    assert ours(two)[0] and ours(two)[1] == [] and ours(one)[1] == []
    # shaped on broker-2's end: 128 kbit/s is 16 kB/s, so 1.5 s at the least
    slow = transfer_s(two, one, size)
    back = transfer_s(one, two, size)  # and on broker-1's
    print(f"24 kB: {fast:.3f} s unshaped, {slow:.3f} s and {back:.3f} s at 128 kbit/s")
    assert slow >= 1.2 and back >= 1.2, (fast, slow, back)
    assert lines.lines[-1]["detail"]["interfaces"] == {"broker-1": "s1", "broker-2": "s2"}
    slow_network.unthrottle(injector, "broker-1")
    assert ours(one) == ours(two) == ([], [])
    assert transfer_s(two, one, size) < 0.5, "the link is fast again"
    for node in (one, two):
        (qdisc,), rules = theirs(node)
        assert qdisc.startswith("qdisc htb 5: dev lo root ")
        assert rules == ["-A INPUT -s 10.77.0.99/32 -j DROP"]


def test_loss_rules_drop_traffic_both_ways_on_the_target_only(pair) -> None:
    injector, one, two, _ = pair
    slow_network.throttle(injector, "broker-1", ["broker-2"], 100_000, 0.5)
    match = ("-m statistic --mode random --probability 0.50000000000 -m comment "
             "--comment elr-harness-slow -j DROP")
    assert ours(one)[1] == [f"-A INPUT -s 10.77.0.2/32 {match}",
                            f"-A OUTPUT -d 10.77.0.2/32 {match}"]
    assert ours(two)[1] == []
    for sender, receiver in ((one, two), (two, one)):
        assert sender.exec(f"{sys.executable} -c {shlex.quote(DATAGRAMS)} "
                           f"{receiver.spec.address}").ok
    for chain in ("INPUT", "OUTPUT"):
        (dropped,) = [int(r.split()[0]) for r in one.sh(
            f"iptables -L {chain} -v -n -x").splitlines() if "statistic" in r]
        assert 20 <= dropped <= 80, f"{dropped} of 100 datagrams dropped in {chain}"
    slow_network.unthrottle(injector, "broker-1")
    assert ours(one) == ([], [])


def test_a_partitions_heal_and_a_slow_networks_end_leave_each_other(pair) -> None:
    injector, one, two, lines = pair
    partition.cut(injector, grudges.isolate("broker-2", ["broker-1", "broker-2"]))
    slow_network.throttle(injector, "broker-2", ["broker-1"], 64, 0.3)
    partition_rules = theirs(two)[1][1:]
    assert len(partition_rules) == 2 and all("--comment elr-harness -j DROP" in r
                                             for r in partition_rules)
    injector.heal()
    assert theirs(two)[1] == ["-A INPUT -s 10.77.0.99/32 -j DROP"]
    assert len(ours(two)[1]) == 2 and ours(two)[0] and ours(one)[0], "still slow"
    partition.cut(injector, grudges.isolate("broker-2", ["broker-1", "broker-2"]))
    slow_network.unthrottle(injector, "broker-2")
    assert ours(one) == ours(two) == ([], [])
    assert theirs(two)[1][1:] == partition_rules, "the partition is still in force"
    injector.heal()
    assert [x["fault"] for x in lines.lines if x["type"] == "ok"] == [
        Fault.PARTITION, Fault.SLOW_NETWORK, Fault.HEAL, Fault.PARTITION, Fault.UNTHROTTLE,
        Fault.HEAL]


def test_a_hosts_own_root_qdisc_is_never_replaced(pair) -> None:
    injector, one, two, lines = pair
    two.sh("tc qdisc add dev s2 root handle 7: htb")
    with pytest.raises(HarnessError, match="slow network on broker-2 failed"):
        slow_network.throttle(injector, "broker-1", ["broker-2"], 64, 0.1)
    assert lines.lines[-1]["type"] == "info"
    injector.heal_all()  # ends the half-applied one
    assert ours(one) == ours(two) == ([], [])
    assert "qdisc htb 7: root" in two.sh("tc qdisc show dev s2")
    assert two.exec(remove_slow_command()).ok, "nothing of ours left is no error"
