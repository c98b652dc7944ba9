"""`reassign`: a partition's replicas changed through AlterPartitionReassignments
(add a spare broker, remove one, or reorder them), sent from the host to a
broker that hears the controllers (cluster.reassignments); it ends with
`reassign-end`: cancelled if still under way (Kafka drops the replicas it was
adding), else left completed, or put back when a removal left fewer replicas
than the replication factor.

KIP-966 lets a reassignment complete (or be cancelled) only with the ISR at min
ISR or more; the controller keeps the ELR to the final replica set. Its lines
carry `topic`, `partition`, `from` and `to`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from elr_harness.cluster import reassignments
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.errors import HarnessError, Refused
from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import (
    ASSIGNMENT,
    Capability,
    FaultPackage,
    HealPhase,
    HealStep,
    Injector,
    Mix,
    NotNow,
    Undo,
    Use,
    detail_of,
    end_each,
    role_of,
    why,
)
from elr_harness.nemesis.targets import Role

ADD, REMOVE, REORDER = "add", "remove", "reorder"


@dataclass(frozen=True)
class Change:
    """One drawn reassignment of one partition."""

    kind: str
    topic: str
    partition: int
    replicas: tuple[int, ...]
    target: tuple[int, ...]
    #: a removal below the replication factor: put back at the end if it completed
    restore: bool


def _members(state: PartitionState, role: Role) -> list[int]:
    """The replicas of the role's set (the ELR's members that are replicas)."""
    chosen = (state.elr or ()) if role is Role.ELR else state.replicas
    return sorted(b for b in chosen if b in state.replicas)


def draw(states: Sequence[PartitionState], brokers: Sequence[int], replication_factor: int,
         role: Role, rng: random.Random) -> Change | None:
    """The change to make, from the observed states and the seeded RNG (the same
    seed and states, in any order, give the same change); None when no observed
    partition has replicas that can change."""
    pool = sorted((s for s in states if s.replicas), key=lambda s: (s.topic, s.partition))
    if role is Role.ELR:
        pool = [s for s in pool if _members(s, role)] or pool
    if not pool:
        return None
    state = rng.choice(pool)
    replicas = list(state.replicas)
    spare = sorted(set(brokers) - set(replicas))
    kinds = [kind for kind, possible in (
        (ADD, bool(spare) and len(replicas) <= replication_factor),
        (REMOVE, len(replicas) >= 2), (REORDER, len(replicas) >= 2)) if possible]
    if not kinds:
        return None
    kind = rng.choice(kinds)
    if kind == ADD:
        target = [*replicas, rng.choice(spare)]
    else:
        member = rng.choice(_members(state, role) or sorted(replicas))
        rest = [b for b in replicas if b != member]
        if kind == REMOVE:
            target = rest
        else:
            target = [*rest, member] if replicas[0] == member else [member, *rest]
    return Change(kind, state.topic, state.partition, tuple(replicas), tuple(target),
                  restore=kind == REMOVE and len(target) < replication_factor)



@dataclass(frozen=True)
class Reassignment:
    """A partition reassignment in force: asked for, not yet ended."""

    topic: str
    partition: int
    #: the replicas observed before (`from`) and the ones asked for (`to`)
    replicas: tuple[int, ...]
    target: tuple[int, ...]
    #: the brokers of both, as the fault's `nodes`
    nodes: list[str]
    #: whether its end puts `replicas` back should it have completed
    restore: bool
    #: the caller's why (mix, role, ...), carried by its end too
    why: dict[str, Any]


def in_force(injector: Injector) -> dict[tuple[str, int], Reassignment]:
    """Reassignments asked for and not yet ended, by (topic, partition)."""
    return injector.kept(PACKAGE.name, dict)


def _broker_names(injector: Injector, ids: Sequence[int]) -> list[str]:
    try:
        return sorted({injector.cluster.broker_by_id(int(i)).spec.name for i in ids})
    except KeyError as err:
        raise HarnessError(f"reassignment names {err.args[0]}") from None


def _admin_addresses(injector: Injector) -> list[str]:
    """Brokers to send a reassignment to, which forward it to the controller:
    none that is down, paused or cut off from the controllers."""
    stale = injector.stale_brokers()
    return [address for address in injector.cluster.bootstrap if address not in stale]


def start(injector: Injector, topic: str, partition: int, replicas: Sequence[int],
          target: Sequence[int], restore: bool = False, step: str | None = None,
          detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """Ask Kafka to move a partition from `replicas` (as observed) to `target`; it
    is in force until `end`. `restore`: should it complete, its end puts
    `replicas` back (a removal that left fewer replicas than the topic's
    replication factor). One that may have half-happened (`info`) is ended like
    any other."""
    key = (topic, partition)
    running = in_force(injector)
    if key in running:
        raise HarnessError(f"{topic}-{partition}: a reassignment is already in force")
    nodes = _broker_names(injector, [*replicas, *target])
    said = detail_of(step, detail)
    record = {"topic": topic, "partition": partition, "from": list(replicas),
              "to": list(target), "restore": restore, **said}
    tracked = Reassignment(topic, partition, tuple(replicas), tuple(target), nodes,
                           restore, said)

    def apply() -> None:
        try:
            reassignments.execute(_admin_addresses(injector), topic, partition, target,
                                  injector.cluster.config.timeouts, injector.connect)
        except Exception as err:
            if not isinstance(err, Refused):
                running[key] = tracked  # it may have started
            raise
        running[key] = tracked

    return injector.record(PACKAGE.recorded, nodes, record, apply)


def end(injector: Injector, topic: str, partition: int, step: str | None = None,
        detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """End a reassignment `start` began: cancelled if it is still under way, else
    left completed, or undone by a reassignment back to its `from` when it was
    asked to restore. The line's `outcome` says which; it carries the start's
    why unless given another."""
    running = in_force(injector)
    tracked = running.get((topic, partition))
    if tracked is None:
        raise HarnessError(f"{topic}-{partition}: no reassignment in force to end")
    record = {"topic": topic, "partition": partition, "from": list(tracked.replicas),
              "to": list(tracked.target),
              **detail_of(step, tracked.why if detail is None else detail)}

    def apply() -> dict[str, Any]:
        addresses, timeouts = _admin_addresses(injector), injector.cluster.config.timeouts
        outcome = reassignments.cancel(addresses, topic, partition, timeouts,
                                       injector.connect)
        restored = outcome is reassignments.Outcome.COMPLETED and tracked.restore
        if restored:
            try:
                reassignments.execute(addresses, topic, partition, tracked.replicas,
                                      timeouts, injector.connect)
            except Refused as err:  # the end did something: not a fail
                raise HarnessError(f"putting {list(tracked.replicas)} back: {err}") from err
        del running[(topic, partition)]
        return {"outcome": str(outcome), "restored": restored}

    return injector.record(Fault.REASSIGN_END, tracked.nodes, record, apply)


def _end_all(injector: Injector, said: dict[str, Any]) -> None:
    end_each(sorted(in_force(injector)), lambda key: end(injector, *key, **said))


def inject(mix: Mix, package: FaultPackage) -> Undo | None:
    """Start the drawn reassignment; its undo ends it (cancel or leave completed)."""
    role = role_of(mix, package)
    change = draw(mix.states(), sorted(mix.topology.brokers.values()), mix.replication_factor,
                  role, mix.rng)
    if change is None:
        mix.log(f"{package.name} skipped: no observed partition whose replicas can change")
        return None
    detail = {**why(package, role), "change": change.kind}
    start(mix.injector, change.topic, change.partition, change.replicas, change.target,
          restore=change.restore, detail=detail)

    def undo() -> None:
        try:
            end(mix.injector, change.topic, change.partition, detail=detail)
        except Exception as err:  # noqa: BLE001 - recorded as info; heal_all ends it
            mix.log(f"{package.name}: ending {change.topic}-{change.partition} failed: {err}")

    return undo


def act(use: Use, target: None, states: Sequence[PartitionState], role: Role) -> Undo:
    """A reassignment of one of `states`' partitions, drawn with the role's members
    (an ELR member's replica moved, for Role.ELR)."""
    change = draw(states, sorted(use.topology.brokers.values()), use.replication_factor,
                  role, use.rng)
    if change is None:
        raise NotNow("no reassignment of the partition's replicas to make")
    use.notes["replicas"] = f"{change.kind}: {list(change.replicas)} -> {list(change.target)}"
    start(use.injector, change.topic, change.partition, change.replicas, change.target,
          restore=change.restore, step=use.step, detail={**use.detail, "change": change.kind})
    return lambda: end(use.injector, change.topic, change.partition, **use.said())


def step_of(line: dict[str, Any], topology: Any, settings: Any) -> dict[str, Any]:
    """The partition and the role of the replica the mix moved (drawn again)."""
    detail = line["detail"]
    return {"target": detail.get("role") or Role.ANY.value,
            "partition": f"{detail['topic']}-{detail['partition']}"}


PACKAGE = FaultPackage(
    "reassign", Fault.REASSIGN, (Role.ANY, Role.ELR), "#e7298a", ASSIGNMENT, inject, act=act,
    step_of=step_of,
    # ended before the restarts (one a stopped replica held back is cancelled, not
    # completed by its return), and again after them (an end that failed while
    # the cluster had no controller)
    heals=(HealStep(HealPhase.ASSIGNMENT, _end_all, strict=False, retried_later=True),
           HealStep(HealPhase.ASSIGNMENT_AGAIN, _end_all, strict=False)),
    capabilities=frozenset({Capability.REASSIGNS}),
    help="reassign a partition's replicas (add a spare broker, remove one, or reorder); "
         "cancelled at the end if still under way, else left completed")
