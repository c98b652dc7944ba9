"""The recipe of each KIP-966 state a guided round (nemesis.guided.search) aims at, and
the fault budget every round keeps.

A recipe plays on one partition, its leader L and its followers F1, F2:

- F1 and F2 are taken away one after the other, each in a way drawn from the
  kinds that take a broker out of the ISR (by capability: partition, isolate
  from the controllers, pause, stop, kill, slow network, ...), so the ISR
  shrinks below min ISR and, ELR on, F2 joins the ELR;
- then, while F2 stays away (the faults overlap), the state's own step: the
  leader L shut down (kill, a page-cache loss, stop, or a bounce past its
  session timeout; then F1 comes back, so that a broker hearing the controllers
  answers the observer), an ELR member brought back, L restarted uncleanly while
  F2 is still fenced, a min ISR or ELR feature change, a controller failover, a
  reassignment, a disk fault;
- each step waits (bounded) for the observed state it leads to, as the scripted
  scenarios do, and the round holds the state reached for a drawn while;
- a wait that does not see its state does not end the round: a state a correct
  Kafka reaches and this one never does is often the bug itself, so the round
  plays its remaining steps all the same (the unclean shutdown, the restart, the
  change) and records what the partition looked like instead (Round.saw).

The fault budget: a round drops unflushed data (a page-cache loss, or a disk
fault that drops) on one broker at most, and only when it started from a full
ISR of every observed partition, the topics' min ISR is at least 2 and the ELR
feature is on; and a round that drops data makes at most min ISR - 1 unclean
shutdowns in all, kills included. KIP-966 promises "no data loss ... when we
only have min ISR - 1 unclean shutdowns": a killed broker keeps its page cache,
but the controller cannot tell, takes it out of the ELR when it registers, and
with the ELR empty elects the last known leader, which may be the one that lost
its data (a soak's guided run, F2 killed then L's power lost, lost 66 acks=all
writes that way, as designed). A round never lowers min ISR and drops data. So
a run stays within KIP-966's promise, and any acks=all loss it causes is a
Kafka bug.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import KafkaTimings
from elr_harness.core.history import COVERAGE_STATES
from elr_harness.nemesis.faults import PACKAGES, FaultPackage
from elr_harness.nemesis.faults.base import Capability as C
from elr_harness.nemesis.faults.base import Undo, Use, settings_of
from elr_harness.nemesis.guided.round import (
    AWAY,
    CLEAN_SHUTDOWN,
    CLEANLY_FENCED_AWAY,
    DOWN,
    DOWN_KEEPING_DATA,
    FAILOVER,
    FENCED_AWAY,
    RUNNING_AWAY,
    UNCLEAN_DOWN,
    UNCLEAN_KEEPING_DATA,
    Round,
    Schedule,
    one_with,
)
from elr_harness.nemesis.schedule.conditions import described, parse_condition
from elr_harness.nemesis.targets import Role, choose_target
from elr_harness.nemesis.watch import partition_in, wait_for_partition


class Recipe:
    """One round's faults and waits, on one partition and its roles."""

    def __init__(self, guided: Schedule, done: Round) -> None:
        self.g = guided
        self.done = done
        self.injector = guided.injector
        self.rng = guided.rng
        self.topic, self.partition = self.rng.choice(guided.partitions)
        self.detail = done.detail
        self.where, self.label = f"{self.topic}-{self.partition}", f"r{done.number}"

    # -- the recipe of each state ------------------------------------------------

    def play(self) -> None:
        start = self._state_when(lambda s: s.leader >= 0 and
                                 len(s.isr) >= self.g.replication_factor,
                                 self.g.config.recovery_s)
        if start is None or len(start.isr) < 3:
            self.done.skipped = "no full ISR of three replicas to start from"
            return
        self.may_drop = self.g.may_drop_data()
        #: the round's unclean shutdowns of brokers so far (kills, page-cache losses)
        self.unclean = 0
        followers = [b for b in start.isr if b != start.leader]
        self.rng.shuffle(followers)
        self.leader, self.f1, self.f2 = start.leader, followers[0], followers[1]
        self.done.partition = f"{self.topic}-{self.partition}"
        self.done.roles = {"L": self._name(self.leader), "F1": self._name(self.f1),
                           "F2": self._name(self.f2)}
        self._recipe()(self)

    def _recipe(self) -> Callable[[Any], None]:
        """The round's own steps (a subclass of more states looks in its own table)."""
        return RECIPES[self.done.aim]

    def _isr_below_min_isr(self) -> None:
        self._below(aim_seen=True)

    def _elr_not_empty(self) -> None:
        self._elr_held()

    def _elr_held(self) -> None:
        """The ISR below min ISR and, ELR on, the ELR not empty (held when seen)."""
        self._below()
        self._reach("ELR not empty", "elr not empty")

    # A leaderless spell needs F2, the ELR member, fenced: a slowed F2 stays registered
    # and unfenced, and the controller elects it from the ELR the moment L goes down
    # (every guided run of the first default-plan score that drew a slow F2 missed
    # these states).

    def _leaderless_with_elr(self) -> None:
        self._below(fenced=True)
        self._leader_down(DOWN)
        self._reach("no leader, ELR not empty", "no leader and elr not empty")

    def _last_known_elr_not_empty(self) -> None:
        self._below(fenced=True)
        self._leader_down(DOWN)
        self._reach("LastKnownELR not empty", "last-known-elr not empty")

    def _elected_from_elr(self) -> None:
        self._below(f2_ways=CLEANLY_FENCED_AWAY)
        self._leader_down(DOWN)
        self._wait("no leader, F2 in the ELR", f"no leader and {self._name(self.f2)} in elr")
        self.undo_f2()
        self._reach("F2 elected from the ELR", f"{self._name(self.f2)} leads")

    def _unclean_shutdown_of_elr_member(self) -> None:
        if self.rng.random() < 0.5:
            # the ELR member F2 itself, while it is away (and still running)
            self._below(f2_ways=RUNNING_AWAY)
            self._reach("F2 in the ELR", f"{self._name(self.f2)} in elr", hold=False)
            self._down("F2", self.f2, UNCLEAN_DOWN)
            self._hold()
        else:
            self._below(fenced=True)
            self._leader_down(UNCLEAN_DOWN)
            self._reach("L in the ELR", f"{self._name(self.leader)} in elr")

    def _leaderless_with_unclean_replica_unfenced(self) -> None:
        """L shut down uncleanly and restarted while F1 and F2 are both away and
        fenced: KIP-966 must then refuse to elect L. Both followers go away in ways
        that keep them fenced, and stay away until L is back and unfenced: a
        broker that stays registered (a slowed one) is elected from the ISR or the
        ELR as soon as L goes down, and the state is never reached."""
        self._below(fenced=True, f1_ways=FENCED_AWAY)
        before = self._mine(self.g.observer.latest())
        self._down("L", self.leader, UNCLEAN_DOWN)
        # nobody that hears the controllers answers the observer until L is back:
        # wait out L's session (within a wait's bound), so the controller has fenced
        # it before it registers again
        session_s = min(self._session_s() + self.g.config.session_margin_s,
                        self.g.config.wait_s)
        self.g.stop_event.wait(session_s)
        self.g.drawn.hold(session_s)
        self.injector.start(self._name(self.leader), step=self._step("L restarts"),
                            detail=self.detail)
        self.g.drawn.end(self.label, "L down", self.where)
        names = {role: self._name(b) for role, b in
                 (("L", self.leader), ("F1", self.f1), ("F2", self.f2))}
        self._reach("L unfenced, no leader, F1 and F2 fenced",
                    f"no leader and {names['L']} unfenced and {names['F1']} fenced and "
                    f"{names['F2']} fenced", fresh_after=before)

    def _min_isr_change_with_elr(self) -> None:
        """KIP-966: "if the new min ISR <= current ISR, the ELR will be removed": with
        the ELR held, a new min ISR of at most the ISR's size (below the current min
        ISR, which the ISR is under), the change a controller that keeps the ELR
        would get wrong. A raise could show nothing."""
        self._elr_held()
        state = self._mine(self.g.observer.latest())
        isr_size = len(state.isr) if state is not None else 0

        chosen: list[int] = []

        def choose(current: int) -> int:
            choices = [m for m in range(1, isr_size + 1) if m != current]
            chosen.append(self.rng.choice(choices or [1]))
            return chosen[-1]

        package = one_with(C.CHANGES_MIN_ISR)
        self.done.ways["topic"] = package.name
        self._act(package, "min ISR", None, topic=self.topic, choose=choose,
                  fallback=self.g.min_insync_replicas, chosen=chosen)
        self._hold()

    def _controller_failover_with_elr(self) -> None:
        self._elr_held()
        controller = choose_target(Role.ACTIVE_CONTROLLER, [], self.g.topology, self.rng,
                                   self.g.active_controller())
        package = self.rng.choice(FAILOVER)
        self.done.ways["controller"] = package.name
        self._act(package, "failover", controller)
        self._hold()

    def _reassign_while_below_min_isr(self) -> None:
        self._below()
        state = self._state_when(lambda s: len(s.isr) < self.g.min_insync_replicas
                                 and s.replicas is not None, self.g.config.wait_s)
        self.g.drawn.wait(self.label, "replicas known", self.where, "isr below min-isr",
                          self.g.config.wait_s, state is not None)
        if state is None:  # reassigned all the same, from what the partition shows
            state = self._mine(self.g.observer.latest())
            self.done.saw["ISR below min ISR, replicas known"] = described(state)
            if state is None or state.replicas is None:
                self.done.skipped = "no replicas of the partition observed to reassign"
                return
        reached = len(state.isr) < self.g.min_insync_replicas
        package = one_with(C.REASSIGNS)
        self.done.ways["replicas"] = package.name
        self._act(package, "replicas", None, states=[state], role=Role.ELR)
        self.done.reached = reached  # judged at the fault: the ISR was below min ISR
        self._hold()

    def _disk_fault_of_isr_or_elr_member(self) -> None:
        self._below()
        self._reach("ISR below min ISR, L in it",
                    f"isr below min-isr and {self._name(self.leader)} in isr")
        package = one_with(C.FAILS_A_LOG_DIR)
        may_drop = self.rng.random() < 0.5 and self._unclean_allowed(drops=True)
        self.done.ways["L"] = package.name
        self._act(package, "disk", self._name(self.leader), may_drop=may_drop)
        self._hold()

    def _elr_feature_change_with_elr(self) -> None:
        self._elr_held()
        package = one_with(C.CHANGES_ELR_FEATURE)
        self._act(package, "feature", None, states=self.g.observer.latest(), to=0)
        self.done.ways["cluster"] = package.name
        self._hold()

    def _elr_feature_change_while_leaderless(self) -> None:
        """KIP-966's downgrade path (#53): the ELR feature turned off while the
        partition has no leader (its LastKnownELR set); L goes down in a way that
        keeps its data, as the feature is never turned off after a loss."""
        self._below(fenced=True)
        self._leader_down(DOWN_KEEPING_DATA)
        self._reach("no leader", "no leader", hold=False)
        package = one_with(C.CHANGES_ELR_FEATURE)
        self._act(package, "feature", None, states=self.g.observer.latest(), to=0)
        self.done.ways["cluster"] = package.name
        self._hold()

    # -- steps -------------------------------------------------------------------

    def _below(self, fenced: bool = False, aim_seen: bool = False,
               f2_ways: Sequence[FaultPackage] | None = None,
               f1_ways: Sequence[FaultPackage] = AWAY) -> None:
        """F1 then F2 away, in drawn ways (F2 in one that keeps it fenced when the
        recipe needs it away from the controllers); wait for the ISR below min ISR."""
        self.undo_f1 = self._away("F1", self.f1, f1_ways)
        self._wait("F1 out of the ISR", f"{self._name(self.f1)} not in isr")
        ways = f2_ways or (FENCED_AWAY if fenced else AWAY)
        first = PACKAGES[self.done.ways["F1"]]
        if first.can(C.ENDS_WITH_EVERY_CUT):
            # F1 comes back alone (a heal ends every cut): F2 is kept away otherwise
            ways = tuple(w for w in ways if not w.can(C.ENDS_WITH_EVERY_CUT))
        if first.can(C.ONE_IN_FORCE):  # F1's is in force until its end: another for F2
            ways = tuple(w for w in ways if w is not first)
        self.undo_f2 = self._away("F2", self.f2, ways)
        seen = self._wait("ISR below min ISR", "isr below min-isr")
        if aim_seen:
            self.done.reached = seen
            self._hold()

    def _away(self, role: str, broker: int, ways: Sequence[FaultPackage]) -> Undo:
        """Take `broker` out of the ISR in a drawn way; returns what brings it back.
        An unclean shutdown beyond the round's budget becomes a clean one."""
        package = self.rng.choice(ways)
        if package.can(C.UNCLEAN_SHUTDOWN):
            if self._unclean_allowed(drops=False):
                self.unclean += 1
            else:
                package = CLEAN_SHUTDOWN[0]
        self.done.ways[role] = package.name
        return self._act(package, f"{role} away", self._name(broker),
                         end_step=self._step(f"{role} back"))

    def _leader_down(self, ways: Sequence[FaultPackage]) -> None:
        """L shut down; then F1 (never in the ELR: it left while the ISR still held
        min ISR members) comes back, so that a broker that hears the controllers
        answers the observer while the partition has no leader."""
        self._down("L", self.leader, ways)
        self.undo_f1()

    def _unclean_allowed(self, drops: bool) -> bool:
        """Whether one more unclean shutdown (that `drops` unflushed data, or not)
        keeps the round within KIP-966's promise: min ISR - 1 unclean shutdowns,
        whatever kind (Kafka cannot tell a kill from a power loss: it takes both
        out of the ELR at their registration), once the round drops data at all;
        and one broker's data dropped at most, from a full ISR."""
        if drops and (not self.may_drop or self.done.dropped_data):
            return False
        if not (drops or self.done.dropped_data):
            return True  # no data dropped: a kill loses nothing
        return self.unclean + 1 <= self.g.min_insync_replicas - 1

    def _down(self, role: str, broker: int, ways: Sequence[FaultPackage]) -> None:
        """Shut `broker` down in a drawn way: one that drops data only within the
        budget (else an unclean shutdown that keeps it), an unclean one only within
        it (else a clean one). The round's end (heal_all) brings it back."""
        package = self.rng.choice(ways)
        if package.can(C.DROPS_UNFLUSHED_DATA) and not self._unclean_allowed(drops=True):
            package = UNCLEAN_KEEPING_DATA[0]
        if package.can(C.UNCLEAN_SHUTDOWN) and not self._unclean_allowed(drops=False):
            package = CLEAN_SHUTDOWN[0]
        if package.can(C.UNCLEAN_SHUTDOWN):
            self.unclean += 1
        self.done.ways[role] = package.name
        self._act(package, f"{role} down", self._name(broker))

    def _act(self, package: FaultPackage, what: str, target: str | None,
             end_step: str | None = None, chosen: Sequence[int] = (),
             **options: Any) -> Undo:
        """`package` used on `target` as a step of the round: its lines carry the
        step and the round's aim; what it noted goes to the round's notes (and
        whether it dropped data to the round's budget). A use that cannot act now
        skips the rest of the round (NotNow: nothing was recorded). The step goes to
        the run's schedule.toml (drawn), with the new min ISR the kind `chosen`, and
        its end with the end it returns."""
        notes: dict[str, Any] = {}
        use = Use(self.injector, self.g.topology, self.rng,
                  settings_of(self.g.faults, package), self.g.stop_event, self._step(what),
                  self.detail, self.g.replication_factor, notes, end_step)
        try:
            undo = package.act(use, target, **options)
        finally:
            self.done.dropped_data |= bool(notes.pop("dropped", False))
            self.done.notes.update({k: str(v) for k, v in notes.items()})
        role = options.get("role")
        to = chosen[-1] if chosen else options.get("to")
        self.g.drawn.fault(self.label, what, self.where, package.name,
                           role.value if role is not None else target, to, use.settings,
                           {k: str(v) for k, v in notes.items()}, options.get("grudge"))

        def end() -> Any:
            self.g.drawn.end(self.label, what, self.where)
            return undo()

        return end

    def _hold(self) -> None:
        hold_s = self.g.hold_s()
        self.g.stop_event.wait(hold_s)
        self.g.drawn.hold(hold_s)

    def _mine(self, states: Sequence[PartitionState]) -> PartitionState | None:
        return partition_in(states, self.topic, self.partition)

    def _state_when(self, predicate: Callable[[PartitionState], bool],
                    timeout_s: float, fresh_after: PartitionState | None = None
                    ) -> PartitionState | None:
        """The round's partition when `predicate` holds (wait_for_partition)."""
        return wait_for_partition(self.g.observer, self.topic, self.partition, predicate,
                                  timeout_s, fresh_after)

    def _wait(self, what: str, until: str, fresh_after: PartitionState | None = None,
              within_s: float | None = None) -> bool:
        """Wait (bounded: `within_s`, else the config's wait_s) for the state `until`
        says (nemesis.schedule.conditions, naming nodes); not seen, say what was seen instead."""
        condition = parse_condition(until)
        brokers = self.g.topology.brokers
        bound = self.g.config.wait_s if within_s is None else within_s
        seen = self._state_when(lambda s: condition.holds(
            s, lambda name: brokers.get(name, -2), self.g.replication_factor,
            self.g.min_insync_replicas), bound, fresh_after) is not None
        self.done.waits.append((what, seen))
        if not seen:
            self.done.saw[what] = described(self._mine(self.g.observer.latest()))
        self.g.drawn.wait(self.label, what, self.where, until, bound, seen,
                          self.done.saw.get(what))
        return seen

    def _session_s(self) -> float:
        """The brokers' session timeout: how long the controller takes to fence one."""
        cluster = getattr(self.injector, "cluster", None)
        timings = getattr(getattr(cluster, "config", None), "timings", KafkaTimings())
        return timings.broker_session_timeout_ms / 1000

    def _reach(self, what: str, until: str, fresh_after: PartitionState | None = None,
               hold: bool = True, within_s: float | None = None) -> bool:
        """The wait for the aimed state; held for a drawn while when seen."""
        self.done.reached = self._wait(what, until, fresh_after, within_s)
        if self.done.reached and hold:
            self._hold()
        return self.done.reached

    def _name(self, broker: int) -> str:
        return self.g.topology.name_of_broker(broker)

    def _step(self, what: str) -> str:
        return self.done.step(what)


#: The recipe of each KIP-966 state (harness.core.history.COVERAGE_STATES), by name:
#: a state without one, or one renamed, fails at import, not silently in a run.
RECIPES: dict[str, Callable[[Recipe], None]] = {
    "isr-below-min-isr": Recipe._isr_below_min_isr,
    "elr-not-empty": Recipe._elr_not_empty,
    "leaderless-with-elr": Recipe._leaderless_with_elr,
    "elected-from-elr": Recipe._elected_from_elr,
    "last-known-elr-not-empty": Recipe._last_known_elr_not_empty,
    "unclean-shutdown-of-elr-member": Recipe._unclean_shutdown_of_elr_member,
    "leaderless-with-unclean-replica-unfenced":
        Recipe._leaderless_with_unclean_replica_unfenced,
    "min-isr-change-with-elr": Recipe._min_isr_change_with_elr,
    "controller-failover-with-elr": Recipe._controller_failover_with_elr,
    "reassign-while-below-min-isr": Recipe._reassign_while_below_min_isr,
    "disk-fault-of-isr-or-elr-member": Recipe._disk_fault_of_isr_or_elr_member,
    "elr-feature-change-with-elr": Recipe._elr_feature_change_with_elr,
    "elr-feature-change-while-leaderless": Recipe._elr_feature_change_while_leaderless,
}
if set(RECIPES) != set(COVERAGE_STATES):
    raise ImportError(f"guided recipes {sorted(RECIPES)} != the states {COVERAGE_STATES}")
