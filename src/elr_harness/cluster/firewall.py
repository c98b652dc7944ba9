"""The iptables rules a partition installs, tagged so that they alone are removed.

A real host (SSH backend) has firewall rules of its own: healing must never
flush a chain. Every rule the harness adds carries an iptables comment, and
healing deletes exactly the rules carrying it, so a host is left as it was
found, also by the sweep at the next start after a crashed run. Containers get
the same rules, so both backends heal the same way.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from elr_harness.core.config import LABEL

#: The comment on every rule the harness installs.
RULE_TAG = LABEL


def drop_peers_command(addresses: Iterable[str], inbound_only: bool = False) -> str:
    """One shell command dropping traffic both ways between the node and each
    address; `inbound_only`: only what the node receives from them (it still
    reaches them)."""
    rules = []
    for address in addresses:
        tagged = f"-m comment --comment {RULE_TAG} -j DROP"
        rules.append(f"iptables -A INPUT -s {shlex.quote(address)} {tagged}")
        if not inbound_only:
            rules.append(f"iptables -A OUTPUT -d {shlex.quote(address)} {tagged}")
    return " && ".join(rules)


def remove_tagged_command(tag: str = RULE_TAG) -> str:
    """One shell command deleting every rule carrying `tag` (none is no error).

    `iptables -S` prints each rule as the `-A ...` arguments that made it; the
    same words with `-D` delete it. Rules without that exact tag (untagged, or
    another fault's tag that merely starts with it) are never touched.
    """
    tag = shlex.quote(f"--comment {tag}")
    return (f"iptables -S | grep -E -- {tag}'( |$)' | sed 's/^-A /-D /' | "
            "while read -r rule; do iptables $rule || exit 1; done")
