"""Random fault mixes: `--nemesis partition,kill,pause,...` or `all`.

The schedule alternates quiet and fault periods of `interval` seconds; each
fault period picks a kind and a target by role (a partition's leader, an ISR
or ELR member, the active controller, or any node) from the observed state,
all from one seeded RNG, and ends its fault before the next quiet period.
A page-cache loss is only injected while every observed partition has a full
ISR, so no partition loses unflushed data on more than one replica between
two points where its ISR was full: the run stays within KIP-966's budget of
min.insync.replicas - 1 such losses (for min ISR >= 2), and the checker's
budget rule still judges whatever happens.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from nemesis import grudges
from nemesis.faults import FaultInjector
from nemesis.scenario import Observer

FAULT_KINDS = (
    "partition", "kill", "stop", "pause", "page-cache-loss",
    "controller-kill", "controller-partition", "isolate-from-controllers",
)


class RandomMix:
    """A seeded schedule of faults over the given kinds."""

    def __init__(self, injector: FaultInjector, observer: Observer, kinds: Sequence[str],
                 seed: int, interval_s: float, replication_factor: int,
                 stop: threading.Event | None = None,
                 log: Callable[[str], None] = print) -> None:
        self.injector = injector
        self.observer = observer
        self.kinds = list(kinds)
        self.rng = random.Random(seed)
        self.interval_s = interval_s
        self.replication_factor = replication_factor
        self.stop_event = stop or threading.Event()
        self.log = log
        self.injected: list[str] = []

    @property
    def cluster(self):
        return self.injector.cluster

    def run(self, deadline: float) -> list[str]:
        """Inject faults until the deadline or stop; every fault is ended before return."""
        while not self.stop_event.is_set() and time.monotonic() + 2 * self.interval_s < deadline:
            self.stop_event.wait(self.interval_s)
            if self.stop_event.is_set():
                break
            kind = self.rng.choice(self.kinds)
            try:
                undo = self._inject(kind)
            except Exception as err:  # noqa: BLE001 - recorded as info; go on with the mix
                self.log(f"{kind} failed: {err}")
                continue
            if undo is None:
                continue
            self.injected.append(kind)
            self.stop_event.wait(self.interval_s)
            undo()
        return self.injected

    # -- targets by role ----------------------------------------------------------

    def _states(self) -> list[Any]:
        return list(self.observer.latest())

    def _broker(self, role: str) -> str:
        """A broker by role: leader, isr or elr member of a random partition, or any."""
        states = [s for s in self._states() if s.leader >= 0] if role == "leader" else \
            self._states()
        candidates: list[int] = []
        if states:
            state = self.rng.choice(sorted(states, key=lambda s: (s.topic, s.partition)))
            if role == "leader":
                candidates = [state.leader]
            elif role == "isr":
                candidates = list(state.isr)
            elif role == "elr":
                candidates = list(state.elr or [])
        if not candidates:
            return self.rng.choice(sorted(n.spec.name for n in self.cluster.brokers))
        return self.cluster.broker_by_id(self.rng.choice(sorted(candidates))).spec.name

    def _active_controller(self) -> str:
        leader = self.cluster.quorum_leader()
        for node in self.cluster.controllers:
            if node.spec.node_id == leader:
                return node.spec.name
        return self.rng.choice(sorted(n.spec.name for n in self.cluster.controllers))

    def _all_isr_full(self) -> bool:
        states = self._states()
        return bool(states) and all(len(s.isr) >= self.replication_factor for s in states)

    # -- one fault and its undo ------------------------------------------------------

    def _inject(self, kind: str) -> Callable[[], Any] | None:
        inj = self.injector
        nodes = sorted(self.cluster.nodes)
        if kind == "partition":
            shape = self.rng.choice(["isolate", "majority-minority", "ring", "bridge"])
            if shape == "isolate":
                grudge = grudges.isolate(self._broker(self.rng.choice(["leader", "isr"])), nodes)
            elif shape == "majority-minority":
                grudge = grudges.majority_minority(nodes, self.rng)
            elif shape == "ring":
                grudge = grudges.ring(nodes, self.rng)
            else:
                grudge = grudges.bridge(nodes, self.rng)
            inj.partition(grudge, step=f"mix:{shape}")
            return inj.heal
        if kind in ("kill", "stop"):
            target = self._broker(self.rng.choice(["leader", "isr", "elr", "any"]))
            (inj.kill if kind == "kill" else inj.stop)(target)
            return lambda: inj.start(target)
        if kind == "pause":
            target = self._broker(self.rng.choice(["leader", "isr", "any"]))
            inj.pause(target)
            return lambda: inj.resume(target)
        if kind == "page-cache-loss":
            if not self._all_isr_full():
                self.log("page-cache-loss skipped: not every ISR is full (fault budget)")
                return None
            target = self._broker(self.rng.choice(["leader", "isr"]))
            inj.page_cache_loss(target)
            return lambda: inj.start(target)
        if kind == "controller-kill":
            target = self._active_controller()
            inj.kill(target)
            return lambda: inj.start(target)
        if kind == "controller-partition":
            inj.partition(grudges.isolate(self._active_controller(), nodes),
                          step="mix:controller-partition")
            return inj.heal
        if kind == "isolate-from-controllers":
            broker = self._broker(self.rng.choice(["leader", "isr", "any"]))
            inj.partition(grudges.from_controllers(
                [broker], [n.spec.name for n in self.cluster.controllers]),
                step="mix:isolate-from-controllers")
            return inj.heal
        raise ValueError(f"unknown fault kind {kind}")
