"""The primitives every fault kind is built on, each fault recorded as it happens.

Every fault writes an `invoke` when the nemesis decides on it and an `ok`
once it is in force (an `info` if it failed half-way, a `fail` when Kafka
refused it), with `f: "fault"`, its kind, the nodes and a `detail` saying
what it did and, from the caller, why (`step`, and a mix's `mix` entry and
target `role`): `record`, the recorder's fault primitive. A kind
(nemesis/faults/<kind>.py) builds its start and its end from `record` and the
node primitives here: processes taken down, started, frozen and resumed; the
network's tagged iptables cuts and their heal; Kafka's admin tools in a node
that can run them. The injector remembers what those primitives put in force
(nodes down or paused, the grudge, the losses of unflushed data), and each kind
keeps its own record of what of it is in force (`kept`), so that `heal_all`,
which asks every kind of the registry to end itself, ends every fault before
the final reads. No kind is named here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from elr_harness.cluster import reassignments
from elr_harness.cluster.admin_tools import AdminTools, admin_tools
from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.firewall import drop_peers_command, remove_tagged_command
from elr_harness.cluster.kafka_wire import WireConnection
from elr_harness.cluster.node import Node
from elr_harness.core.errors import HarnessError, Refused
from elr_harness.core.history import NEMESIS_PROCESS, Fault, Kind, OpType
from elr_harness.core.parallel import at_once
from elr_harness.core.wait import wait_until
from elr_harness.nemesis.faults import PACKAGES
from elr_harness.nemesis.faults.base import HealStep, Recorder, detail_of
from elr_harness.nemesis.pagecache.control import PageCacheLayer

__all__ = ["FaultInjector", "FaultRefused", "Recorder"]


class FaultRefused(HarnessError):
    """The injector would not inject this fault now (why is in the message);
    nothing was recorded."""


class FaultInjector:
    """Applies faults to a cluster's nodes through its primitives and records each one."""

    def __init__(self, cluster: Cluster, recorder: Recorder,
                 page_cache: PageCacheLayer | None = None,
                 admin: AdminTools | None = None,
                 connect: reassignments.Connect = WireConnection) -> None:
        self.cluster = cluster
        self.recorder = recorder
        self.page_cache = page_cache
        #: Kafka's config and feature tools (made from the cluster when first needed).
        self._admin = admin
        #: How a request reaches a broker from the host (the harness's wire client).
        self.connect = connect
        self._lock = threading.Lock()
        #: The grudge in force (node -> peers whose packets it drops), empty when healed.
        self.grudge: dict[str, list[str]] = {}
        self.down: set[str] = set()
        self.paused: set[str] = set()
        #: Seconds from the decision to the fault in force, per recorded kind.
        self.latencies: dict[str, list[float]] = {}
        #: Brokers a loss of unflushed data took down that were not started since, and
        #: how many such losses the run had (page-cache losses, disk faults that
        #: dropped data).
        self.lost_page_cache: set[str] = set()
        self.page_cache_losses = 0
        #: KIP-966's protection is (or may be) off: the ELR feature was turned to 0.
        self.protection_off = False
        #: Each kind's own record of what of it is in force (kept()).
        self._kept: dict[str, Any] = {}
        #: Every line it recorded, as recorded (a mix's or a scripted scenario's
        #: schedule.toml is read from them: nemesis.schedule.recorded).
        self.lines: list[dict[str, Any]] = []

    # -- the recorder's fault primitive --------------------------------------------

    def record(self, kind: Fault | str, nodes: list[str], detail: dict[str, Any],
               action: Callable[[], dict[str, Any] | None],
               refuse: Callable[[], str | None] | None = None) -> dict[str, Any]:
        """Record invoke, run the action, record ok (info on failure; fail when Kafka
        refused it). `refuse` is asked first, under the same lock as every other
        fault: a reason it gives raises FaultRefused and nothing is recorded."""
        base = {"process": NEMESIS_PROCESS, "f": Kind.FAULT, "fault": kind, "nodes": nodes}
        with self._lock:
            reason = refuse() if refuse is not None else None
            if reason:
                raise FaultRefused(f"{kind} refused: {reason}")
            self.lines.append(self.recorder.record(type=OpType.INVOKE, **base, detail=detail))
            started = time.monotonic()
            try:
                result = action() or {}
            except Exception as err:
                self.lines.append(self.recorder.record(
                    type=OpType.FAIL if isinstance(err, Refused) else OpType.INFO, **base,
                    detail={**detail, "error": str(err)[:500]}))
                raise
            self.latencies.setdefault(str(kind), []).append(time.monotonic() - started)
            done = {**detail, **result}
            self.lines.append(self.recorder.record(type=OpType.OK, **base, detail=done))
            return done

    def node(self, name: str) -> Node:
        try:
            return self.cluster.nodes[name]
        except KeyError:
            raise HarnessError(f"no node named {name}") from None

    def kept(self, kind: str, make: Callable[[], Any]) -> Any:
        """The kind's own record of what of it is in force, made by `make` once."""
        if kind not in self._kept:
            self._kept[kind] = make()
        return self._kept[kind]

    # -- the network ---------------------------------------------------------------

    def block(self, cuts: dict[str, list[str]], inbound_only: bool = False) -> None:
        """Drop each node's traffic with its peers in `cuts` (both ways, or only what
        it receives), with tagged iptables rules in the nodes' own network
        namespaces, on every node at once (a partition is one moment, not a
        sweep). The grudge keeps what did go in (a one-way cut too: the node no
        longer hears those peers); then the first error is raised."""
        names = sorted(cuts)

        def cut(name: str) -> Any:
            addresses = [self.node(peer).spec.address for peer in cuts[name]]
            return self.node(name).exec(drop_peers_command(addresses, inbound_only),
                                        timeout_s=self.cluster.config.timeouts.iptables_s)

        def cut_in(name: str) -> None:
            self.grudge[name] = sorted(set(self.grudge.get(name, [])) | set(cuts[name]))

        _on_every_node(cut, names, cut_in, what="iptables")

    def heal(self, step: str | None = None,
             detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Remove every rule the harness installed on every node (tagged rules only:
        a real host's own firewall stays as it was): every cut ends."""
        names = sorted(self.cluster.nodes)

        def apply() -> None:
            _on_every_node(lambda name: self.node(name).exec(
                remove_tagged_command(), timeout_s=self.cluster.config.timeouts.iptables_s),
                names, lambda name: self.grudge.pop(name, None), what="removing iptables rules")

        return self.record(Fault.HEAL, names, detail_of(step, detail), apply)

    def stale_brokers(self) -> set[str]:
        """Broker addresses whose metadata may be stale: down, paused, or cut off
        from a controller (such a broker still answers, from an old cache)."""
        controllers = {n.spec.name for n in self.cluster.controllers}
        port = self.cluster.config.broker_port
        stale = set()
        for node in self.cluster.brokers:
            name = node.spec.name
            cut = set(self.grudge.get(name, [])) & controllers
            if cut or name in self.down or name in self.paused:
                stale.add(f"{node.spec.address}:{port}")
        return stale

    # -- processes -------------------------------------------------------------------

    def take_down(self, name: str, signal_name: str) -> int | None:
        """Signal Kafka and wait until it is gone; returns the pid it had. A paused
        Kafka could not act on TERM: the caller resumes it first (thaw), so the
        history says the pause ended."""
        node = self.node(name)
        if name in self.paused:
            raise HarnessError(f"{name} is paused: resume it before taking it down")
        pid = node.kafka_pid()
        node.signal_kafka(signal_name)
        timeouts = self.cluster.config.timeouts
        if not node.wait_kafka_gone(timeouts.kafka_gone_after_term_s if signal_name == "TERM"
                                    else timeouts.kafka_gone_s):
            raise HarnessError(f"Kafka on {name} still runs after SIG{signal_name}")
        self.down.add(name)
        return pid

    def start(self, name: str, step: str | None = None,
              detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Start Kafka on `name`, recorded as `start` (what ends any shutdown)."""
        self.node(name)

        def apply() -> dict[str, Any]:
            return {"pid": self.start_kafka(name)}

        return self.record(Fault.START, [name], detail_of(step, detail), apply)

    def start_kafka(self, name: str) -> int | None:
        """Start Kafka (its storage layer mounted first) and wait for its process."""
        node = self.node(name)
        self.cluster.restart_kafka(node)
        seen: list[int | None] = [None]

        def running() -> bool:
            seen[0] = node.kafka_pid()
            return seen[0] is not None

        if not wait_until(running, self.cluster.config.node_start_timeout_s,
                          self.cluster.config.timeouts.process_poll_s):
            raise HarnessError(f"Kafka on {name} did not start: {node.log_tail(10)}")
        self.down.discard(name)
        self.lost_page_cache.discard(name)
        # the pid the wait saw: a second look may miss it (an engine's exec answered
        # before it knew its exit status)
        return seen[0]

    def freeze(self, name: str) -> None:
        """SIGSTOP: Kafka freezes, its sockets stay open."""
        if not self.node(name).signal_kafka("STOP"):
            raise HarnessError(f"no Kafka process to pause on {name}")
        self.paused.add(name)

    def resume(self, name: str, step: str | None = None,
               detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """SIGCONT, recorded as `resume` (what ends a pause)."""
        node = self.node(name)

        def apply() -> None:
            node.signal_kafka("CONT")
            self.paused.discard(name)

        return self.record(Fault.RESUME, [name], detail_of(step, detail), apply)

    def thaw(self, name: str, step: str | None = None,
             detail: dict[str, Any] | None = None) -> None:
        """Resume `name` if it is paused, recorded as `resume` (before a shutdown:
        a kill ends no pause in the history's reading, HISTORY.md's ENDED_BY)."""
        if name in self.paused:
            self.resume(name, step, detail)

    # -- Kafka's admin tools -----------------------------------------------------------

    @property
    def admin(self) -> AdminTools:
        if self._admin is None:
            self._admin = admin_tools(self.cluster)
        return self._admin

    def tool_nodes(self) -> list[Node]:
        """Where Kafka's tools can run: nodes whose Kafka is up and not paused,
        controllers first, those cut off from the fewest peers first."""
        away = self.down | self.paused
        nodes = [n for n in self.cluster.controllers + self.cluster.brokers
                 if n.spec.name not in away]
        if not nodes:
            raise HarnessError("no node is up to run Kafka's admin tools in")
        return sorted(nodes, key=lambda n: len(self.grudge.get(n.spec.name, [])))

    # -- the end of every fault ------------------------------------------------------

    def heal_all(self, step: str = "final-heal", detail: dict[str, Any] | None = None) -> None:
        """End every fault: each kind of the registry ends what of it is in force,
        phase by phase (nemesis.faults.base.HealPhase), a step kinds share run
        once. Every line it records carries `step` and `detail` (a guided round's
        end says what it aimed at)."""
        said = {"step": step, "detail": detail}
        errors = []
        for heal in heal_plan():
            try:
                heal.end(self, said)
            except HarnessError as err:
                if heal.strict:
                    raise
                if not heal.retried_later:
                    errors.append(err.message)
        if errors:
            raise HarnessError("; ".join(errors))


def heal_plan() -> list[HealStep]:
    """Every kind's heal steps, by phase (the registry's order within one), each
    shared step once."""
    steps: list[HealStep] = []
    seen: set[tuple[int, Any]] = set()
    for package in PACKAGES.values():
        for heal in package.heals:
            if (heal.phase, heal.end) not in seen:
                seen.add((heal.phase, heal.end))
                steps.append(heal)
    return sorted(steps, key=lambda heal: heal.phase)


def _on_every_node(action: Callable[[str], Any], names: list[str],
                   done: Callable[[str], object], what: str) -> None:
    """action(name) on every node at once (a command result each); done(name) for
    each node where it worked (so the bookkeeping keeps what did go in); then the
    first failure in the names' order is raised."""
    def run(name: str) -> None:
        result = action(name)
        if not result.ok:
            raise HarnessError(f"{what} on {name} failed: {result.output[-300:]}")

    outcomes = at_once(run, names, tolerate=HarnessError)
    for name, outcome in zip(names, outcomes, strict=True):
        if not isinstance(outcome, Exception):
            done(name)
    for outcome in outcomes:
        if isinstance(outcome, Exception):
            raise outcome
