"""The recipes of the four transaction states (core.history.TXN_COVERAGE_STATES) a
guided round (nemesis.guided.search) aims at when the run has transactions (`--workload
txn`); a run without them never aims at these.

Each is a Recipe's round like the KIP-966 ones (nemesis.guided.recipes): the same start
(a full ISR of three), the same steps, waits and records (schedule.toml replays
them), the same fault budget. They drop no unflushed data at all (no page-cache
loss, no dropping disk fault): kills only, which lose nothing, so a run stays within
KIP-966's promise whatever else its rounds did.

The partition a round plays on is where its state shows:

- txn-coordinator-failover-with-open-txn and internal-topic-with-elr play on the
  `__transaction_state` partition of a transactional.id the producers use (drawn),
  whose leader is that id's coordinator C (nemesis.coordinator), observed as the
  run's observer samples the internal topics with transactions;
- leader-change-between-commit-and-marker and lso-below-hwm-beyond-txn-timeout play
  on a data partition the transactions write whose leader L is not C (the drawn one,
  else one drawn of those), so that C's markers to L cross the network and a cut
  between the two holds them back while both stay registered and L answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.history import TXN_COVERAGE_STATES
from elr_harness.nemesis.coordinator import Coordinator
from elr_harness.nemesis.faults import with_capabilities
from elr_harness.nemesis.faults.base import Capability as C
from elr_harness.nemesis.faults.base import NotNow
from elr_harness.nemesis.guided.recipes import Recipe
from elr_harness.nemesis.guided.round import CLEAN_SHUTDOWN, Round, Schedule
from elr_harness.nemesis.schedule.conditions import described


@dataclass(frozen=True)
class Transactions:
    """What a guided run knows of its transactions (run.nemesis_thread passes it with
    `--workload txn`; None without): the transactional.ids its producers use, whose
    coordinators the rounds find, and test.json's transaction_timeout_ms, which
    lso-below-hwm-beyond-txn-timeout must outlast."""

    transactional_ids: tuple[str, ...]
    timeout_ms: int


class TxnSchedule(Schedule, Protocol):
    """What a transaction recipe reads of its schedule beyond a KIP-966 one's."""

    transactions: Transactions | None


#: How a leader is taken away so that its leadership moves: any kind that keeps the
#: broker fenced (shut down, frozen, cut off; the controller then elects another ISR
#: member), none that drops unflushed data (these rounds never spend the budget).
LEADER_AWAY = with_capabilities(C.KEEPS_FENCED, without=(C.DROPS_UNFLUSHED_DATA,))
#: How C's markers to L are held back: a cut, exactly as the round draws it (L stops
#: hearing C; both stay registered, and L still answers the observer its LSO).
MARKERS_HELD = with_capabilities(C.TAKES_A_CUT, without=(C.DROPS_UNFLUSHED_DATA,))

#: The states whose round plays on the coordinator's `__transaction_state` partition;
#: the others play on a data partition C does not lead.
ON_COORDINATOR_PARTITION = frozenset({"txn-coordinator-failover-with-open-txn",
                                      "internal-topic-with-elr"})


class TxnRecipe(Recipe):
    """One round at a transaction state: a Recipe on the partition that state shows on."""

    g: TxnSchedule

    def __init__(self, guided: TxnSchedule, done: Round) -> None:
        super().__init__(guided, done)  # draws a data partition, as every round does
        txns = guided.transactions
        if txns is None or not txns.transactional_ids:
            raise NotNow("the run has no transactional producer (--workload txn): no "
                         "transaction state to aim at")
        self.txns = txns
        cluster = getattr(self.injector, "cluster", None)
        self.coordinator = Coordinator(self.rng.choice(txns.transactional_ids),
                                       getattr(cluster, "transaction_coordinator", None))
        #: C's broker id, for the rounds on a data partition
        self.c = -1

    def play(self) -> None:
        latest = self.g.observer.latest()
        if self.done.aim in ON_COORDINATOR_PARTITION:
            self._move_to(self.coordinator.partition(latest))
        else:
            self.c = self.coordinator.broker(latest)
            self._move_to(self._led_apart_from(self.c, latest))
        super().play()

    def _recipe(self) -> Callable[[Any], None]:
        return TXN_RECIPES[self.done.aim]

    # -- the recipe of each state ------------------------------------------------

    def _coordinator_failover_with_open_txn(self) -> None:
        """C, the leader of a transactional.id's `__transaction_state` partition, taken
        away in a drawn way that keeps it fenced (shut down, frozen or cut off) while
        the producers run, so transactions are open on it; then wait (bounded) for
        another replica to lead that partition: the coordinator failed over with
        transactions open (the checker says whether one was)."""
        self.done.roles["C"] = self._name(self.leader)
        self._down("C", self.leader, LEADER_AWAY)
        self._reach("another replica leads C's partition", self._others_lead(),
                    within_s=self.g.config.leader_move_s)

    def _leader_change_between_commit_and_marker(self) -> None:
        """Best effort: the state needs a commit called while its marker is late, and
        the leadership of a partition it wrote moving meanwhile; the round makes both
        likely, not certain (the producers' pace decides). L stops hearing C, so
        C's markers to L do not land (the LSO stays below the HWM) while commits go
        on; then L is shut down cleanly: Kafka's controlled shutdown hands its
        leadership over at once, while L still answered the observer the sample
        before (a kill or a cut would leave samples without L's LSO in between, the
        observer asking no dead or stale broker). Wait (bounded) for another leader."""
        if not self._apart():
            return
        self._hold_markers()
        self._wait("a marker held back: LSO below the HWM", "lso below high-watermark")
        self._hold_for(self.g.config.marker_lag_s)
        self._down("L", self.leader, CLEAN_SHUTDOWN)
        self._reach("another leader while the marker is held back", self._others_lead(),
                    within_s=self.g.config.leader_move_s)

    def _internal_topic_with_elr(self) -> None:
        """elr-not-empty's steps on C's `__transaction_state` partition (RF 3, min ISR
        2 as the run creates it): F1 then F2 out of the ISR, so F2 joins the ELR; the
        internal topic is guarded by ELR as the data topics are."""
        self.done.roles["C"] = self._name(self.leader)
        self._elr_held()

    def _lso_below_hwm_beyond_txn_timeout(self) -> None:
        """A marker late for longer than the transaction timeout: L stops hearing C
        while transactions are open on L, so their markers do not land and L's LSO
        stays at one value below its HWM; held past transaction_timeout_ms (and a
        margin), then healed by the round's end. C stays registered, so the
        coordinator does not move and abort the transaction meanwhile (a paused C
        would be fenced after the session timeout, shorter than the transaction
        timeout). Reached: the LSO read after the settle is the one read after the
        hold, still below the HWM."""
        if not self._apart():
            return
        self._hold_markers()
        what = "LSO held below the HWM past the transaction timeout"
        seen = self._wait("a marker held back: LSO below the HWM", "lso below high-watermark")
        self._hold_for(self.g.config.marker_lag_s)  # markers of other coordinators land
        held = self._mine(self.g.observer.latest())
        self._hold_for(self.txns.timeout_ms / 1000 + self.g.config.txn_timeout_margin_s)
        after = self._mine(self.g.observer.latest())
        self.done.reached = seen and _lso_held(held, after)
        self.done.waits.append((what, self.done.reached))
        if not self.done.reached:
            self.done.saw[what] = (f"LSO {_lso(held)} after the settle, {_lso(after)} "
                                   f"after the hold (HWM {_hwm(after)}); {described(after)}")
        self.g.drawn.wait(self.label, what, self.where, "lso below high-watermark",
                          self.g.config.wait_s, self.done.reached, self.done.saw.get(what))

    # -- steps -------------------------------------------------------------------

    def _move_to(self, where: tuple[str, int]) -> None:
        self.topic, self.partition = where
        self.where = f"{self.topic}-{self.partition}"

    def _led_apart_from(self, coordinator: int,
                        states: Sequence[PartitionState]) -> tuple[str, int]:
        """The drawn data partition, unless C leads it: then one drawn of those led by
        another broker (C's markers to itself never cross the network)."""
        led = {(s.topic, s.partition): s.leader for s in states}
        here = (self.topic, self.partition)
        if led.get(here) != coordinator:
            return here
        others = [p for p in self.g.partitions if led.get(p, -1) >= 0
                  and led[p] != coordinator]
        if not others:
            raise NotNow(f"the transaction coordinator (broker {coordinator}) leads every "
                         "data partition: no marker crosses the network")
        return self.rng.choice(others)

    def _apart(self) -> bool:
        """Whether L is not C (the leader may have moved since the partition was
        drawn); otherwise the round is skipped."""
        if self.leader == self.c:
            self.done.skipped = "the transaction coordinator leads the partition now"
            return False
        return True

    def _hold_markers(self) -> None:
        """L stops hearing C, in a drawn kind that cuts exactly so (recorded as the
        step's `cut`); the round's end heals it."""
        package = self.rng.choice(MARKERS_HELD)
        self.done.roles["C"] = self._name(self.c)
        self.done.ways["L-C"] = package.name
        self._act(package, "markers held", None,
                  grudge={self._name(self.leader): [self._name(self.c)]})

    def _hold_for(self, seconds: float) -> None:
        self.g.stop_event.wait(seconds)
        self.g.drawn.hold(seconds)

    def _others_lead(self) -> str:
        """The condition: a replica of the round's partition other than L leads."""
        return " or ".join(f"{self._name(b)} leads" for b in (self.f1, self.f2))


def _lso(state: PartitionState | None) -> int | None:
    return None if state is None else state.last_stable_offset


def _hwm(state: PartitionState | None) -> int | None:
    return None if state is None else state.high_watermark


def _lso_held(before: PartitionState | None, after: PartitionState | None) -> bool:
    """The same LSO read before and after, still below the HWM."""
    lso, hwm = _lso(after), _hwm(after)
    return (lso is not None and hwm is not None and lso == _lso(before)
            and 0 <= lso < hwm)


#: The recipe of each transaction state, by name: a state without one, or one renamed,
#: fails at import, not silently in a run.
TXN_RECIPES: dict[str, Callable[[TxnRecipe], None]] = {
    "txn-coordinator-failover-with-open-txn": TxnRecipe._coordinator_failover_with_open_txn,
    "leader-change-between-commit-and-marker":
        TxnRecipe._leader_change_between_commit_and_marker,
    "internal-topic-with-elr": TxnRecipe._internal_topic_with_elr,
    "lso-below-hwm-beyond-txn-timeout": TxnRecipe._lso_below_hwm_beyond_txn_timeout,
}
if set(TXN_RECIPES) != set(TXN_COVERAGE_STATES):
    raise ImportError(f"guided transaction recipes {sorted(TXN_RECIPES)} != the states "
                      f"{TXN_COVERAGE_STATES}")
