"""What every scripted scenario is made of (nemesis/scenarios/<name>.py holds one each).

A scenario is a scripted sequence of faults on one partition, each step waiting
(bounded) on the observed partition state rather than on a sleep; a wait that
runs out is recorded and the scenario goes on: the checker judges the history,
not the scenario's expectations. Its package (ScenarioPackage) says what the
run needs for it: the layer under the brokers, the cluster settings it changes,
the topologies it refuses, and its line of `harness run --help`.

Its steps are data where data can say them: the schedule file shipped in
nemesis/scenario_files, played as `--schedule` plays a user's (nemesis.played).
A scenario whose steps measure what no step can ask for yet keeps them in Python
(a ScriptedScenario subclass).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ClusterConfig, ScenarioTimings, TopicConfig
from elr_harness.core.errors import HarnessError
from elr_harness.core.wait import wait_until
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.needs import Layer, Setting


class Observer(Protocol):
    def latest(self) -> Sequence[PartitionState]: ...
    def wait_for(self, predicate: Callable[[list[Any]], bool],
                 timeout_s: float) -> list[Any] | None: ...


def partition_in(states: Sequence[PartitionState], topic: str,
                 partition: int) -> PartitionState | None:
    """One partition's state in an observed sample (None: not in it)."""
    return next((s for s in states if (s.topic, s.partition) == (topic, partition)), None)


def read_controller(injector: FaultInjector, topic: str, partition: int,
                    log: Callable[[str], None], step: str) -> PartitionState | None:
    """The partition in the active controller's metadata log now, every partition of
    `topic` read recorded as an `observe` line with source "controller", so the
    checker sees what the reader saw (None: the controller could not say)."""
    try:
        views = injector.cluster.controller_view(topic)
    except Exception as err:  # noqa: BLE001 - the controller may be busy; ask again
        log(f"{step}: controller view unavailable: {err}")
        views = []
    for view in views:
        injector.recorder.record(source="controller", **view.as_observation())
    return partition_in(views, topic, partition)


def wait_for_partition(observer: Observer, topic: str, partition: int,
                       predicate: Callable[[PartitionState], bool], timeout_s: float,
                       fresh_after: PartitionState | None = None) -> PartitionState | None:
    """The partition in the first sample where `predicate` holds (a sample other than
    `fresh_after`, when given: while every broker that hears the controllers is away
    the latest sample stays the one from before), within timeout_s; else None."""
    def check(states: list[Any]) -> bool:
        s = partition_in(states, topic, partition)
        return s is not None and s is not fresh_after and predicate(s)

    sample = observer.wait_for(check, timeout_s)
    return None if sample is None else partition_in(sample, topic, partition)


@dataclass
class StepOutcome:
    step: str
    reached: bool
    observed: dict[str, Any]


@dataclass(frozen=True)
class Roles:
    """L, A and B as the observed state named them: broker ids and node names."""

    leader: int
    a: int
    b: int
    l_name: str
    a_name: str
    b_name: str


def summary(state: PartitionState | None) -> dict[str, Any]:
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
                 log: Callable[[str], None] = print, seed: int = 0) -> None:
        self.injector = injector
        self.observer = observer
        self.topic = topic
        self.partition = partition
        self.elr = elr
        self.timings = timings or ScenarioTimings()
        self.stop_event = stop or threading.Event()
        self.log = log
        #: The run's --seed: a scenario whose path forks may pick its order by it.
        self.seed = seed
        self.outcomes: list[StepOutcome] = []

    # -- observed state ----------------------------------------------------------

    def _state(self, states: Sequence[PartitionState]) -> PartitionState | None:
        return partition_in(states, self.topic, self.partition)

    def _wait(self, step: str, predicate: Callable[[PartitionState], bool],
              timeout_s: float | None = None,
              describe: Callable[[PartitionState | None], Any] | None = None) -> StepOutcome:
        """Wait for the partition's state to satisfy predicate; the step's outcome
        records it as `describe` words it (summary's few fields by default)."""
        def check(states: list[Any]) -> bool:
            s = self._state(states)
            return s is not None and predicate(s)

        sample = self.observer.wait_for(check, timeout_s or self.timings.step_timeout_s)
        state = self._state(sample if sample is not None else self.observer.latest())
        return self._finish(step, sample is not None, (describe or summary)(state))

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
        """Wait for a full ISR and the warm-up's records committed; its leader L and
        followers A, B (ids), logged. Too few records in time is noted and the
        scenario goes on; no full ISR ends it."""
        start = self._wait("setup", lambda s: s.leader >= 0 and len(s.isr) >= 3 and (
            s.high_watermark or 0) >= self.timings.warmup_high_watermark)
        if start.observed.get("leader", -1) < 0 or len(start.observed.get("isr", [])) < 3:
            raise RuntimeError(f"partition {self.topic}-{self.partition} never had a full "
                               f"ISR: {start.observed}")
        leader = start.observed["leader"]
        a_id, b_id = [b for b in start.observed["isr"] if b != leader][:2]
        self.log("roles: " + " ".join(f"{role}={self._broker_name(i)} ({i})" for role, i in
                                      (("L", leader), ("A", a_id), ("B", b_id))))
        return leader, a_id, b_id

    def _named_roles(self) -> Roles:
        """L, A and B from the observed state (a full ISR), with their node names."""
        leader, a_id, b_id = self._roles()
        return Roles(leader, a_id, b_id, *(self._broker_name(i) for i in (leader, a_id, b_id)))

    def _steps(self, steps: Sequence[tuple[str, Callable[[], object]]]) -> list[StepOutcome]:
        for _label, action in steps:
            if self.stop_event.is_set():
                break
            action()
        return self.outcomes

    def _wait_controller(self, step: str,
                         predicate: Callable[[PartitionState], bool]) -> StepOutcome:
        """Wait on the active controller's own metadata log (where KIP-966 keeps the
        state while no broker has a fresh view); each reading is recorded as an
        `observe` line with source "controller"."""
        state = None
        started = time.monotonic()

        def reached() -> bool:
            nonlocal state
            state = self._read_controller(step)
            return state is not None and predicate(state)

        wait_until(reached, self.timings.step_timeout_s, self.timings.controller_poll_s,
                   self.stop_event)
        observed = summary(state)
        if state is not None:
            observed.update(last_known_elr=list(state.last_known_elr or []), source="controller")
        return self._finish(step, state is not None and predicate(state), observed,
                            f" after {time.monotonic() - started:.0f} s")

    def _read_controller(self, step: str) -> PartitionState | None:
        """The partition in the active controller's metadata log now (read_controller:
        each reading an `observe` line, source controller)."""
        return read_controller(self.injector, self.topic, self.partition, self.log, step)

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


#: The Kafka timeouts a scenario that waits them out shortens (ScenarioTimings says
#: why and how far), unless the user's --config gives [cluster.timings].
SHORT_KAFKA_TIMEOUTS = tuple(
    Setting(f"cluster.timings.{name}", lambda run, name=name: getattr(run.scenario, name),
            unless="cluster.timings")
    for name in ("replica_lag_time_max_ms", "broker_session_timeout_ms",
                 "broker_heartbeat_interval_ms"))


@dataclass(frozen=True)
class ScenarioPackage:
    """One scripted scenario as `--nemesis` names it, and what the run needs for it."""

    #: Its `--nemesis` name.
    name: str
    #: Its line of `harness run --help`.
    help: str
    #: Its steps as data: the stem of its file in nemesis/scenario_files.
    file: str | None = None
    #: Or its steps in Python, where they measure what no step can ask for yet.
    scenario: type[ScriptedScenario] | None = None
    #: Storage layers it needs under the brokers.
    layers: frozenset[Layer] = frozenset()
    #: Config values it needs unless the user chose them.
    cluster_settings: tuple[Setting, ...] = ()
    #: Refuses (BadInput) a topology it cannot use, beyond every scenario's three
    #: replicas; before anything starts.
    check: Callable[[ClusterConfig, Sequence[TopicConfig]], None] | None = None
    #: Whether the soak's default plan runs it.
    in_default_soak: bool = False

    def __post_init__(self) -> None:
        if (self.file is None) == (self.scenario is None):
            raise ValueError(f"scenario {self.name}: its steps are a file or Python, one")

    def refuse(self, cluster: ClusterConfig, topics: Sequence[TopicConfig]) -> None:
        """HarnessError when the run's topology cannot hold the scenario's steps."""
        if cluster.brokers < 3 or any(t.replication_factor < 3 for t in topics):
            raise HarnessError(f"{self.name} needs 3 brokers and replication factor 3 "
                               "(a leader and two followers)")
        if self.check is not None:
            self.check(cluster, topics)
