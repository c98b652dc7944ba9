"""`min-isr-change`: raise or lower min.insync.replicas, of a topic or of the
whole cluster (the brokers' dynamic default), within 1..RF; put back when the
fault ends.

KIP-966 (KAFKA-16540): the controller clears the ELR on such a change, of the
topic or of every topic (ConfigurationControlManager writes a ClearElrRecord),
since replicas that were eligible under the old min ISR may lack records
committed under the new one. Its lines carry `topic` (null for the cluster
default), `from` and `to`; the line that puts it back has `restore: true` and
ends it (harness.core.history.RESTORED_BY_SELF). The checker's fault budget
takes the lowest min ISR in force.
"""

from __future__ import annotations

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import CONFIG, FaultPackage, Mix, Undo, why


def draw(mix: Mix, current: int) -> int | None:
    """A new min ISR within 1..RF other than `current` (None: there is none)."""
    values = [v for v in range(1, mix.replication_factor + 1) if v != current]
    return mix.rng.choice(values) if values else None


def inject(mix: Mix, package: FaultPackage) -> Undo | None:
    """A topic the observer saw, or the cluster default (one more choice among the
    topics), from the seeded RNG; its min ISR as the cluster has it now; a new one."""
    topic = mix.rng.choice([None, *sorted({s.topic for s in mix.states()})])
    where = "the cluster default" if topic is None else f"topic {topic}"
    current = mix.injector.min_isr(topic)
    if current is None:
        mix.log(f"{package.name} skipped: {where} sets no min.insync.replicas")
        return None
    to = draw(mix, current)
    if to is None:
        mix.log(f"{package.name} skipped: no other min ISR within 1..RF for {where}")
        return None
    detail = why(package, None)
    mix.injector.min_isr_change(topic, to, current, detail=detail)
    return lambda: mix.injector.restore_min_isr(topic, detail=detail)


PACKAGE = FaultPackage(
    "min-isr-change", Fault.MIN_ISR_CHANGE, (), "#1b9e77", CONFIG, inject,
    help="raise or lower min.insync.replicas of a topic or the cluster default "
         "(within 1..RF; the controller must clear ELR, KAFKA-16540), then put it back")
