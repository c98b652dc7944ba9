"""The tc qdiscs and iptables rules a slow network installs, tagged so that they
alone are removed.

The kernel of the machines this runs on has no netem qdisc (DESIGN.md), so a
slow, lossy link is built from what it has: an htb class of the given rate for
the traffic to the slow link's other ends (a u32 filter per address; all other
traffic is unclassified and goes out unshaped, so a real host's SSH session and
clients stay fast), and iptables `statistic` rules dropping that traffic at
random, both ways.

Ours is told from anything else by marks no one else uses: the root qdisc's
handle (TC_HANDLE) and the rules' comment (SLOW_TAG, not the partitions'
RULE_TAG: a partition's heal leaves a slow network in force, and ending a slow
network leaves a partition in force). Removing deletes exactly those, on every
interface, so it also sweeps what a crashed run left on a real host. A root
qdisc someone else installed makes adding ours fail: a host's own shaping is
never replaced.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from elr_harness.cluster.firewall import RULE_TAG, remove_tagged_command

#: The comment on every loss rule of a slow network.
SLOW_TAG = f"{RULE_TAG}-slow"
#: The handle (hex major number) of the root qdisc a slow network installs.
TC_HANDLE = "e1a"
#: Its one shaped class.
TC_CLASS = f"{TC_HANDLE}:1"
#: An htb class's quantum: one full Ethernet frame, whatever the rate (htb's
#: rate / r2q is too small below ~120 kbit and warns).
QUANTUM_BYTES = 1514


@dataclass(frozen=True)
class Route:
    """How a node reaches one address: its IPv4 address and the interface."""

    address: str
    ip: str
    interface: str


def routes_command(addresses: Iterable[str]) -> str:
    """One shell command printing `address ip interface` for each address, as the
    node resolves (getent) and routes (ip route get) it."""
    lines = []
    for address in addresses:
        quoted = shlex.quote(address)
        lines.append(
            f"ip=$(getent ahostsv4 {quoted} | awk 'NR == 1 {{print $1}}') && "
            f"[ -n \"$ip\" ] && dev=$(ip -o route get \"$ip\" | "
            "sed -n 's/.* dev \\([^ ]*\\).*/\\1/p') && "
            f"[ -n \"$dev\" ] && echo {quoted} \"$ip\" \"$dev\"")
    return " && ".join(lines)


def parse_routes(output: str) -> list[Route]:
    """routes_command's lines (anything else in the output is ignored)."""
    routes = []
    for line in output.splitlines():
        words = line.split()
        if len(words) == 3 and re.fullmatch(r"\d{1,3}(\.\d{1,3}){3}", words[1]):
            routes.append(Route(*words))
    return routes


def shape_command(ips_by_interface: Mapping[str, Iterable[str]], rate_kbit: int) -> str:
    """One shell command sending traffic to the given IPs, per interface, through
    an htb class of `rate_kbit` (rate and ceiling); nothing else is shaped."""
    commands = []
    for interface, ips in sorted(ips_by_interface.items()):
        dev = shlex.quote(interface)
        commands += [
            f"tc qdisc add dev {dev} root handle {TC_HANDLE}: htb",
            f"tc class add dev {dev} parent {TC_HANDLE}: classid {TC_CLASS} htb "
            f"rate {rate_kbit}kbit ceil {rate_kbit}kbit quantum {QUANTUM_BYTES}",
            *(f"tc filter add dev {dev} parent {TC_HANDLE}: protocol ip prio 1 u32 "
              f"match ip dst {shlex.quote(ip)}/32 flowid {TC_CLASS}" for ip in sorted(ips))]
    return " && ".join(commands)


def loss_command(ips: Iterable[str], probability: float) -> str:
    """One shell command dropping each packet from and to the given IPs with
    `probability` (iptables' statistic match), tagged SLOW_TAG; "true" for 0."""
    if probability <= 0:
        return "true"
    match = (f"-m statistic --mode random --probability {probability:.4f} "
             f"-m comment --comment {SLOW_TAG} -j DROP")
    rules = []
    for ip in sorted(ips):
        rules.append(f"iptables -A INPUT -s {shlex.quote(ip)}/32 {match}")
        rules.append(f"iptables -A OUTPUT -d {shlex.quote(ip)}/32 {match}")
    return " && ".join(rules)


def unshape_command() -> str:
    """One shell command deleting the root qdisc on every interface where it is
    ours (handle TC_HANDLE), which takes its classes and filters with it; no
    such qdisc is no error. Another root qdisc is never touched."""
    return (f"tc qdisc show | awk '$1 == \"qdisc\" && $3 == \"{TC_HANDLE}:\" && "
            "$4 == \"dev\" && $6 == \"root\" {print $5}' | "
            "while read -r dev; do tc qdisc del dev \"$dev\" root || exit 1; done")


def remove_slow_command() -> str:
    """One shell command removing every trace of a slow network: our qdiscs, then
    our loss rules (none is no error)."""
    return f"{unshape_command()} && {remove_tagged_command(SLOW_TAG)}"
