"""The faults themselves, each recorded in the history as it happens.

Every fault writes an `invoke` when the nemesis decides on it and an `ok`
once it is in force (an `info` if it failed half-way), with `f: "fault"`,
the fault kind (harness.core.history.Fault: a controller kill or partition
carries its own name, so a report tells it from a broker's), the nodes and a
`detail` saying what it did (the grudge, the bytes dropped per file) and, from
the caller, why (`step`, and the mix's `mix` entry and target `role`). The
injector also remembers what is in force so that `heal_all` can always end
every fault before the final reads. An action refused before it changed
anything is recorded `fail`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cluster import reassignments
from cluster.cluster import Cluster
from cluster.firewall import drop_peers_command, remove_tagged_command
from cluster.kafka_wire import WireConnection
from cluster.node import Node
from harness.core.errors import HarnessError, Refused
from harness.core.history import NEMESIS_PROCESS, Fault, Kind, OpType
from harness.core.wait import wait_until
from nemesis.grudges import Grudge
from nemesis.pagecache import PageCacheLayer


class Recorder(Protocol):
    def record(self, **fields: Any) -> dict[str, Any]: ...


#: The kinds `partition`, `kill` and `pause` may be recorded as: the same action on
#: Kafka, named by what it aims at (a controller, a leader to bounce).
PARTITION_KINDS = (Fault.PARTITION, Fault.CONTROLLER_PARTITION, Fault.ISOLATE_FROM_CONTROLLERS)
KILL_KINDS = (Fault.KILL, Fault.CONTROLLER_KILL)
PAUSE_KINDS = (Fault.PAUSE, Fault.BOUNCE_LEADER)


def _detail(step: str | None, extra: dict[str, Any] | None) -> dict[str, Any]:
    """A fault's detail before it runs: the caller's why (step, mix, role)."""
    return {**({"step": step} if step else {}), **(extra or {})}


@dataclass(frozen=True)
class Reassignment:
    """A partition reassignment in force: asked for, not yet ended."""

    topic: str
    partition: int
    #: the replicas observed before (`from`) and the ones asked for (`to`)
    replicas: tuple[int, ...]
    target: tuple[int, ...]
    #: the brokers of both, as the fault's `nodes`
    nodes: list[str]
    #: whether its end puts `replicas` back should it have completed
    restore: bool
    #: the caller's why (mix, role, ...), carried by its end too
    why: dict[str, Any]


def _checked(kind: Fault | str, allowed: tuple[Fault, ...]) -> Fault:
    kind = Fault(kind)
    if kind not in allowed:
        raise ValueError(f"{kind} is not one of {', '.join(allowed)}")
    return kind


class FaultInjector:
    """Applies faults to a cluster's nodes and records each one."""

    def __init__(self, cluster: Cluster, recorder: Recorder,
                 page_cache: PageCacheLayer | None = None,
                 connect: reassignments.Connect = WireConnection) -> None:
        self.cluster = cluster
        self.recorder = recorder
        self.page_cache = page_cache
        #: How a reassignment reaches a broker (the harness's wire client).
        self.connect = connect
        self._lock = threading.Lock()
        #: The grudge in force (node -> peers it cannot hear), empty when healed.
        self.grudge: dict[str, list[str]] = {}
        self.down: set[str] = set()
        self.paused: set[str] = set()
        #: Reassignments asked for and not yet ended, by (topic, partition).
        self.reassignments: dict[tuple[str, int], Reassignment] = {}
        #: Seconds from the decision to the fault in force, per fault kind.
        self.latencies: dict[str, list[float]] = {}

    # -- recording -------------------------------------------------------------

    def _fault(self, kind: Fault, nodes: list[str], detail: dict[str, Any],
               action: Callable[[], dict[str, Any] | None]) -> dict[str, Any]:
        """Record invoke, run the action, record ok (or info on failure)."""
        base = {"process": NEMESIS_PROCESS, "f": Kind.FAULT, "fault": kind, "nodes": nodes}
        with self._lock:
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
        detail = {"grudge": grudge, **_detail(step, detail)}

        def apply() -> None:
            for name, peers in grudge.items():
                node = self._node(name)
                addresses = [self._node(peer).spec.address for peer in peers]
                result = node.exec(drop_peers_command(addresses),
                                   timeout_s=self.cluster.config.timeouts.iptables_s)
                if not result.ok:
                    raise HarnessError(f"iptables on {name} failed: {result.output[-300:]}")
                self.grudge.setdefault(name, [])
                self.grudge[name] = sorted(set(self.grudge[name]) | set(peers))

        return self._fault(kind, nodes, detail, apply)

    def heal(self, step: str | None = None,
             detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Remove every rule the harness installed on every node (tagged rules only:
        a real host's own firewall stays as it was)."""
        names = sorted(self.cluster.nodes)

        def apply() -> None:
            for name in names:
                result = self._node(name).exec(
                    remove_tagged_command(), timeout_s=self.cluster.config.timeouts.iptables_s)
                if not result.ok:
                    raise HarnessError(f"removing iptables rules on {name} failed: "
                                       f"{result.output[-300:]}")
            self.grudge = {}

        return self._fault(Fault.HEAL, names, _detail(step, detail), apply)

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

        return self._fault(kind, [name], _detail(step, detail), apply)

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
            self.cluster.restart_kafka(node)
            if not wait_until(lambda: node.kafka_pid() is not None,
                              self.cluster.config.node_start_timeout_s,
                              self.cluster.config.timeouts.process_poll_s):
                raise HarnessError(f"Kafka on {name} did not start: {node.log_tail(10)}")
            self.down.discard(name)
            return {"pid": node.kafka_pid()}

        return self._fault(Fault.START, [name], _detail(step, detail), apply)

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

        return self._fault(kind, [name], _detail(step, detail), apply)

    def resume(self, name: str, step: str | None = None,
               detail: dict[str, Any] | None = None) -> dict[str, Any]:
        node = self._node(name)

        def apply() -> None:
            node.signal_kafka("CONT")
            self.paused.discard(name)

        return self._fault(Fault.RESUME, [name], _detail(step, detail), apply)

    def page_cache_loss(self, name: str, step: str | None = None,
                        detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Power loss: kill -9 Kafka, then throw away every byte it never fsynced.
        Kafka stays down (start it later); it will find no clean-shutdown marker."""
        if self.page_cache is None:
            raise HarnessError("page-cache-loss needs the page-cache layer under the brokers")
        node = self._node(name)
        layer = self.page_cache

        def apply() -> dict[str, Any]:
            self._take_down(node, "KILL")
            report = layer.power_loss(node)
            return {"bytes_dropped": report.get("bytes_dropped", {}),
                    "total_bytes_dropped": report.get("total_bytes", 0)}

        return self._fault(Fault.PAGE_CACHE_LOSS, [name], _detail(step, detail), apply)

    # -- partition assignments -------------------------------------------------------

    def reassign(self, topic: str, partition: int, replicas: Sequence[int],
                 target: Sequence[int], restore: bool = False, step: str | None = None,
                 detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Ask Kafka to move a partition from `replicas` (as observed) to `target`
        (AlterPartitionReassignments, through a broker that hears the controllers);
        it is in force until end_reassign. `restore`: should it complete, its end puts `replicas`
        back (a removal that left fewer replicas than the topic's replication
        factor). One that may have half-happened (`info`) is ended like any other."""
        key = (topic, partition)
        if key in self.reassignments:
            raise HarnessError(f"{topic}-{partition}: a reassignment is already in force")
        nodes = self._broker_names([*replicas, *target])
        why = _detail(step, detail)
        record = {"topic": topic, "partition": partition, "from": list(replicas),
                  "to": list(target), "restore": restore, **why}
        tracked = Reassignment(topic, partition, tuple(replicas), tuple(target), nodes,
                               restore, why)

        def apply() -> None:
            try:
                reassignments.execute(self._admin_addresses(), topic, partition, target,
                                      self.cluster.config.timeouts, self.connect)
            except Exception as err:
                if not isinstance(err, Refused):
                    self.reassignments[key] = tracked  # it may have started
                raise
            self.reassignments[key] = tracked

        return self._fault(Fault.REASSIGN, nodes, record, apply)

    def end_reassign(self, topic: str, partition: int, step: str | None = None,
                     detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """End a reassignment `reassign` began: cancelled if it is still under way
        (Kafka drops the replicas it was adding), else left completed, or undone by
        a reassignment back to its `from` when it was asked to restore. The line's
        `outcome` says which; it carries the start's why unless given another."""
        tracked = self.reassignments.get((topic, partition))
        if tracked is None:
            raise HarnessError(f"{topic}-{partition}: no reassignment in force to end")
        record = {"topic": topic, "partition": partition, "from": list(tracked.replicas),
                  "to": list(tracked.target),
                  **_detail(step, tracked.why if detail is None else detail)}

        def apply() -> dict[str, Any]:
            addresses, timeouts = self._admin_addresses(), self.cluster.config.timeouts
            outcome = reassignments.cancel(addresses, topic, partition, timeouts, self.connect)
            restored = outcome is reassignments.Outcome.COMPLETED and tracked.restore
            if restored:
                try:
                    reassignments.execute(addresses, topic, partition, tracked.replicas,
                                          timeouts, self.connect)
                except Refused as err:  # the end did something: not a fail
                    raise HarnessError(f"putting {list(tracked.replicas)} back: {err}") from err
            del self.reassignments[(topic, partition)]
            return {"outcome": str(outcome), "restored": restored}

        return self._fault(Fault.REASSIGN_END, tracked.nodes, record, apply)

    def _broker_names(self, ids: Sequence[int]) -> list[str]:
        try:
            return sorted({self.cluster.broker_by_id(int(i)).spec.name for i in ids})
        except KeyError as err:
            raise HarnessError(f"reassignment names {err.args[0]}") from None

    def _admin_addresses(self) -> list[str]:
        """Brokers to send a reassignment to, which forward it to the controller:
        none that is down, paused or cut off from the controllers."""
        stale = self.stale_brokers()
        return [address for address in self.cluster.bootstrap if address not in stale]

    # -- the end of every fault ------------------------------------------------------

    def _looks_dead(self, node: Node, looks: int = 3) -> bool:
        """No Kafka process on `looks` asks in a row. One empty pgrep is no proof
        (cluster.Cluster._fail_if_a_node_died): heal_all once started a controller
        that ran all along, and recorded a start no fault had called for."""
        for look in range(looks):
            if node.kafka_pid() is not None:
                return False
            if look < looks - 1:
                time.sleep(self.cluster.config.dead_look_spacing_s)
        return True

    def heal_all(self) -> None:
        """End every fault: heal the network, resume paused, end reassignments, start
        what is down. Reassignments end before the restarts, so one that a stopped
        replica held back is cancelled, not completed by its return; one whose end
        failed (the cluster still without a controller) is tried again after them."""
        self.heal(step="final-heal")
        for name in sorted(self.paused):
            self.resume(name, step="final-heal")
        for topic, partition in sorted(self.reassignments):
            with contextlib.suppress(HarnessError):  # recorded as info; tried again below
                self.end_reassign(topic, partition, step="final-heal")
        for name in sorted(self.cluster.nodes):
            if name in self.down or self._looks_dead(self._node(name)):
                self.start(name, step="final-heal")
        for topic, partition in sorted(self.reassignments):
            self.end_reassign(topic, partition, step="final-heal")
