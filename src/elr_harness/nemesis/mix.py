"""Random fault mixes: `--nemesis partition,kill,pause,...` or `all`.

The schedule alternates quiet and fault periods of `interval` seconds; each
fault period takes the next kind of a seeded shuffled rotation (every kind of
the mix once per round, so `--nemesis all` exercises each kind in a run of
2 x interval x kinds seconds) and a target by role (a partition's leader, an
ISR or ELR member, the active controller, or any node) from the observed
state, all from one seeded RNG, and ends its fault before the next quiet period.
A page-cache loss is only injected while every observed partition has a full
ISR, so no partition loses unflushed data on more than one replica between
two points where its ISR was full: the run stays within KIP-966's budget of
min.insync.replicas - 1 such losses (for min ISR >= 2), and the checker's
budget rule still judges whatever happens: after a min-isr-change to 1 (no budget
left), by the lowest min ISR in effect; after a feature-change turned ELR off
(no promise), as unprotected. No page-cache loss or data-dropping disk fault is
made while ELR is off, and ELR is not turned off while such a loss is not over.

Each kind is a package (nemesis/faults/<kind>.py): recorded under its own kind
(a controller kill is `controller-kill`, not `kill`), with `detail.mix` (the
entry of the mix that chose it) and `detail.role` (how its target was chosen;
nemesis.targets).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from elr_harness.nemesis.faults import PACKAGES, FaultPackage, Injector
from elr_harness.nemesis.faults.base import settings_of
from elr_harness.nemesis.targets import Role, Topology, choose_target
from elr_harness.nemesis.watch import Observer


class RandomMix:
    """A seeded schedule of faults over the given kinds.

    `topology` and `active_controller` default to the injector's cluster (its
    nodes, and the quorum's leader asked when a fault needs it).
    """

    def __init__(self, injector: Injector, observer: Observer, kinds: Sequence[str],
                 seed: int, interval_s: float, replication_factor: int,
                 stop: threading.Event | None = None,
                 log: Callable[[str], None] = print,
                 topology: Topology | None = None,
                 active_controller: Callable[[], int | None] | None = None,
                 faults: Mapping[str, Any] | None = None,
                 rounds: int | None = None) -> None:
        unknown = [k for k in kinds if k not in PACKAGES]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}")
        self.injector = injector
        self.observer = observer
        self.kinds = list(kinds)
        self.rng = random.Random(seed)
        self.interval_s = interval_s
        self.replication_factor = replication_factor
        #: each kind's settings (RunConfig.faults; a kind not named: its defaults)
        self.faults = dict(faults or {})
        self.stop_event = stop or threading.Event()
        self.log = log
        cluster = getattr(injector, "cluster", None)
        if cluster is None and (topology is None or active_controller is None):
            raise ValueError("RandomMix needs the injector's cluster, or a topology and "
                             "an active_controller")
        self.topology = topology or Topology.of(cluster.nodes.values())
        self.active_controller = active_controller or cluster.quorum_leader
        self.injected: list[str] = []
        #: What is left of this round of the rotation (the next kind is the last).
        self._round: list[str] = []
        #: Rounds of the rotation begun so far, and `--rounds`: the most it plays
        #: (None: rounds until the deadline)
        self.rounds_begun = 0
        self.max_rounds = rounds

    def run(self, deadline: float) -> list[str]:
        """Inject faults until the deadline or stop, or until its rounds are done
        (then one quiet period more: writes after the last heal); every fault is
        ended before return."""
        while not self.stop_event.is_set() and time.monotonic() + 2 * self.interval_s < deadline:
            if self.rounds_done():
                self.stop_event.wait(self.interval_s)
                break
            self.stop_event.wait(self.interval_s)
            if self.stop_event.is_set():
                break
            kind = self.next_kind()
            try:
                undo = self.inject(kind)
            except Exception as err:  # noqa: BLE001 - recorded as info; go on with the mix
                self.log(f"{kind} failed: {err}")
                continue
            if undo is None:
                # skipped (fault budget): tried again last in this round; with --rounds
                # even as the round's last kind (a round holds every kind), otherwise
                # the next round has it again
                if self._round or self.max_rounds is not None:
                    self._round.insert(0, kind)
                continue
            self.injected.append(kind)
            self.stop_event.wait(self.interval_s)
            undo()
        return self.injected

    def next_kind(self) -> str:
        """The next kind of the rotation: each round is the mix's kinds, shuffled."""
        if not self._round:
            self._round = list(self.kinds)
            self.rng.shuffle(self._round)
            self.rounds_begun += 1
        return self._round.pop()

    def rounds_done(self) -> bool:
        """Whether `rounds` rounds of the rotation were played to their end (a kind
        skipped for the fault budget is tried again within its round)."""
        return self.max_rounds is not None and not self._round and \
            self.rounds_begun >= self.max_rounds

    # -- what the packages read of the mix -------------------------------------------

    def states(self) -> list[Any]:
        """The observer's latest partition states."""
        return list(self.observer.latest())

    def settings(self, package: FaultPackage) -> Any:
        """The run's settings of `package`'s kind."""
        return settings_of(self.faults, package)

    def target(self, role: Role) -> str:
        """The node in `role` now, from the observed state and the seeded RNG."""
        leader = self.active_controller() if role is Role.ACTIVE_CONTROLLER else None
        return choose_target(role, self.states(), self.topology, self.rng, leader)

    def inject(self, kind: str) -> Callable[[], Any] | None:
        """Inject one fault of the mix's `kind`; returns what ends it (None: skipped)."""
        package = PACKAGES[kind]
        return package.inject(self, package)
