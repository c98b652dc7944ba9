"""Choosing a fault's target by role, as a pure function of what was observed.

The mix picks "a partition's leader", "an ISR member", "the active controller"
and so on from the observer's latest partition states. Kept apart from the
RNG's owner and from the cluster so that one seed and one observed state give
one target (`--seed` reproduces targets, not only kinds), and so the choice is
testable without containers.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from elr_harness.cluster.node import Role as NodeRole
from elr_harness.cluster.observe import PartitionState


class Role(StrEnum):
    """How a target is chosen; recorded as a fault's `detail.role`."""

    LEADER = "leader"
    #: An ISR member that is not the leader (a replica that must keep fetching).
    FOLLOWER = "follower"
    ISR = "isr"
    ELR = "elr"
    ANY = "any"
    ACTIVE_CONTROLLER = "active-controller"
    #: The transaction coordinator of the run's first transactional producer: the
    #: leader of its transactional.id's `__transaction_state` partition (a schedule
    #: step's role; a mix draws no such target).
    COORDINATOR = "coordinator"


#: Broker roles: one (randomly chosen) partition's leader, a follower in its ISR, a
#: member of its ISR or ELR, or any broker.
BROKER_ROLES = (Role.LEADER, Role.FOLLOWER, Role.ISR, Role.ELR, Role.ANY)


@dataclass(frozen=True)
class Topology:
    """Node names and ids by role: what the targets are chosen among."""

    brokers: Mapping[str, int]
    controllers: Mapping[str, int]

    @classmethod
    def of(cls, nodes: Iterable[Any]) -> Topology:
        """From a cluster's nodes (anything with `.spec.name/.node_id/.role`)."""
        brokers, controllers = {}, {}
        for node in nodes:
            spec = node.spec
            is_controller = spec.role == NodeRole.CONTROLLER
            (controllers if is_controller else brokers)[spec.name] = spec.node_id
        return cls(brokers, controllers)

    @property
    def node_names(self) -> list[str]:
        return sorted({*self.brokers, *self.controllers})

    def broker_name(self, broker_id: int) -> str | None:
        for name, node_id in self.brokers.items():
            if node_id == broker_id:
                return name
        return None

    def name_of_broker(self, broker_id: int) -> str:
        """The node of a broker the cluster observed (RuntimeError: none of ours)."""
        name = self.broker_name(broker_id)
        if name is None:
            raise RuntimeError(f"broker {broker_id} is no node of the cluster")
        return name


def choose_target(role: Role | str, states: Sequence[PartitionState], topology: Topology,
                  rng: random.Random, active_controller: int | None = None) -> str:
    """The node a fault acts on.

    Broker roles take one partition at random (sorted first, so the order the
    observer listed them in does not matter) and a random member of its leader,
    followers (ISR members but the leader; only partitions that have one are
    drawn from), ISR or ELR; with nothing observed, or no such member, any broker. The
    active controller is `active_controller` (an id, asked of the quorum by the
    caller), or any controller when that is unknown.
    """
    role = Role(role)
    if role is Role.COORDINATOR:
        raise ValueError("the coordinator is a schedule step's role (nemesis.schedule.played "
                         "resolves it by the run's transactional.id), drawn by no mix")
    if role is Role.ACTIVE_CONTROLLER:
        for name, node_id in sorted(topology.controllers.items()):
            if active_controller is not None and node_id == active_controller:
                return name
        return rng.choice(sorted(topology.controllers))
    if role is Role.LEADER:
        pool = [s for s in states if s.leader >= 0]
    elif role is Role.FOLLOWER:
        pool = [s for s in states if s.leader >= 0 and _followers(s)]
    else:
        pool = list(states)
    candidates: list[int] = []
    if pool:
        state = rng.choice(sorted(pool, key=lambda s: (s.topic, s.partition)))
        if role is Role.LEADER:
            candidates = [state.leader]
        elif role is Role.FOLLOWER:
            candidates = _followers(state)
        elif role is Role.ISR:
            candidates = list(state.isr)
        elif role is Role.ELR:
            candidates = list(state.elr or [])
    known = [b for b in candidates if topology.broker_name(b) is not None]
    if not known:
        return rng.choice(sorted(topology.brokers))
    name = topology.broker_name(rng.choice(sorted(known)))
    assert name is not None
    return name


def _followers(state: PartitionState) -> list[int]:
    return [b for b in state.isr if b != state.leader]


def isr_full(state: PartitionState, replication_factor: int) -> bool:
    """The ISR holds every replica the description names (a reassignment changes
    them), or replication_factor members when it named none: the checker's full
    ISR (checker/budget.full_isr), where a fault budget's window ends."""
    if state.replicas:
        return set(state.replicas) <= set(state.isr)
    return len(state.isr) >= replication_factor


def all_isr_full(states: Sequence[PartitionState], replication_factor: int) -> bool:
    """Every observed partition has a full ISR (nothing observed: not known to be)."""
    return bool(states) and all(isr_full(s, replication_factor) for s in states)


# -- the transaction coordinator ---------------------------------------------------


def java_string_hash(text: str) -> int:
    """Java's String.hashCode of `text` (a signed 32-bit int over its UTF-16 units)."""
    value = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        value = (31 * value + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def transaction_partition(transactional_id: str, partitions: int) -> int:
    """The `__transaction_state` partition that holds `transactional_id`'s state, as
    Kafka computes it (TransactionStateManager.partitionFor: Utils.abs(hashCode) %
    partitions, where Utils.abs(Integer.MIN_VALUE) is 0)."""
    if partitions < 1:
        raise ValueError(f"{partitions} partitions of __transaction_state")
    code = java_string_hash(transactional_id)
    return (0 if code == -(1 << 31) else abs(code)) % partitions


def coordinator_of(states: Sequence[PartitionState], transactional_id: str, topic: str,
                   partitions: int) -> tuple[int, int | None]:
    """`transactional_id`'s `topic` (__transaction_state) partition and the broker
    observed leading it (None: not observed, or no leader), from an observed
    sample. The partition count is the observed one (`partitions` when none is)."""
    seen = {s.partition: s for s in states if s.topic == topic}
    number = transaction_partition(transactional_id, len(seen) or partitions)
    state = seen.get(number)
    return number, (state.leader if state is not None and state.leader >= 0 else None)
