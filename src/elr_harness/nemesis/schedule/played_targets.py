"""Choosing the node each step of a played schedule acts on (nemesis.schedule.played): a
name bound earlier (L, C, or a step's `as`), a node the file names (renamed by
its [placement]), or one drawn of a role on the partition the step reads, as
last observed; and which partition that is (its own, the transaction
coordinator's, or the schedule's)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from elr_harness.cluster.observe import PartitionState
from elr_harness.nemesis.coordinator import Coordinator
from elr_harness.nemesis.faults import PACKAGES
from elr_harness.nemesis.faults.base import Capability as C
from elr_harness.nemesis.faults.base import NotNow
from elr_harness.nemesis.schedule.file import Placement
from elr_harness.nemesis.schedule.step import COORDINATOR_PARTITION, Step
from elr_harness.nemesis.targets import Role, Topology
from elr_harness.nemesis.watch import Observer


class StepTargets:
    """Played's targets (a mixin: Played sets these attributes)."""

    topology: Topology
    rng: random.Random
    observer: Observer
    coordinator: Coordinator
    active_controller: Callable[[], int | None]
    home: tuple[str, int]
    topic: str
    partition: int
    #: name -> node name (L, C, and every step's `as`)
    names: dict[str, str]
    #: a node the file names -> the node in its place here ([placement])
    renamed: dict[str, str]
    #: L and C -> the partition each is the start's leader of
    start_of: dict[str, tuple[str, int]]
    #: why the last step's target is not of its role (its role had no broker), or None
    substituted: str | None = None

    def _mine(self, states: Sequence[PartitionState]) -> PartitionState | None:
        raise NotImplementedError

    def _where(self, step: Step) -> tuple[str, int]:
        """The partition a step reads: its own, the coordinator's, or the schedule's."""
        if step.partition == COORDINATOR_PARTITION:
            return self.coordinator.partition(self.observer.latest())
        if isinstance(step.partition, tuple):
            return step.partition
        return self.home

    def _renaming(self, placed: Placement, start: PartitionState) -> dict[str, str]:
        """Each node the file names -> the node in the same place here: the leader at
        the start, its followers in the partition's order, the other brokers and the
        controllers (the active one first) in name order."""
        replicas = [self._name(b) for b in start.replicas or start.isr]
        leader = self._name(start.leader)
        pairs = [(placed.leader, leader),
                 *zip([r for r in placed.replicas if r != placed.leader],
                      [r for r in replicas if r != leader], strict=False)]
        brokers = sorted(self.topology.brokers)
        pairs += zip([b for b in brokers if b not in placed.replicas],
                     [b for b in brokers if b not in replicas], strict=False)
        named = {i: n for n, i in self.topology.controllers.items()}
        active = named.get(self.active_controller()) if placed.controller else None
        if placed.controller and active:
            controllers = sorted(self.topology.controllers)
            pairs += [(placed.controller, active),
                      *zip([c for c in controllers if c != placed.controller],
                           [c for c in controllers if c != active], strict=False)]
        return {old: new for old, new in pairs if old != new}

    def _moved(self, node: str) -> str:
        """The node in the place of the file's `node` ([placement]; itself without)."""
        return self.renamed.get(node, node)

    def _target(self, step: Step) -> str | None:
        """The node a step acts on: a bound name's, a node's, or one drawn of the role
        on the partition as last observed (nodes bound already are not drawn)."""
        if step.target is None or PACKAGES[str(step.fault)].can(C.REASSIGNS):
            return None
        if step.target in self.names:
            return self.names[step.target]
        if step.target in self.topology.node_names:
            return self._moved(step.target)
        if step.target not in {r.value for r in Role}:
            raise NotNow(f"{step.target} is bound to no node (its step was skipped, or no "
                         "coordinator was found at the start)")
        role = Role(step.target)
        if role is Role.COORDINATOR:
            return self._name(self.coordinator.broker(self.observer.latest()))
        if role is Role.ACTIVE_CONTROLLER:
            active = self.active_controller()
            named = {i: n for n, i in self.topology.controllers.items()}
            if active in named:
                return named[active]
            return self.rng.choice(sorted(self.topology.controllers))
        state = self._mine(self.observer.latest())
        if role is Role.LEADER:
            if state is None or state.leader < 0:
                raise NotNow("the partition has no leader to act on")
            return self._name(state.leader)
        bound = self._taken()
        pool = sorted(self._pool(role, state))
        # every bound node avoided while the role has another (a follower drawn on the
        # data partition is not the coordinator, whose transactions go on), those
        # bound here never
        named = set(self.names.values())
        chosen = [b for b in pool if self._name(b) not in named] or \
            [b for b in pool if self._name(b) not in bound]
        if not chosen:
            # the role has no broker to draw (an empty ELR, a follower-less ISR): any
            # unbound broker stands in, and the step's played record says so
            chosen = [b for b in sorted(self.topology.brokers.values())
                      if self.topology.broker_name(b) not in bound]
            if chosen:
                self.substituted = (f"the role {role.value} had no broker to draw "
                                    f"({role.value} {list(pool)}); drawn from the unbound "
                                    "brokers instead")
        if not chosen:
            raise NotNow(f"no broker left for the role {role.value}")
        return self._name(self.rng.choice(chosen))

    def _taken(self) -> set[str]:
        """The nodes a role never draws: those earlier steps chose (`as`), and the
        leader at the start of the partition the step reads (L on the schedule's own,
        C on the coordinator's); that of another only when the role has no other."""
        here = (self.topic, self.partition)
        return {node for name, node in self.names.items()
                if self.start_of.get(name, here) == here}

    @staticmethod
    def _pool(role: Role, state: PartitionState | None) -> Sequence[int]:
        if state is None:
            return ()
        if role is Role.FOLLOWER:
            return [b for b in state.isr if b != state.leader]
        if role is Role.ISR:
            return state.isr
        if role is Role.ELR:
            return state.elr or ()
        return state.replicas or ()

    def _broker(self, name: str) -> int:
        node = self.names.get(name) or self._moved(name)
        broker = self.topology.brokers.get(node)
        if broker is None:
            return -2  # a name not bound yet, or a controller: in no broker set
        return broker

    def _name(self, broker: int) -> str:
        return self.topology.name_of_broker(broker)

    def _ids(self) -> dict[int, str]:
        """Broker ids to the names the schedule bound them to (for what a wait saw)."""
        by_node = {node: name for name, node in self.names.items()}
        return {i: by_node.get(n, n) for n, i in self.topology.brokers.items()}
