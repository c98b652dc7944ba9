"""Playing a schedule file (nemesis.schedule.file) on a cluster: each step's target
chosen from the observed state of the schedule's partition, its fault made by
the kind's own `act`, its wait and its hold; and what was played, step by step
(the node each target resolved to, whether each wait saw its condition and, if
not, what it saw instead) into the run's nemesis_result, so a run's schedule can
be played again.

A wait accepts only observations taken after the schedule last acted (its own
step, or the last step that made or ended a fault): while every broker that hears
the controllers is away the observer's latest sample stays the one from before,
and a condition read there would be stale. A wait that runs out is
recorded and the schedule goes on, as the scripted scenarios do: the checker
judges the history, not the schedule's expectations. A wait that reads the
controller (`read = "controller"`) asks the active controller's metadata log and
records each reading as an `observe` line, so the checker sees what it saw; a
wait for `X registered` reads X's own log, polled fast, so the next step can
act on a broker the controller still holds fenced. A step that watches (`watch`)
reads through its hold, where `read` says, and records whether and when its
condition was seen. Each step records the partition as its wait or watch last
read it (`observed`). A step whose kind cannot act now (NotNow) is recorded as
skipped; a fault that fails ends the schedule.

With transactions the run names its first transactional producer's
transactional.id: C is bound to its coordinator at the start, the role
`coordinator` is that coordinator when a step acts, and `partition =
"coordinator"` reads its `__transaction_state` partition (nemesis.coordinator);
the nodes are chosen in nemesis.schedule.played_targets.

A scripted scenario (`--nemesis unclean-last-replica`) is its shipped file played
here, its lines carrying the bare step names (a user's file's carry
`schedule:<step>`); `outcomes` gives its steps as the run's nemesis_result has them.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from elr_harness.cluster import kraft
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import GuidedConfig, ScenarioTimings
from elr_harness.core.errors import BadInput
from elr_harness.core.wait import wait_until
from elr_harness.nemesis.coordinator import Coordinator
from elr_harness.nemesis.faults import PACKAGES
from elr_harness.nemesis.faults.base import CLUSTER_SCOPE, NotNow, Undo, Use, settings_of
from elr_harness.nemesis.faults.base import Capability as C
from elr_harness.nemesis.schedule.conditions import described
from elr_harness.nemesis.schedule.file import ScheduleFile, check_nodes
from elr_harness.nemesis.schedule.played_targets import StepTargets
from elr_harness.nemesis.schedule.step import (
    CONTROLLER,
    COORDINATOR_NAME,
    LEADER_NAME,
    Step,
)
from elr_harness.nemesis.targets import Role, Topology, all_isr_full
from elr_harness.nemesis.watch import Observer, partition_in, read_controller, wait_for_partition


class Played(StepTargets):
    """The schedule (nemesis.schedule.compose.Schedule) of `harness run --schedule FILE`."""

    def __init__(self, schedule: ScheduleFile, injector: Any, observer: Observer,
                 topic: str, seed: int, replication_factor: int, min_insync_replicas: int,
                 faults: dict[str, Any] | None = None, log: Callable[[str], None] = print,
                 topology: Topology | None = None,
                 active_controller: Callable[[], int | None] | None = None,
                 start_within_s: float = GuidedConfig.recovery_s, partition: int = 0,
                 timings: ScenarioTimings | None = None,
                 scenario: str | None = None, transactional_id: str | None = None) -> None:
        self.schedule = schedule
        self.injector = injector
        self.observer = observer
        self.topic, self.partition = topic, partition
        #: the schedule's own partition; a step's `partition` reads another
        self.home = (topic, partition)
        self.rng = random.Random(seed)
        self.replication_factor = replication_factor
        self.min_isr = min_insync_replicas
        self.faults = dict(faults or {})
        self.log = log
        cluster = getattr(injector, "cluster", None)
        self.topology = topology or Topology.of(cluster.nodes.values())
        self.active_controller = active_controller or cluster.quorum_leader
        #: the coordinator of the run's first transactional producer (role `coordinator`)
        self.coordinator = Coordinator(transactional_id, getattr(
            cluster, "transaction_coordinator", None))
        self.start_within_s = start_within_s
        self.timings = timings or ScenarioTimings()
        self.stop_event = threading.Event()
        #: name -> node name (L, C, and every step's `as`)
        self.names: dict[str, str] = {}
        #: L and C -> the partition each is the start's leader of
        self.start_of: dict[str, tuple[str, int]] = {LEADER_NAME: self.home}
        #: a node the file names -> the node in its place here ([placement])
        self.renamed: dict[str, str] = {}
        #: each fault a step made and no step ended yet: its Use (so the lines of its
        #: end name the step that ends it) and its undo
        self.undos: dict[str, tuple[Use, Undo]] = {}
        #: the scripted scenario whose file this is (None: a user's --schedule)
        self.scenario = scenario
        #: what each line's detail.step says before a step's name
        self.step_prefix = "" if scenario else "schedule:"
        self.played: list[dict[str, Any]] = []
        self.started = time.monotonic()
        #: the observer's latest sample before the schedule last acted: a wait or a
        #: watch accepts only samples taken after it
        self.acted_after: Sequence[PartitionState] = ()

    def resources(self) -> set[str]:
        return {p.resource for p in self.schedule.packages}

    # -- the schedule --------------------------------------------------------------

    def run(self, deadline: float, stop: threading.Event, result: dict[str, Any]) -> None:
        self.stop_event, self.started = stop, time.monotonic()
        record: dict[str, Any] = {"file": self.schedule.path, "partition":
                                  f"{self.topic}-{self.partition}", "steps": self.played}
        result["schedule"] = record
        try:
            check_nodes(self.schedule, set(self.topology.node_names))
        except BadInput as err:  # a nodes file's names, known only now
            record["error"] = str(err)
            self.log(record["error"])
            return
        try:
            start = self._state_when(lambda s: s.leader >= 0 and all_isr_full(
                [s], self.replication_factor), self.start_within_s)
            if start is None:
                record["skipped"] = "no full ISR with a leader to start from"
                return
            self.names[LEADER_NAME] = self._name(start.leader)
            if self.coordinator.transactional_id is not None:
                try:  # C: the coordinator at the start
                    latest = self.observer.latest()
                    self.names[COORDINATOR_NAME] = self._name(self.coordinator.broker(latest))
                    self.start_of[COORDINATOR_NAME] = self.coordinator.partition(latest)
                except NotNow as err:
                    record["no_coordinator"] = str(err)
            record["names"] = self.names
            if self.schedule.placement is not None:
                self.renamed = self._renaming(self.schedule.placement, start)
                record["renamed"] = self.renamed
            for step in self.schedule.steps:
                if stop.is_set() or time.monotonic() >= deadline:
                    record["stopped_before"] = step.name
                    break
                if not self.play(step):
                    break
        finally:
            result.setdefault("injected", []).extend(
                s["fault"] for s in self.played if s.get("fault") and not s.get("skipped"))
            if self.scenario:
                result["steps"] = self.outcomes()

    def play(self, step: Step) -> bool:
        """One step; False when its fault failed (the schedule ends there)."""
        done: dict[str, Any] = {"step": step.name, "at_s": round(time.monotonic()
                                                                 - self.started, 1)}
        self.played.append(done)
        try:
            self.topic, self.partition = self._where(step)
        except NotNow as err:
            done["skipped"] = str(err)
            self.log(f"{step.name}: skipped: {err}")
            return True
        if step.fault is not None or step.end is not None:
            self.acted_after = self.observer.latest()
        before = self._mine(self.acted_after)
        registering = step.until.registration if step.until else None
        # counted before the step acts (a restart registers at once); a name the step
        # itself binds is counted once it is bound
        registered_before = self._registrations(registering) \
            if registering and self._node_of(registering) else None
        try:
            if step.end is not None:
                done["end"] = step.end
                made = self.undos.pop(step.end, None)
                if made is None:
                    raise NotNow(f"step {step.end} made no fault to end")
                use, undo = made
                use.end_step = f"{self.step_prefix}{step.name}"
                undo()
            elif step.fault is not None:
                done["fault"] = step.fault
                self._act(step, done)
        except NotNow as err:
            done["skipped"] = str(err)
            self.log(f"{step.name}: skipped: {err}")
            return True
        except Exception as err:  # noqa: BLE001 - recorded; the run heals and checks
            done["error"] = f"{type(err).__name__}: {str(err)[:300]}"
            self.log(f"{step.name}: {done['error']}")
            return False
        if step.until is not None:
            done["until"] = step.until.text
            if registering:
                self._wait_registered(step, registering, registered_before, done)
            elif step.read == CONTROLLER:
                self._wait_controller(step, done)
            else:
                seen = self._state_when(lambda s: step.until.holds(
                    s, self._broker, self.replication_factor, self.min_isr), step.within_s,
                    fresh_after=before)
                done["seen"] = seen is not None
                latest = self._mine(self.observer.latest())
                if seen is None:
                    done["saw"] = described(latest, self._ids())
                self._observed(done, seen or (latest if latest is not before else None))
            self.log(f"{step.name}: {step.until.text}: "
                     f"{'seen' if done['seen'] else 'not seen: ' + done['saw']}")
        if step.hold_s:
            done["hold_s"] = step.hold_s
            if step.watch is not None:
                self._watch(step, done)
            else:
                self.stop_event.wait(step.hold_s)
        return True

    def _watch(self, step: Step, done: dict[str, Any]) -> None:
        """Through the hold, whether the partition ever shows `watch` (in samples taken
        after the schedule last acted, or in the controller's log): when, and what it
        showed."""
        watch = step.watch
        assert watch is not None
        started = time.monotonic()
        before = self._mine(self.acted_after)
        last: list[PartitionState | None] = [None]

        def shows(state: PartitionState | None) -> bool:
            last[0] = state or last[0]
            return state is not None and watch.holds(
                state, self._broker, self.replication_factor, self.min_isr)

        if step.read == CONTROLLER:
            done["read"] = CONTROLLER
            seen = wait_until(lambda: shows(read_controller(
                self.injector, self.topic, self.partition, self.log, step.name)),
                step.hold_s, self.timings.controller_poll_s, self.stop_event)
        else:
            seen = self._state_when(shows, step.hold_s, fresh_after=before) is not None
            latest = self._mine(self.observer.latest())
            if not seen and latest is not before:
                last[0] = latest
        done["watch"] = watch.text
        done["watched"] = {"seen": seen, "after_s": round(time.monotonic() - started, 1),
                           "read": last[0] is not None}
        self._observed(done, last[0])
        self.log(f"{step.name}: watched for {watch.text}: "
                 f"{'SEEN' if seen else 'not seen'} after {done['watched']['after_s']} s")
        self.stop_event.wait(max(0.0, started + step.hold_s - time.monotonic()))

    def _observed(self, done: dict[str, Any], state: PartitionState | None) -> None:
        """Keep in `done` the partition as the step last read it (nothing when it read
        none after it began)."""
        if state is None:
            done.pop("observed", None)
            return
        observed: dict[str, Any] = {"leader": state.leader, "isr": list(state.isr)}
        for key in ("elr", "last_known_elr", "fenced"):
            value = getattr(state, key)
            if value is not None:
                observed[key] = list(value)
        done["observed"] = observed

    def outcomes(self) -> list[dict[str, Any]]:
        """Each step played as a scripted scenario's outcome (nemesis_result.steps):
        its name, whether it did what it asked (made or ended its fault, saw what it
        waited for, read the partition through its watch) and what it observed."""
        out = []
        for done in self.played:
            reached = "error" not in done and "skipped" not in done
            if "until" in done:
                reached = reached and bool(done.get("seen"))
            outcome = {"step": done["step"], "reached": reached,
                       "observed": dict(done.get("observed") or {})}
            if "watch" in done:
                outcome["reached"] = reached and bool(done["watched"]["read"])
                outcome["watched"] = {"for": done["watch"], **done["watched"]}
            out.append(outcome)
        return out

    def _wait_registered(self, step: Step, name: str, before: int | None,
                         done: dict[str, Any]) -> None:
        """Until `name`'s log has a registration more than `before`."""
        counted = self._registrations(name) if before is None else before
        seen = wait_until(lambda: self._registrations(name) > counted, step.within_s,
                          self.timings.registration_poll_s, self.stop_event)
        done["seen"] = seen
        if not seen:
            done["saw"] = f"{name} not registered again"

    def _node_of(self, name: str) -> str | None:
        """The node a bound name or a node name is (None: not bound yet)."""
        node = self.names.get(name) or self._moved(name)
        return node if node in self.topology.node_names else None

    def _registrations(self, name: str) -> int:
        node = self._node_of(name)
        return kraft.registrations(self.injector.cluster.nodes[node]) if node else 0

    def _wait_controller(self, step: Step, done: dict[str, Any]) -> None:
        """Until the active controller's metadata log shows the condition; each
        reading is recorded as an `observe` line (source controller)."""
        latest: list[PartitionState | None] = [None]

        def holds() -> bool:
            latest[0] = read_controller(self.injector, self.topic, self.partition,
                                        self.log, step.name) or latest[0]
            return latest[0] is not None and step.until.holds(
                latest[0], self._broker, self.replication_factor, self.min_isr)

        done["seen"] = wait_until(holds, step.within_s, self.timings.controller_poll_s,
                                  self.stop_event)
        done["read"] = CONTROLLER
        if not done["seen"]:
            done["saw"] = described(latest[0], self._ids())
        self._observed(done, latest[0])

    def _act(self, step: Step, done: dict[str, Any]) -> None:
        package = PACKAGES[str(step.fault)]
        self.substituted = None
        target = self._target(step)
        if target is not None:
            done["target"] = target
        if self.substituted:
            done["substituted"] = self.substituted
            self.log(f"{step.name}: {self.substituted}")
        if step.bind and target is not None:
            self.names[step.bind] = target
            done["as"] = step.bind
        settings = step.settings if step.settings is not None else \
            settings_of(self.faults, package)
        notes: dict[str, Any] = {}
        use = Use(self.injector, self.topology, self.rng, settings, self.stop_event,
                  f"{self.step_prefix}{step.name}", {"schedule": self.schedule.name},
                  self.replication_factor, notes)
        self.undos[step.name] = (use, package.act(use, target,
                                                  **self._options(step, package)))
        if notes:
            done["notes"] = {k: str(v) for k, v in notes.items()}

    def _options(self, step: Step, package: Any) -> dict[str, Any]:
        """What a config or assignment kind's `act` takes besides its target (by its
        capabilities, as a guided round's recipe asks them)."""
        latest = list(self.observer.latest())
        if package.can(C.CHANGES_ELR_FEATURE):
            return {"states": latest, "to": step.to}
        if package.can(C.CHANGES_MIN_ISR):
            return {"topic": None if step.scope == CLUSTER_SCOPE else self.topic,
                    "choose": lambda _current: step.to, "fallback": self.min_isr}
        if step.cut is not None:  # a kind that TAKES_A_CUT
            return {"grudge": {self._moved(node): [self._moved(p) for p in peers]
                               for node, peers in step.cut.items()}}
        if package.can(C.REASSIGNS):
            mine = self._mine(latest)
            return {"states": [mine] if mine else [], "role": Role(str(step.target))}
        if package.can(C.FAILS_A_LOG_DIR):
            # the dir that holds the partition, and unsynced data dropped only while
            # every ISR is full (the fault budget, as a mix keeps it)
            return {"may_drop": all_isr_full(latest, self.replication_factor),
                    "holding": f"{self.topic}-{self.partition}"}
        return {}

    # -- the observed partition ----------------------------------------------------

    def _mine(self, states: Sequence[PartitionState]) -> PartitionState | None:
        return partition_in(states, self.topic, self.partition)

    def _state_when(self, predicate: Callable[[PartitionState], bool], timeout_s: float,
                    fresh_after: PartitionState | None = None) -> PartitionState | None:
        return wait_for_partition(self.observer, self.topic, self.partition, predicate,
                                  timeout_s, fresh_after)
