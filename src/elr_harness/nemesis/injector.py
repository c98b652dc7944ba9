"""The faults themselves, each recorded in the history as it happens.

Every fault writes an `invoke` when the nemesis decides on it and an `ok`
once it is in force (an `info` if it failed half-way), with `f: "fault"`,
the fault kind (harness.core.history.Fault: a controller kill or partition
carries its own name, so a report tells it from a broker's), the nodes and a
`detail` saying what it did (the grudge, the bytes dropped per file) and, from
the caller, why (`step`, and the mix's `mix` entry and target `role`). The
injector also remembers what is in force (the grudge, what is down or paused,
a disk fault, a slow network's target, a changed config, a reassignment) so
that `heal_all` can always end every fault before the final reads. An action
refused before it changed anything is recorded `fail`.

A config or feature change (min-isr-change, feature-change) runs Kafka's own
tools in a node (cluster.admin_tools) and ends `fail` when the controller
refused it (it certainly did not happen). Such a change is ended by a line of
its own kind with `restore: true` (harness.core.history.RESTORED_BY_SELF). While
the ELR feature is off KIP-966 promises nothing about unclean shutdowns, so the
injector refuses a page-cache loss then, and refuses to turn ELR off while a
broker that lost its page cache is down.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from elr_harness.cluster import reassignments
from elr_harness.cluster.admin_tools import AdminTools
from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.firewall import drop_peers_command, remove_tagged_command
from elr_harness.cluster.kafka_wire import WireConnection
from elr_harness.cluster.kraft import broker_log_dirs
from elr_harness.cluster.node import Node, kafka_looks_dead
from elr_harness.core.errors import HarnessError, Refused
from elr_harness.core.history import NEMESIS_PROCESS, Fault, Kind, OpType
from elr_harness.core.parallel import at_once
from elr_harness.core.wait import wait_until
from elr_harness.nemesis.admin_faults import AdminFaults
from elr_harness.nemesis.grudges import Grudge
from elr_harness.nemesis.injector_parts import FaultRefused, detail_of
from elr_harness.nemesis.pagecache import PageCacheLayer
from elr_harness.nemesis.pagecache_faults import DiskFault
from elr_harness.nemesis.reassign_faults import ReassignFaults, Reassignment
from elr_harness.nemesis.shaping_faults import ShapingFaults

__all__ = ["FaultInjector", "FaultRefused", "Recorder"]


class Recorder(Protocol):
    def record(self, **fields: Any) -> dict[str, Any]: ...


#: The kinds `partition`, `kill` and `pause` may be recorded as: the same action on
#: Kafka, named by what it aims at (a controller, a leader to bounce).
PARTITION_KINDS = (Fault.PARTITION, Fault.CONTROLLER_PARTITION, Fault.ISOLATE_FROM_CONTROLLERS)
KILL_KINDS = (Fault.KILL, Fault.CONTROLLER_KILL)
PAUSE_KINDS = (Fault.PAUSE, Fault.BOUNCE_LEADER)


def _checked(kind: Fault | str, allowed: tuple[Fault, ...]) -> Fault:
    kind = Fault(kind)
    if kind not in allowed:
        raise ValueError(f"{kind} is not one of {', '.join(allowed)}")
    return kind


class FaultInjector(AdminFaults, ShapingFaults, ReassignFaults):
    """Applies faults to a cluster's nodes and records each one (its parts by what
    they act on: nemesis.injector_parts)."""

    def __init__(self, cluster: Cluster, recorder: Recorder,
                 page_cache: PageCacheLayer | None = None,
                 admin: AdminTools | None = None,
                 connect: reassignments.Connect = WireConnection) -> None:
        self.cluster = cluster
        self.recorder = recorder
        self.page_cache = page_cache
        #: Kafka's config and feature tools (made from the cluster when first needed).
        self._admin = admin
        #: How a reassignment reaches a broker (the harness's wire client).
        self.connect = connect
        self._lock = threading.Lock()
        #: The grudge in force (node -> peers it cannot hear), empty when healed.
        self.grudge: dict[str, list[str]] = {}
        self.down: set[str] = set()
        self.paused: set[str] = set()
        #: Brokers with a disk fault in force: node -> the failing log dir.
        self.disk_faults: dict[str, str] = {}
        #: The node whose links are slow (a slow network's target) -> its peers.
        self.throttled: dict[str, list[str]] = {}
        #: Reassignments asked for and not yet ended, by (topic, partition).
        self.reassignments: dict[tuple[str, int], Reassignment] = {}
        #: Seconds from the decision to the fault in force, per fault kind.
        self.latencies: dict[str, list[float]] = {}
        #: Brokers a page-cache loss took down that were not started since, and how
        #: many losses of unflushed data the run had (page-cache losses, and disk
        #: faults that dropped data).
        self.lost_page_cache: set[str] = set()
        self.page_cache_losses = 0
        #: Changes that are (or may be: ended info) in force, by target: topic (None:
        #: the cluster default) or feature -> (the value before, the value now).
        self.min_isr_changes: dict[str | None, tuple[int, int]] = {}
        self.feature_changes: dict[str, tuple[int, int]] = {}

    # -- recording -------------------------------------------------------------

    def _fault(self, kind: Fault, nodes: list[str], detail: dict[str, Any],
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
            self.recorder.record(type=OpType.INVOKE, **base, detail=detail)
            started = time.monotonic()
            try:
                result = action() or {}
            except Exception as err:
                self.recorder.record(type=OpType.FAIL if isinstance(err, Refused)
                                     else OpType.INFO, **base,
                                     detail={**detail, "error": str(err)[:500]})
                raise
            self.latencies.setdefault(str(kind), []).append(time.monotonic() - started)
            done = {**detail, **result}
            self.recorder.record(type=OpType.OK, **base, detail=done)
            return done

    def _node(self, name: str) -> Node:
        try:
            return self.cluster.nodes[name]
        except KeyError:
            raise HarnessError(f"no node named {name}") from None

    # -- network -----------------------------------------------------------------

    def partition(self, grudge: Grudge, step: str | None = None,
                  kind: Fault | str = Fault.PARTITION,
                  detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Drop traffic, both directions, between each node and the peers it holds a
        grudge against (iptables in the nodes' own network namespaces). `kind` names
        what the cut aims at (one of PARTITION_KINDS); the rules are the same."""
        kind = _checked(kind, PARTITION_KINDS)
        nodes = sorted(grudge)
        detail = {"grudge": grudge, **detail_of(step, detail)}

        def cut(name: str) -> None:
            addresses = [self._node(peer).spec.address for peer in grudge[name]]
            result = self._node(name).exec(drop_peers_command(addresses),
                                           timeout_s=self.cluster.config.timeouts.iptables_s)
            if not result.ok:
                raise HarnessError(f"iptables on {name} failed: {result.output[-300:]}")

        def apply() -> None:
            def cut_in(name: str) -> None:
                self.grudge[name] = sorted(set(self.grudge.get(name, [])) | set(grudge[name]))

            # every node's rules at once: a partition is one moment, not a sweep
            _on_every_node(cut, nodes, cut_in)

        return self._fault(kind, nodes, detail, apply)

    def heal(self, step: str | None = None,
             detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Remove every rule the harness installed on every node (tagged rules only:
        a real host's own firewall stays as it was)."""
        names = sorted(self.cluster.nodes)

        def remove(name: str) -> None:
            result = self._node(name).exec(
                remove_tagged_command(), timeout_s=self.cluster.config.timeouts.iptables_s)
            if not result.ok:
                raise HarnessError(f"removing iptables rules on {name} failed: "
                                   f"{result.output[-300:]}")

        def apply() -> None:
            _on_every_node(remove, names, lambda name: self.grudge.pop(name, None))

        return self._fault(Fault.HEAL, names, detail_of(step, detail), apply)

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

    # -- processes -----------------------------------------------------------------

    def kill(self, name: str, step: str | None = None, kind: Fault | str = Fault.KILL,
             detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """SIGKILL the Kafka process: no clean shutdown, the page cache survives.
        `kind` is CONTROLLER_KILL when the target is a controller."""
        return self._signal_down(_checked(kind, KILL_KINDS), "KILL", name, step, detail)

    def stop(self, name: str, step: str | None = None,
             detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """SIGTERM: Kafka's own clean (controlled) shutdown."""
        return self._signal_down(Fault.STOP, "TERM", name, step, detail)

    def _signal_down(self, kind: Fault, signal_name: str, name: str, step: str | None,
                     detail: dict[str, Any] | None) -> dict[str, Any]:
        node = self._node(name)

        def apply() -> dict[str, Any]:
            return {"pid": self._take_down(node, signal_name)}

        return self._fault(kind, [name], detail_of(step, detail), apply)

    def _take_down(self, node: Node, signal_name: str) -> int | None:
        """Signal Kafka (a paused one is thawed first, or it could not act on TERM)
        and wait until it is gone; returns the pid it had."""
        name = node.spec.name
        if name in self.paused:
            node.signal_kafka("CONT")
            self.paused.discard(name)
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
        node = self._node(name)

        def apply() -> dict[str, Any]:
            return {"pid": self._start_kafka(node)}

        return self._fault(Fault.START, [name], detail_of(step, detail), apply)

    def _start_kafka(self, node: Node) -> int | None:
        """Start Kafka (its storage layer mounted first) and wait for its process."""
        name = node.spec.name
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

    def pause(self, name: str, step: str | None = None, kind: Fault | str = Fault.PAUSE,
              detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """SIGSTOP: Kafka freezes, its sockets stay open. `kind` is BOUNCE_LEADER
        for a leader held past its session timeout (one of PAUSE_KINDS)."""
        kind = _checked(kind, PAUSE_KINDS)
        node = self._node(name)

        def apply() -> None:
            if not node.signal_kafka("STOP"):
                raise HarnessError(f"no Kafka process to pause on {name}")
            self.paused.add(name)

        return self._fault(kind, [name], detail_of(step, detail), apply)

    def resume(self, name: str, step: str | None = None,
               detail: dict[str, Any] | None = None) -> dict[str, Any]:
        node = self._node(name)

        def apply() -> None:
            node.signal_kafka("CONT")
            self.paused.discard(name)

        return self._fault(Fault.RESUME, [name], detail_of(step, detail), apply)

    def page_cache_loss(self, name: str, step: str | None = None,
                        detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Power loss: kill -9 Kafka, then throw away every byte it never fsynced.
        Kafka stays down (start it later); it will find no clean-shutdown marker."""
        if self.page_cache is None:
            raise HarnessError("page-cache-loss needs the page-cache layer under the brokers")
        node = self._node(name)
        layer = self.page_cache

        def apply() -> dict[str, Any]:
            self.page_cache_losses += 1
            self.lost_page_cache.add(name)
            self._take_down(node, "KILL")
            report = layer.power_loss(node)
            return {"bytes_dropped": report.get("bytes_dropped", {}),
                    "total_bytes_dropped": report.get("total_bytes", 0)}

        def refuse() -> str | None:
            return ("the ELR feature is off: KIP-966 promises nothing about an unclean "
                    "shutdown then") if self.elr_feature_off else None

        return self._fault(Fault.PAGE_CACHE_LOSS, [name], detail_of(step, detail), apply, refuse)

    # -- disks -----------------------------------------------------------------------

    def log_dirs(self) -> list[str]:
        """A broker's log directories (the same on every broker), as Kafka names them."""
        return broker_log_dirs(self.cluster.config)

    def disk_fault(self, name: str, directory: str, errno_name: str,
                   operations: tuple[str, ...], drop: bool, step: str | None = None,
                   detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Fail `operations` (write, fsync) under one log dir of a broker with an errno,
        through its page-cache layer, while Kafka runs on: Kafka takes the dir offline
        (or stops, when it was its only one). `drop`: a failed fsync forgets the
        file's unsynced data, recorded as `"dropped": true`."""
        if self.page_cache is None:
            raise HarnessError("disk-fault needs the page-cache layer under the brokers")
        node, layer = self._node(name), self.page_cache
        fault = DiskFault(layer.relative(directory), errno_name, tuple(operations), drop)
        dropping = drop and "fsync" in fault.operations
        detail = {"dir": directory, "errno": errno_name, "operations": list(fault.operations),
                  "dropped": dropping, **detail_of(step, detail)}

        def apply() -> None:
            layer.disk_fault(node, fault)
            self.disk_faults[name] = directory
            if dropping:  # a loss of unflushed data, as a page-cache loss is
                self.page_cache_losses += 1

        def refuse() -> str | None:
            return ("the ELR feature is off: KIP-966 promises nothing about lost unflushed "
                    "data then") if dropping and self.elr_feature_off else None

        return self._fault(Fault.DISK_FAULT, [name], detail, apply, refuse)

    def end_disk_fault(self, name: str, step: str | None = None,
                       detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """The disk is healthy again: errors off, then the broker restarted (cleanly
        if it still runs), since Kafka keeps a failed log dir offline until then.
        Recorded as the `start` that ends the disk fault, with what the fault did."""
        if self.page_cache is None:
            raise HarnessError("disk-fault needs the page-cache layer under the brokers")
        node, layer = self._node(name), self.page_cache
        timeouts = self.cluster.config.timeouts

        def apply() -> dict[str, Any]:
            answer = layer.disk_fault(node, None)
            self.disk_faults.pop(name, None)
            stopped = node.kafka_pid()
            if stopped is not None:
                node.signal_kafka("TERM")
                if not node.wait_kafka_gone(timeouts.kafka_gone_after_term_s):
                    node.signal_kafka("KILL")  # a shutdown stuck on the failed dir
                    if not node.wait_kafka_gone(timeouts.kafka_gone_s):
                        raise HarnessError(f"Kafka on {name} still runs after SIGKILL")
            self.down.add(name)
            started = self._start_kafka(node)
            return {"stopped_pid": stopped, "pid": started,
                    "failed": answer.get("failed", {}),
                    "bytes_dropped": answer.get("bytes_dropped", {}),
                    "total_bytes_dropped": answer.get("total_bytes_dropped", 0)}

        return self._fault(Fault.START, [name], detail_of(step, detail), apply)

    # -- the end of every fault ------------------------------------------------------

    def heal_all(self, step: str = "final-heal", detail: dict[str, Any] | None = None) -> None:
        """End every fault: heal the network (partitions, then a slow network),
        resume paused, end disk faults and reassignments, start what is down, and
        put back every config and feature a change left changed. Reassignments end
        before the restarts, so one that a stopped replica held back is cancelled,
        not completed by its return; one whose end failed (the cluster still
        without a controller) is tried again after them. Every line it records
        carries `step` and `detail` (a guided round's end says what it aimed at)."""
        said = {"step": step, "detail": detail}
        self.heal(**said)
        for name in sorted(self.throttled):
            self.unthrottle(name, **said)
        for name in sorted(self.paused):
            self.resume(name, **said)
        for name in sorted(self.disk_faults):
            self.end_disk_fault(name, **said)
        for topic, partition in sorted(self.reassignments):
            with contextlib.suppress(HarnessError):  # recorded as info; tried again below
                self.end_reassign(topic, partition, **said)
        for name in sorted(self.cluster.nodes):
            if name in self.down or kafka_looks_dead(self._node(name),
                                                      self.cluster.config.dead_look_spacing_s):
                self.start(name, **said)
        errors = []  # each change is put back even when another one could not be
        for topic, partition in sorted(self.reassignments):
            try:
                self.end_reassign(topic, partition, **said)
            except HarnessError as err:
                errors.append(err.message)
        for feature in sorted(self.feature_changes):
            try:
                self.restore_feature(feature, **said)
            except HarnessError as err:
                errors.append(err.message)
        for topic in sorted(self.min_isr_changes, key=lambda t: (t is not None, t or "")):
            try:
                self.restore_min_isr(topic, **said)
            except HarnessError as err:
                errors.append(err.message)
        if errors:
            raise HarnessError("; ".join(errors))


def _on_every_node(action: Callable[[str], object], names: list[str],
                   done: Callable[[str], object]) -> None:
    """action(name) on every node at once; done(name) for each node where it worked
    (so the bookkeeping keeps what did go in); then the first HarnessError in the
    names' order is raised."""
    outcomes = at_once(action, names, tolerate=HarnessError)
    for name, outcome in zip(names, outcomes, strict=True):
        if not isinstance(outcome, Exception):
            done(name)
    for outcome in outcomes:
        if isinstance(outcome, Exception):
            raise outcome
