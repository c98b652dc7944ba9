"""KIP-966's downgrade path (shared/SCENARIOS.md, "elr-downgrade"; issue #53).

KIP-966: "Once the MV version is downgraded, all the ELR related fields will be
removed on the next partition change. The controller will also ignore the ELR
fields." 4.1.1's and 4.4.0's PartitionChangeBuilder never writes LastKnownELR
while eligible.leader.replicas.version is 0 (maybeUpdateLastKnownLeader returns
at once; maybeUpdateRecordElr returns before its LastKnownELR update), and at
level 0 it still elects from the ELR it was handed (isValidNewLeader reads the
partition's ELR; only maybePopulateTargetElr is skipped). This drives partition
0 through a leaderless spell with LastKnownELR set, the downgrade, a partition
change at level 0, the feature back on, and a second leaderless spell in which
a stale LastKnownELR could elect a broker that is not the last leader.

L leads, A and B follow (from the observed state); a fourth broker, no replica
of the partition, answers the observer while all three are down. Every shutdown
is a kill -9 with the page cache kept (no data is lost: within the fault budget
whatever the feature level), so an acks=all loss is Kafka's. The seed picks the
variant, VARIANTS[seed % 4]:

    T0  kill -9 A                        -> A fenced, ISR = {L, B}
    T1  kill -9 B                        -> ISR = {L}, ELR = {B}
    T2  kill -9 L                        -> no leader, ISR = {}, ELR = {B, L},
                                            LastKnownELR = [L]
    D   downgrade the ELR feature to 0 (downgrade-first, restore-first: between
        T1 and T2, so the partition goes leaderless at level 0, where the ISR
        keeps L and nothing sets LastKnownELR)
    C   the partition change at level 0:
        elect:     start B (elected from the ELR kept at level 0?), then A; hold
                   while B and A take acks=all writes that L never sees
        reassign:  a reassignment adding the spare broker (the ELR is cleared, no
                   one is elected); then A, B and L started; watch: no leader with
                   every replica up?
        downgrade-first, restore-first: start B (no ISR member), watch; start A;
                   downgrade-first: start L, the ISR's last member (elected)
    U   the feature back to its level. reassign: watch; L restarted if no one
        leads yet (its unfencing runs an election); the reassignment ended.
        restore-first: start L now; watch (its unclean restart takes it out of
        the ISR with ELR on, and nothing names it the last known leader)
    S   the second spell, from the leader X and its ISR: the ISR's followers
        killed one by one, then X (no leader; a correct LastKnownELR is [X]);
        every replica but X started, then X. A stale LastKnownELR [L] elects L
        when X registers (L lacks every write X took since the downgrade: an
        acks=all loss); a correct one waits for X. Skipped while no one leads.

Each step waits (bounded) on the observed state. No step reads the controller's
own log while the feature is at 0: such an observe line carries no
`elr_feature`, and it would end the checker's level-0 stretch (docs/CHECKING.md,
elr-while-disabled) so that a change before it went unjudged. The run's
nodes/<controller>/metadata-log.json holds the controller's records.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.history import ELR_FEATURE
from elr_harness.nemesis.faults import feature_change, kill, reassign, stop
from elr_harness.nemesis.needs import Setting
from elr_harness.nemesis.scenarios.base import (
    SHORT_KAFKA_TIMEOUTS,
    ScenarioPackage,
    ScriptedScenario,
    StepOutcome,
)

#: The orders the seed picks from (seed % 4), see the module's docstring.
ELECT, REASSIGN, DOWNGRADE_FIRST, RESTORE_FIRST = (
    "elect", "reassign", "downgrade-first", "restore-first")
VARIANTS = (ELECT, REASSIGN, DOWNGRADE_FIRST, RESTORE_FIRST)
#: The min ISR its steps assume: the ISR {L} is below it, {L, B} is not.
MIN_ISR = 2


def variant_of(seed: int) -> str:
    return VARIANTS[seed % len(VARIANTS)]


def observed(state: PartitionState | None) -> dict[str, Any]:
    """What a step records of the partition it waited on: all the ELR fields."""
    if state is None:
        return {}
    return {"leader": state.leader, "leader_epoch": state.leader_epoch,
            "isr": list(state.isr), "elr": None if state.elr is None else list(state.elr),
            "last_known_elr": None if state.last_known_elr is None
            else list(state.last_known_elr),
            "replicas": None if state.replicas is None else list(state.replicas),
            "fenced": None if state.fenced is None else list(state.fenced),
            "elr_feature": state.elr_feature}


class ElrDowngrade(ScriptedScenario):
    """T0..T2, the downgrade, a change at level 0, the restore, a second spell."""

    name = "elr-downgrade"

    def run(self) -> list[StepOutcome]:
        variant = variant_of(self.seed)
        self.log(f"variant: {variant} (seed {self.seed})")
        start = self._wait("setup", lambda s: s.leader >= 0 and len(s.isr) >= 3 and (
            s.high_watermark or 0) >= self.timings.warmup_high_watermark)
        if start.observed.get("leader", -1) < 0 or len(start.observed.get("isr", [])) < 3:
            raise RuntimeError(f"partition {self.topic}-{self.partition} never had a full "
                               f"ISR: {start.observed}")
        start.observed["variant"] = variant
        leader = start.observed["leader"]
        a, b = [x for x in start.observed["isr"] if x != leader][:2]
        replicas = list(start.observed.get("replicas") or start.observed["isr"])
        spare = self._spare(replicas)
        self.log("roles: " + " ".join(f"{role}={self._broker_name(i)} ({i})" for role, i in
                                      (("L", leader), ("A", a), ("B", b), ("S", spare))))
        self.was = feature_change.level(self.injector, ELR_FEATURE) or 1
        first = [
            ("T0", lambda: self._kill("T0", a)),
            ("T1", lambda: self._kill("T1", b, lambda s: list(s.isr) == [leader]
                                      and list(s.elr or []) == [b])),
            ("T1-hold", lambda: self._sleep(self.timings.hold_t1_s)),
        ]
        # no leader; at level 0 the ISR keeps L (Kafka's legacy rule), so only fenced
        at_level_0 = variant in (DOWNGRADE_FIRST, RESTORE_FIRST)
        down = ("T2", lambda: self._kill("T2", leader, lambda s: s.leader == -1,
                                         in_isr=at_level_0))
        first += [("D", self._downgrade), down] if at_level_0 else [down, ("D", self._downgrade)]
        if variant == ELECT:
            change = [
                ("C", lambda: self._start("C", b, lambda s: s.leader >= 0)),
                ("C-a", lambda: self._start("C-a", a, lambda s: a in s.isr)),
                ("C-hold", lambda: self._sleep(self.timings.hold_level0_s)),
                ("U", self._restore),
            ]
        elif variant == REASSIGN:
            change = [
                ("C", lambda: self._reassign(replicas, spare)),
                ("C-a", lambda: self._start("C-a", a)),
                ("C-b", lambda: self._start("C-b", b)),
                ("C-l", lambda: self._start("C-l", leader)),
                ("C-hold", lambda: self._watch_offline("C-hold")),
                ("U", self._restore),
                ("U-hold", lambda: self._watch_offline("U-hold")),
                ("U-l", lambda: self._restart_if_leaderless(leader)),
                ("U-end", lambda: self._end_reassign(replicas)),
            ]
        elif variant == DOWNGRADE_FIRST:
            change = [
                ("C", lambda: self._start("C", b)),
                ("C-hold", lambda: self._watch_offline("C-hold")),
                ("C-a", lambda: self._start("C-a", a)),
                ("C-l", lambda: self._start("C-l", leader, lambda s: s.leader >= 0)),
                ("U", self._restore),
            ]
        else:
            change = [
                ("C", lambda: self._start("C", b)),
                ("C-hold", lambda: self._watch_offline("C-hold")),
                ("C-a", lambda: self._start("C-a", a)),
                ("U", self._restore),
                ("U-l", lambda: self._start("U-l", leader)),
                ("U-hold", lambda: self._watch_offline("U-hold")),
            ]
        return self._steps([*first, *change, ("S", lambda: self._second_spell(replicas))])

    # -- roles and observed state ----------------------------------------------------

    def _spare(self, replicas: Sequence[int]) -> int:
        """A broker that is no replica of the partition (answers the observer)."""
        spares = sorted(n.spec.node_id for n in self.injector.cluster.brokers
                        if n.spec.node_id not in replicas)
        if not spares:
            raise RuntimeError(f"no broker outside the replicas {list(replicas)}")
        return spares[0]

    def _latest(self) -> PartitionState | None:
        return self._state(self.observer.latest())

    def _wait_for(self, step: str, predicate: Callable[[PartitionState], bool],
                  timeout_s: float | None = None) -> StepOutcome:
        """As _wait, recording every ELR field of the state it saw."""
        return self._wait(step, predicate, timeout_s, describe=observed)

    @staticmethod
    def _fenced(broker: int) -> Callable[[PartitionState], bool]:
        return lambda s: s.fenced is not None and broker in s.fenced and broker not in s.isr

    @staticmethod
    def _unfenced(broker: int) -> Callable[[PartitionState], bool]:
        return lambda s: s.fenced is not None and broker not in s.fenced

    # -- steps ------------------------------------------------------------------------

    def _kill(self, step: str, broker: int,
              then: Callable[[PartitionState], bool] | None = None,
              in_isr: bool = False) -> StepOutcome:
        """kill -9 (its page cache kept); wait until it is fenced and out of the ISR
        (`in_isr`: it may stay there) and `then` holds."""
        kill.kill(self.injector, self._broker_name(broker), step=step)
        fenced = self._fenced(broker)

        def done(s: PartitionState) -> bool:
            gone = broker in (s.fenced or ()) if in_isr else fenced(s)
            return gone and (then is None or then(s))

        return self._wait_for(step, done)

    def _start(self, step: str, broker: int,
               then: Callable[[PartitionState], bool] | None = None) -> StepOutcome:
        """Start a broker; wait until it is unfenced (and `then`)."""
        self.injector.start(self._broker_name(broker), step=step)
        unfenced = self._unfenced(broker)
        return self._wait_for(step, lambda s: unfenced(s) and (then is None or then(s)))

    def _downgrade(self) -> StepOutcome:
        feature_change.change(self.injector, ELR_FEATURE, 0, self.was, step="D")
        return self._wait_for("D", lambda s: s.elr_feature == 0)

    def _restore(self) -> StepOutcome:
        feature_change.restore(self.injector, ELR_FEATURE, step="U")
        return self._wait_for("U", lambda s: s.elr_feature == self.was)

    def _watch_offline(self, step: str) -> StepOutcome:
        """Watch hold_offline_s for a leader. Reached once watched with a sample to
        judge by, whatever it showed: `elected` says whether someone was elected,
        `watched_s` how long the watch lasted."""
        started = time.monotonic()

        def check(states: list[Any]) -> bool:
            s = self._state(states)
            return s is not None and s.leader >= 0

        sample = self.observer.wait_for(check, self.timings.hold_offline_s)
        state = self._state(sample) if sample is not None else self._latest()
        return self._finish(step, state is not None, {
            **observed(state), "elected": sample is not None,
            "watched_s": round(time.monotonic() - started, 1)})

    def _reassign(self, replicas: list[int], spare: int) -> StepOutcome:
        """Add the spare broker to the leaderless partition's replicas: a change at
        level 0 that elects no one (it cannot catch up). Put back at its end
        should it have completed."""
        reassign.start(self.injector, self.topic, self.partition, replicas,
                       [*replicas, spare], restore=True, step="C")
        return self._wait_for("C", lambda s: spare in (s.replicas or ()))

    def _restart_if_leaderless(self, broker: int) -> StepOutcome | None:
        """The operator's act once the feature is back: L restarted cleanly (its
        unfencing is an event that runs an election), if no one leads yet."""
        now = self._latest()
        if now is not None and now.leader >= 0:
            return self._finish("U-l", True, {**observed(now), "restarted": False})
        stop.stop(self.injector, self._broker_name(broker), step="U-l")
        return self._start("U-l", broker, lambda s: s.leader >= 0)

    def _end_reassign(self, replicas: list[int]) -> StepOutcome:
        # its own step (without a detail the end carries the start's, step C's)
        reassign.end(self.injector, self.topic, self.partition, step="U-end", detail={})
        return self._wait_for("U-end", lambda s: s.leader >= 0 and s.replicas is not None
                              and sorted(s.replicas) == sorted(replicas))

    def _second_spell(self, replicas: list[int]) -> None:
        """From the leader X and its ISR: the ISR's followers killed one by one (the
        last joins the ELR), then X (no leader); every other replica started, then
        X. Who leads after X's start is recorded with the LastKnownELR seen."""
        now = self._latest()
        if now is None or now.leader < 0:  # offline still: there is no spell to start
            self._finish("S0", False, {**observed(now), "skipped": "no leader"})
            return
        up = [r for r in replicas if self._broker_name(r) not in self.injector.down]
        ready = self._wait_for("S0", lambda s: s.leader >= 0 and set(up) <= set(s.isr))
        x = ready.observed.get("leader", -1)
        if not ready.reached or x < 0:
            return
        followers = [f for f in ready.observed["isr"] if f != x]
        for n, follower in enumerate(followers, 1):
            if self.stop_event.is_set():
                return
            self._kill(f"S1-{n}", follower)
        if self.stop_event.is_set():
            return
        spell = self._kill("S2", x, lambda s: s.leader == -1)
        lke = spell.observed.get("last_known_elr") or []
        spell.observed["stale_last_known_elr"] = bool(lke) and lke != [x]
        others = [r for r in dict.fromkeys([*followers, *replicas]) if r != x]
        for n, other in enumerate(
                (r for r in others if self._broker_name(r) in self.injector.down), 1):
            if self.stop_event.is_set():
                return
            self._start(f"S3-{n}", other)
        if self.stop_event.is_set():
            return
        elected = self._start("S4", x, lambda s: s.leader >= 0)
        new = elected.observed.get("leader", -1)
        elected.observed.update(last_leader=x, stale_leader_elected=new >= 0 and new != x)


def check(cluster: ClusterConfig, topics: Sequence[TopicConfig]) -> None:
    """Its steps need a broker outside the replicas, min ISR 2 and ELR on."""
    replicas = max(t.replication_factor for t in topics)
    if cluster.brokers <= replicas:
        raise BadInput(f"{ElrDowngrade.name} needs a broker that is no replica of the "
                       f"partition (to answer while its replicas are down): --brokers "
                       f"{replicas + 1}")
    if any(t.min_insync_replicas != MIN_ISR or t.replication_factor != 3 for t in topics):
        raise BadInput(f"{ElrDowngrade.name} needs replication factor 3 and "
                       f"--min-insync-replicas {MIN_ISR}")
    if not cluster.elr:
        raise BadInput(f"{ElrDowngrade.name} downgrades the ELR feature: it needs --elr on")


PACKAGE = ScenarioPackage(
    ElrDowngrade.name, scenario=ElrDowngrade, check=check,
    cluster_settings=(*SHORT_KAFKA_TIMEOUTS,
                      Setting("cluster.brokers", lambda run: run.elr_downgrade_brokers)),
    help="KIP-966's downgrade: a leaderless partition with LastKnownELR set, the ELR "
         "feature to 0, a change at level 0, the feature back, a second leaderless "
         "spell (4 brokers; the seed picks the order)")
