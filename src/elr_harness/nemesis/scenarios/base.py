"""What every scripted scenario is made of (nemesis/scenarios/<name>.py holds one each).

A scenario is a scripted sequence of faults on one partition, each step waiting
(bounded) on the observed partition state rather than on a sleep; a wait that
runs out is recorded and the scenario goes on: the checker judges the history,
not the scenario's expectations. Its package (ScenarioPackage) says what the
run needs for it: the layer under the brokers, the cluster settings it changes,
the topologies it refuses, and its line of `harness run --help`.

Its steps are data where data can say them: the schedule file shipped in
nemesis/scenario_files, played as `--schedule` plays a user's (nemesis.schedule.played).
A scenario whose steps measure what no step can ask for yet keeps them in Python
(a ScriptedScenario subclass).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ClusterConfig, ScenarioTimings, TopicConfig
from elr_harness.core.errors import HarnessError
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.needs import Layer, Setting
from elr_harness.nemesis.watch import Observer, partition_in


@dataclass
class StepOutcome:
    step: str
    reached: bool
    observed: dict[str, Any]


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

    def _steps(self, steps: Sequence[tuple[str, Callable[[], object]]]) -> list[StepOutcome]:
        for _label, action in steps:
            if self.stop_event.is_set():
                break
            action()
        return self.outcomes

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


def from_file(name: str, help: str, in_default_soak: bool = False) -> ScenarioPackage:
    """A scenario that is its shipped file alone (nemesis/scenario_files/<name>.toml):
    the layers its kinds need and the settings its [needs] asks, as `--schedule NAME`
    takes them (Kafka's timeouts shortened unless it says short_kafka_timeouts =
    false); the run refuses what its [needs] refuses (run.spec)."""
    from elr_harness.nemesis.faults import PACKAGES
    from elr_harness.nemesis.schedule.file import parse_schedule, shipped_schedules

    schedule = parse_schedule(shipped_schedules()[name].read_text(encoding="utf-8"), name)
    needs = schedule.needs
    short = SHORT_KAFKA_TIMEOUTS if needs.short_kafka_timeouts is not False else ()
    kinds = tuple(s for k in schedule.kinds for s in PACKAGES[k].cluster_settings)
    return ScenarioPackage(
        name, help, file=name, in_default_soak=in_default_soak,
        layers=frozenset().union(*(PACKAGES[k].layers for k in schedule.kinds)),
        cluster_settings=(*short, *kinds, *needs.settings()))
