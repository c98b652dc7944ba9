"""`--nemesis guided`: faults chosen to drive a partition into the KIP-966 states
not reached yet (harness.core.history.COVERAGE_STATES; docs/CHECKING.md).

A random mix heals every fault before the next one, so the sequences where
KIP-966 can go wrong (the ISR below min ISR, then the last ISR member shut down
uncleanly while a follower is still away, then ...) are rare. A guided run plays
rounds instead. Each round aims at one state that neither this run nor the soak
before it (`--reached`, from the soak's coverage) reached, in an order drawn from
the seed, and plays that state's recipe (nemesis.guided.recipes) on one partition drawn
from the seed. Then everything is healed (FaultInjector.heal_all) and the round
waits for every partition's ISR to be full again. Every fault line of a round
carries the state it aimed at in its detail (`aim`), so a report can say whether
it got there; the checker, not the schedule, says which states the run reached.
An aim not seen is tried again after the others.

A run with transactions (`--workload txn`: Guided(transactions=...)) aims at the
four transaction states too (core.history.TXN_COVERAGE_STATES, after the KIP-966
ones; their recipes: nemesis.guided.txn_recipes). Without, it aims at exactly the KIP-966
states, in the order the seed drew before those existed.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from elr_harness.core.config import GuidedConfig
from elr_harness.core.history import COVERAGE_STATES, TXN_COVERAGE_STATES
from elr_harness.nemesis.faults import ASSIGNMENT, CONFIG, NETWORK, PROCESSES
from elr_harness.nemesis.faults.base import NotNow
from elr_harness.nemesis.guided.recipes import Recipe
from elr_harness.nemesis.guided.round import Round
from elr_harness.nemesis.guided.txn_recipes import TXN_RECIPES, Transactions, TxnRecipe
from elr_harness.nemesis.schedule.drawn import DrawnSteps
from elr_harness.nemesis.targets import Topology, all_isr_full
from elr_harness.nemesis.watch import Observer


class Guided:
    """The guided schedule (nemesis.schedule.compose.Schedule): rounds until the deadline,
    or until `rounds` were played (each ends healed and recovered)."""

    def __init__(self, injector: Any, observer: Observer, topics: Sequence[tuple[str, int]],
                 seed: int, replication_factor: int, min_insync_replicas: int,
                 config: GuidedConfig | None = None, reached: Sequence[str] = (),
                 faults: Mapping[str, Any] | None = None,
                 log: Callable[[str], None] = print, topology: Topology | None = None,
                 active_controller: Callable[[], int | None] | None = None,
                 transactions: Transactions | None = None,
                 rounds: int | None = None) -> None:
        self.injector = injector
        self.observer = observer
        self.partitions = [(t, p) for t, n in topics for p in range(n)]
        self.rng = random.Random(seed)
        self.replication_factor = replication_factor
        self.min_insync_replicas = min_insync_replicas
        self.config = config or GuidedConfig()
        #: each kind's settings (RunConfig.faults; a kind not named: its defaults)
        self.faults = dict(faults or {})
        #: the run's transactions (None: it has none, and no round aims at theirs)
        self.transactions = transactions
        #: the states this run aims at: KIP-966's, then with transactions theirs
        self.states: tuple[str, ...] = (
            (*COVERAGE_STATES, *TXN_COVERAGE_STATES) if transactions is not None
            else COVERAGE_STATES)
        before = set(reached)
        self.reached_before = tuple(s for s in self.states if s in before)
        self.log = log
        cluster = getattr(injector, "cluster", None)
        self.topology = topology or Topology.of(cluster.nodes.values())
        self.active_controller = active_controller or cluster.quorum_leader
        self.stop_event = threading.Event()
        self.rounds: list[Round] = []
        #: `--rounds`: the most rounds it plays (None: rounds until the deadline)
        self.max_rounds = rounds
        self.seed = seed
        #: every step of every round as a schedule file has it (schedule.toml)
        self.drawn = DrawnSteps()
        #: states not reached yet, in the seed's order (the first is aimed at next)
        pending = [s for s in self.states if s not in self.reached_before]
        self.rng.shuffle(pending)
        self.pending = pending

    # -- the schedule ------------------------------------------------------------

    def resources(self) -> set[str]:
        return {NETWORK, PROCESSES, CONFIG, ASSIGNMENT}

    def run(self, deadline: float, stop: threading.Event, result: dict[str, Any]) -> None:
        self.stop_event = stop
        stop.wait(self.config.warmup_s)
        try:
            while not stop.is_set() and time.monotonic() + self.config.min_round_s < deadline \
                    and (self.max_rounds is None or len(self.rounds) < self.max_rounds):
                self.play(self.next_aim())
        finally:
            result["guided"] = {"reached_before": list(self.reached_before),
                                "rounds": [asdict(r) for r in self.rounds]}
            result["schedule"] = self.played()
            result.setdefault("injected", []).extend(
                kind for r in self.rounds for kind in r.ways.values())

    def played(self) -> dict[str, Any]:
        """Its rounds' steps, as schedule.toml has them (schedule_writer.recorded_toml)."""
        return {"help": f"the faults of a guided run (seed {self.seed}), "
                        f"{len(self.rounds)} rounds: {', '.join(r.aim for r in self.rounds)}",
                # played again on as many brokers (its 4th answers while replicas are down)
                # and Kafka's own timeouts, as a guided run has them; with its
                # transactions, whose coordinators and markers its rounds act on
                "needs": {"brokers": len(self.topology.brokers),
                          "short_kafka_timeouts": False,
                          **({"workloads": ["txn"]} if self.transactions else {})},
                "steps": self.drawn.tables}

    def next_aim(self) -> str:
        """The first state not reached yet; once every one was, any (drawn)."""
        if self.pending:
            return self.pending.pop(0)
        return self.rng.choice(self.states)

    def play(self, aim: str) -> Round:
        """One round at `aim`: its recipe, then everything healed and recovered.
        An aim whose wait did not see it is tried again after the others."""
        done = Round(aim, len(self.rounds) + 1)
        self.rounds.append(done)
        self.log(f"round {done.number}: aiming at {aim}")
        try:
            (TxnRecipe if aim in TXN_RECIPES else Recipe)(self, done).play()
        except NotNow as err:  # a step that could not act now: nothing was recorded
            done.skipped = str(err)
        except Exception as err:  # noqa: BLE001 - recorded (the fault line says info); next round
            done.error = f"{type(err).__name__}: {str(err)[:300]}"
            self.log(f"round {done.number}: {done.error}")
        finally:
            self.end_round(done)
        if not done.reached and not done.skipped and aim not in self.pending:
            self.pending.append(aim)
        self.log(f"round {done.number}: {aim} "
                 f"{'reached' if done.reached else 'not seen'} {done.ways}")
        return done

    def end_round(self, done: Round) -> None:
        """Every fault ended; then wait (bounded) for every ISR to be full again."""
        label = f"r{done.number}"
        try:
            self.injector.heal_all(step=done.step("end"), detail=done.detail)
        finally:
            if done.partition:
                self.drawn.end_all(label, done.partition)
            full = self.observer.wait_for(
                lambda states: all_isr_full(list(states), self.replication_factor),
                self.config.recovery_s)
            done.waits.append(("every ISR full again", full is not None))
            if done.partition:
                self.drawn.wait(label, "every ISR full again", done.partition, "isr full",
                                self.config.recovery_s, full is not None)

    # -- what a round asks -------------------------------------------------------

    def hold_s(self) -> float:
        return round(self.rng.uniform(self.config.min_hold_s, self.config.max_hold_s), 1)

    def may_drop_data(self) -> bool:
        """KIP-966's fault budget (module docstring): one broker's unflushed data may
        go only from a full ISR everywhere, with min ISR >= 2 and ELR on."""
        return (self.min_insync_replicas >= 2 and not self.injector.protection_off
                and all_isr_full(list(self.observer.latest()), self.replication_factor))
