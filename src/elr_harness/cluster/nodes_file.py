"""The nodes file (`--nodes-file hosts.yaml`): real hosts the SSH backend runs on.

    accept_new_host_keys: false      # true: trust and record keys never seen
    known_hosts: ~/.ssh/known_hosts  # checked before anything is sent
    defaults:                        # any node setting, for every node
      user: root
      key_file: ~/.ssh/id_ed25519
    nodes:
      - {name: controller-1, role: controller, address: 10.0.0.11}
      - {name: broker-1, role: broker, address: 10.0.0.21, user: kafka, agent: true}

A node's settings: name, role (controller or broker), address (where Kafka
listens and SSH connects), user, port (22), key_file and/or agent (the SSH
agent's keys), kafka_dir (where uploaded distributions are kept). Every
mistake is one line naming the file and the node, before any host is touched.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from elr_harness.cluster.kraft import CONTROLLER_ID_BASE
from elr_harness.cluster.node import NodeSpec, Role
from elr_harness.core.config import ClusterConfig, SshConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.files import MISSING, path_problem, read_bytes, text_of
from elr_harness.core.validate import Invalid, safe_path, shown_path

NODE_KEYS = {"name", "role", "address", "user", "port", "key_file", "agent", "kafka_dir"}
TOP_KEYS = {"accept_new_host_keys", "known_hosts", "defaults", "nodes"}
#: Node names become folder names (store/<run>/nodes/<name>) and grudge keys.
_NODE_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}")
_ADDRESS = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.:-]{0,252}")
#: A POSIX login name (it reaches SSH and, through sudo's choice, every command).
_USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
#: Far above any real nodes file (MAX_NODES hosts of a few lines each).
MAX_NODES_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class HostEntry:
    """One host of the file: its node's identity and how SSH reaches it."""

    spec: NodeSpec
    user: str
    port: int
    key_file: Path | None
    agent: bool
    kafka_dir: str

    @property
    def needs_sudo(self) -> bool:
        """Firewall, FUSE mounts and /opt need root: other users go through sudo -n."""
        return self.user != "root"


@dataclass(frozen=True)
class NodesFile:
    path: Path
    hosts: tuple[HostEntry, ...]
    known_hosts: Path
    accept_new_host_keys: bool

    @property
    def specs(self) -> list[NodeSpec]:
        return [h.spec for h in self.hosts]

    def count(self, role: Role) -> int:
        return sum(1 for h in self.hosts if h.spec.role is role)


def read_nodes_file(path: Path, ssh: SshConfig | None = None) -> NodesFile:
    """The file parsed and checked; BadInput (one line) on any mistake."""
    where = f"--nodes-file {shown_path(path)}"
    try:
        data = read_bytes(Path(path), where, MAX_NODES_FILE_BYTES)
    except BadInput as err:
        if err.message.endswith(": no such file") or err.message.startswith(
                f"{where}: cannot read it"):
            raise
        why = err.message.removeprefix(f"{where}: ")
        raise BadInput(f"{where}: cannot read it ({why})") from None
    text = text_of(data, where)
    try:
        data = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or "bad syntax"
        raise BadInput(f"{where}: not YAML{at} ({problem})") from None
    except RecursionError:
        raise BadInput(f"{where}: not YAML (nested too deep)") from None
    return parse_nodes(data, Path(path), ssh or SshConfig())


class _NoAliasLoader(yaml.SafeLoader):
    """YAML's safe loader without aliases (`*name`): a nodes file never needs one,
    and a few lines of nested aliases expand to gigabytes (the billion laughs)."""

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not accepted in a nodes file",
                event.start_mark)
        return super().compose_node(parent, index)


def parse_nodes(data: Any, path: Path, ssh: SshConfig) -> NodesFile:
    where = f"--nodes-file {shown_path(path)}"
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) \
            or not data["nodes"]:
        raise BadInput(f"{where}: expected a mapping with a list of nodes under 'nodes:'")
    _no_unknown(data, TOP_KEYS, where)
    accept_new = _bool(data.get("accept_new_host_keys", False), "accept_new_host_keys", where)
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise BadInput(f"{where}: 'defaults' must be a mapping of node settings")
    _no_unknown(defaults, NODE_KEYS - {"name", "role", "address"}, f"{where}: defaults")
    raw_nodes = [{**defaults, **node} if isinstance(node, dict) else node
                 for node in data["nodes"]]
    entries = [_entry(node, i, where, ssh) for i, node in enumerate(raw_nodes, 1)]
    hosts = _numbered(entries, where)
    known_hosts = Path(str(data.get("known_hosts") or "~/.ssh/known_hosts")).expanduser()
    # absent is fine (new keys accepted, or every key refused, by name); anything
    # else must be a file SSH can read keys from and append to
    problem = _not_a_file(known_hosts)
    if problem is not None and problem != MISSING:
        raise BadInput(f"{where}: known_hosts {shown_path(known_hosts)} {problem}")
    return NodesFile(path, hosts, known_hosts, accept_new)


def _not_a_file(path: Path) -> str | None:
    """Why path is no file to read, in words for `<setting> <path> ...`, or None."""
    problem = path_problem(path)
    if problem is not None:
        return problem if problem == MISSING else f"cannot be read: {problem}"
    if path.is_dir():
        return "is a folder, not a file"
    if not path.is_file():
        return "is not a regular file"
    return None


def with_nodes_file(config: ClusterConfig, path: Path) -> ClusterConfig:
    """config with the topology the file names (its counts of controllers and brokers)."""
    nodes = read_nodes_file(path, config.ssh)
    return replace(config, nodes_file=Path(path), controllers=nodes.count(Role.CONTROLLER),
                   brokers=nodes.count(Role.BROKER))


def _entry(node: Any, index: int, where: str, ssh: SshConfig) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise BadInput(f"{where}: node {index} must be a mapping (name, role, address, ...)")
    for key in ("name", "role", "address"):
        if node.get(key) in (None, ""):
            raise BadInput(f"{where}: node {index} has no {key}")
    name = str(node["name"])
    at = f"{where}: node {name[:60]!r}"
    _no_unknown(node, NODE_KEYS, at)
    if not _NODE_NAME.fullmatch(name):
        raise BadInput(f"{at}: a name is 1-63 of a-z A-Z 0-9 _ . - (starting with a letter "
                       "or digit)")
    try:
        role = Role(str(node["role"]))
    except ValueError:
        raise BadInput(f"{at}: role {str(node['role'])[:40]!r} is not controller or "
                       "broker") from None
    address = str(node["address"])
    if not _ADDRESS.fullmatch(address):
        raise BadInput(f"{at}: {address[:60]!r} is not a host name or address")
    port = node.get("port", 22)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise BadInput(f"{at}: port {port!r} is not between 1 and 65535")
    user = str(node.get("user") or "root")
    if not _USER.fullmatch(user):
        raise BadInput(f"{at}: user {user[:40]!r} is not a login name (a-z 0-9 _ -)")
    agent = _bool(node.get("agent", False), "agent", at)
    key_file = Path(str(node["key_file"])).expanduser() if node.get("key_file") else None
    if key_file is None and not agent:
        raise BadInput(f"{at}: give key_file or agent: true (how SSH logs in)")
    if key_file is not None and (problem := _not_a_file(key_file)):
        raise BadInput(f"{at}: key_file {shown_path(key_file)} {problem}")
    kafka_dir = str(node.get("kafka_dir") or ssh.kafka_dir)
    try:
        safe_path(kafka_dir)
    except Invalid as err:
        raise BadInput(f"{at}: kafka_dir: {err}") from None
    return {"name": name, "role": role, "address": address, "user": user, "port": port,
            "key_file": key_file, "agent": agent, "kafka_dir": kafka_dir}


def _numbered(entries: list[dict[str, Any]], where: str) -> tuple[HostEntry, ...]:
    """Node ids as the Docker topology has them: brokers 1.., controllers 1001..,
    in the file's order; names and addresses must be unique."""
    for key in ("name", "address"):
        seen: set[str] = set()
        for entry in entries:
            if entry[key] in seen:
                raise BadInput(f"{where}: {key} '{entry[key]}' appears twice")
            seen.add(entry[key])
    _one_host_each(entries, where)
    for role in Role:
        if not any(e["role"] is role for e in entries):
            raise BadInput(f"{where}: no {role.value} (a KRaft cluster needs at least one "
                           f"controller and one broker)")
    counters = {Role.CONTROLLER: CONTROLLER_ID_BASE, Role.BROKER: 0}
    hosts = []
    for entry in entries:
        counters[entry["role"]] += 1
        spec = NodeSpec(entry["name"], entry["role"], counters[entry["role"]], entry["address"])
        hosts.append(HostEntry(spec, entry["user"], entry["port"], entry["key_file"],
                               entry["agent"], entry["kafka_dir"]))
    # controllers first, as kraft.node_specs orders them
    return tuple(sorted(hosts, key=lambda h: h.spec.role is Role.BROKER))


#: How long the names of a nodes file may take to resolve, all at once; a name
#: that has not by then is not compared (SSH says later if it never does).
RESOLVE_WAIT_S = 3.0


def _one_host_each(entries: list[dict[str, Any]], where: str) -> None:
    """Two nodes on one host would share its ports, paths and firewall: refuse two
    names for one address (a name's case, an IP written two ways, a name that
    resolves to another node's address)."""
    addresses = [e["address"] for e in entries]
    ips = _resolved([a for a in addresses if _ip(a) is None])
    owner: dict[str, tuple[str, str]] = {}
    for entry in entries:
        address = entry["address"]
        keys = {address.lower().rstrip("."), *([_ip(address)] if _ip(address) else []),
                *ips.get(address, ())}
        for key in keys:
            if key in owner:
                name, other = owner[key]
                same = (f"'{other}' and '{address}' name one host"
                        if other.lower().rstrip(".") == address.lower().rstrip(".")
                        else f"'{other}' and '{address}' are both {key}")
                raise BadInput(f"{where}: nodes '{name}' and '{entry['name']}' are on one "
                               f"host ({same}); each node needs a host of its own")
        owner.update(dict.fromkeys(keys, (entry["name"], address)))


def _ip(address: str) -> str | None:
    """An IP literal in its one canonical spelling, or None for a name."""
    try:
        return str(ipaddress.ip_address(address.strip("[]")))
    except ValueError:
        return None


def _resolved(names: list[str]) -> dict[str, set[str]]:
    """The addresses each name resolves to, looked up at once and waited for at most
    RESOLVE_WAIT_S (a lookup cannot be cancelled: daemon threads)."""
    found: dict[str, set[str]] = {}

    def look(name: str) -> None:
        try:
            found[name] = {str(ipaddress.ip_address(info[4][0].split("%")[0]))
                           for info in socket.getaddrinfo(name, None)}
        except (OSError, UnicodeError, ValueError):
            pass

    threads = [threading.Thread(target=look, args=(n,), daemon=True) for n in set(names)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + RESOLVE_WAIT_S
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return dict(found)


def _no_unknown(mapping: dict, known: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in mapping if k not in known)
    if unknown:
        raise BadInput(f"{where}: unknown setting '{unknown[0]}'; known: "
                       f"{', '.join(sorted(known))}")


def _bool(value: Any, key: str, where: str) -> bool:
    if not isinstance(value, bool):
        raise BadInput(f"{where}: {key} must be true or false, got {value!r:.40}")
    return value
