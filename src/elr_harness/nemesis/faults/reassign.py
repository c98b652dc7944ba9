"""`reassign`: change one partition's replicas while the other faults run (KIP-455's
AlterPartitionReassignments), cancelled at the fault's end if still under way,
else left completed.

KIP-966 lets a reassignment complete only once every target replica is in the
ISR, and keeps ELR within the replicas it ends with; the observer's `replicas`
and `elr` show both. The change is drawn from the mix's seeded RNG over what
was observed: a partition (for the `elr` role one whose ELR is not empty, when
there is one), then one of the changes the cluster allows:

- `add`: a broker that holds no replica of it (a spare) appended as a follower.
  Only up to replication factor + 1 replicas: a completed add is left in force,
  and a later `remove` takes the partition back down.
- `remove`: one replica dropped (a member of the role's set: any replica, or an
  ELR member). One that leaves fewer replicas than the replication factor is
  remove-then-add-back: should it complete, its end reassigns the partition back
  to the replicas it had (with brokers == replication factor there is never a
  spare, so this and `reorder` are all there is). Otherwise the partition would
  stay below its replication factor: its ISR never full again, no page-cache
  loss allowed, and the run's recovery waiting in vain.
- `reorder`: the same replicas, the role's member moved to the front (the
  preferred leader), or to the back when it is there already.

Its lines: `reassign` with detail topic, partition, `from`, `to`, `change` and
`restore`; its end `reassign-end` with the same and `outcome` (`cancelled` or
`completed`) and `restored`. It acts on the assignment alone, so it may run in
a mix that overlaps one over the network and one over the processes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import ASSIGNMENT, FaultPackage, Mix, Undo, role_of, why
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


def inject(mix: Mix, package: FaultPackage) -> Undo | None:
    """Start the drawn reassignment; its undo ends it (cancel or leave completed)."""
    role = role_of(mix, package)
    change = draw(mix.states(), sorted(mix.topology.brokers.values()), mix.replication_factor,
                  role, mix.rng)
    if change is None:
        mix.log(f"{package.name} skipped: no observed partition whose replicas can change")
        return None
    detail = {**why(package, role), "change": change.kind}
    mix.injector.reassign(change.topic, change.partition, change.replicas, change.target,
                          restore=change.restore, detail=detail)

    def undo() -> None:
        try:
            mix.injector.end_reassign(change.topic, change.partition, detail=detail)
        except Exception as err:  # noqa: BLE001 - recorded as info; heal_all ends it
            mix.log(f"{package.name}: ending {change.topic}-{change.partition} failed: {err}")

    return undo


PACKAGE = FaultPackage(
    "reassign", Fault.REASSIGN, (Role.ANY, Role.ELR), "#e7298a", ASSIGNMENT, inject,
    help="reassign a partition's replicas (add a spare broker, remove one, or reorder); "
         "cancelled at the end if still under way, else left completed")
