"""KIP-966's "last replica standing" case, step by step (shared/SCENARIOS.md).

L is the partition's leader, A and B its followers, all found from the
observed state. Each step is a fault recorded with `detail.step`, and each
waits (bounded) on the observed partition state rather than on a sleep:

    T0  partition A away from every node        -> ISR = {L, B}
    T1  partition B away too                    -> ISR = {L}; ELR on: ELR = {B}
    T2  power loss on L (kill -9, drop unsynced) -> ELR on: ISR = {}, leader -1
    T3  heal the partitions                      -> A and B unfenced
    T4  restart L (no clean-shutdown marker)    -> ELR on: B leads; off: L leads

A wait that runs out is recorded (detail.timed_out) and the scenario goes on:
the checker judges the history, not the scenario's expectations.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cluster.observe import PartitionState
from harness.core.config import ScenarioTimings
from harness.core.wait import wait_until
from nemesis import grudges
from nemesis.injector import FaultInjector


class Observer(Protocol):
    def latest(self) -> Sequence[PartitionState]: ...
    def wait_for(self, predicate: Callable[[list[Any]], bool],
                 timeout_s: float) -> list[Any] | None: ...


@dataclass
class StepOutcome:
    step: str
    reached: bool
    observed: dict[str, Any]


def _summary(state: PartitionState | None) -> dict[str, Any]:
    """What a step records of the partition it waited on."""
    if state is None:
        return {}
    return {"leader": state.leader, "isr": list(state.isr),
            "elr": None if state.elr is None else list(state.elr)}


class ScriptedScenario:
    """A scripted sequence of faults on one partition, each step waiting (bounded)
    on the observed state; subclasses write `run`."""

    name = ""

    def __init__(self, injector: FaultInjector, observer: Observer, topic: str,
                 partition: int = 0, elr: bool = True,
                 timings: ScenarioTimings | None = None,
                 stop: threading.Event | None = None,
                 log: Callable[[str], None] = print) -> None:
        self.injector = injector
        self.observer = observer
        self.topic = topic
        self.partition = partition
        self.elr = elr
        self.timings = timings or ScenarioTimings()
        self.stop_event = stop or threading.Event()
        self.log = log
        self.outcomes: list[StepOutcome] = []

    # -- observed state ----------------------------------------------------------

    def _state(self, states: Sequence[PartitionState]) -> PartitionState | None:
        for s in states:
            if s.topic == self.topic and s.partition == self.partition:
                return s
        return None

    def _wait(self, step: str, predicate: Callable[[PartitionState], bool],
              timeout_s: float | None = None) -> StepOutcome:
        def check(states: list[Any]) -> bool:
            s = self._state(states)
            return s is not None and predicate(s)

        sample = self.observer.wait_for(check, timeout_s or self.timings.step_timeout_s)
        state = self._state(sample if sample is not None else self.observer.latest())
        return self._finish(step, sample is not None, _summary(state))

    def _finish(self, step: str, reached: bool, observed: dict[str, Any],
                note: str = "") -> StepOutcome:
        """Keep and show how a step's wait ended."""
        outcome = StepOutcome(step, reached, observed)
        self.outcomes.append(outcome)
        self.log(f"{step}: {'reached' if reached else 'TIMED OUT'}{note} {observed}")
        return outcome

    def _broker_name(self, broker_id: int) -> str:
        return self.injector.cluster.broker_by_id(broker_id).spec.name

    def _sleep(self, seconds: float) -> None:
        self.stop_event.wait(seconds)

    def run(self) -> list[StepOutcome]:
        raise NotImplementedError

    def _roles(self) -> tuple[int, int, int]:
        """Wait for a full ISR; its leader L and followers A, B (ids), logged."""
        self._sleep(self.timings.warmup_s)
        start = self._wait("setup", lambda s: s.leader >= 0 and len(s.isr) >= 3)
        if not start.reached:
            raise RuntimeError(f"partition {self.topic}-{self.partition} never had a full "
                               f"ISR: {start.observed}")
        leader = start.observed["leader"]
        a_id, b_id = [b for b in start.observed["isr"] if b != leader][:2]
        self.log("roles: " + " ".join(f"{role}={self._broker_name(i)} ({i})" for role, i in
                                      (("L", leader), ("A", a_id), ("B", b_id))))
        return leader, a_id, b_id

    def _steps(self, steps: Sequence[tuple[str, Callable[[], object]]]) -> list[StepOutcome]:
        for _label, action in steps:
            if self.stop_event.is_set():
                break
            action()
        return self.outcomes


class UncleanLastReplica(ScriptedScenario):
    """Runs T0..T4 on one partition; every other partition goes along."""

    name = "unclean-last-replica"

    def run(self) -> list[StepOutcome]:
        leader, a_id, b_id = self._roles()
        l_name, a_name, b_name = (self._broker_name(i) for i in (leader, a_id, b_id))
        nodes = sorted(self.injector.cluster.nodes)

        steps: list[tuple[str, Callable[[], None]]] = [
            ("T0", lambda: self.injector.partition(grudges.isolate(a_name, nodes), step="T0")),
            ("T0-wait", lambda: self._wait(
                "T0", lambda s: sorted(s.isr) == sorted([leader, b_id]))),
            ("T1", lambda: self.injector.partition(
                grudges.isolate_all([a_name, b_name], nodes), step="T1")),
            ("T1-wait", lambda: self._wait(
                "T1", lambda s: list(s.isr) == [leader]
                and (not self.elr or list(s.elr or []) == [b_id]))),
            ("T1-hold", lambda: self._sleep(self.timings.hold_t1_s)),
            ("T2", lambda: self.injector.page_cache_loss(l_name, step="T2")),
            ("T2-wait", lambda: self._wait_controller("T2", lambda s: s.leader == -1)),
            ("T3", lambda: self.injector.heal(step="T3")),
            ("T3-wait", lambda: self._wait_unfenced("T3", [a_id, b_id])),
            ("T4", lambda: self.injector.start(l_name, step="T4")),
            ("T4-wait", lambda: self._wait(
                "T4", lambda s: s.leader == (b_id if self.elr else leader))),
        ]
        return self._steps(steps)

    def _wait_controller(self, step: str,
                         predicate: Callable[[PartitionState], bool]) -> StepOutcome:
        """Wait on the active controller's own metadata log.

        In T2 no broker has a fresh view (L is dead, A and B are cut off and
        answer from stale caches), so the state is read where KIP-966 keeps it.
        Each reading is recorded as an `observe` line with source "controller".
        """
        cluster = self.injector.cluster
        state = None
        started = time.monotonic()

        def reached() -> bool:
            nonlocal state
            try:
                views = cluster.controller_view(self.topic)
            except Exception as err:  # noqa: BLE001 - the controller may be busy; ask again
                self.log(f"{step}: controller view unavailable: {err}")
                views = []
            for view in views:
                self.injector.recorder.record(source="controller", **view.as_observation())
            state = self._state(views)
            return state is not None and predicate(state)

        wait_until(reached, self.timings.step_timeout_s, self.timings.controller_poll_s,
                   self.stop_event)
        observed = _summary(state)
        if state is not None:
            observed.update(last_known_elr=list(state.last_known_elr or []), source="controller")
        return self._finish(step, state is not None and predicate(state), observed,
                            f" after {time.monotonic() - started:.0f} s")

    def _wait_unfenced(self, step: str, broker_ids: list[int]) -> StepOutcome:
        """Healed brokers are back when the controller reports them registered."""
        seen: set[int] = set()

        def back() -> bool:
            nonlocal seen
            seen = self.injector.cluster.unfenced_brokers()
            return set(broker_ids) <= seen

        wait_until(back, self.timings.step_timeout_s, self.timings.unfenced_poll_s,
                   self.stop_event)
        return self._finish(step, set(broker_ids) <= seen, {"unfenced": sorted(seen)})
