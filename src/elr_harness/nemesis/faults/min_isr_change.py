"""`min-isr-change`: raise or lower min.insync.replicas, of a topic or of the
whole cluster (the brokers' dynamic default), within 1..RF; put back when the
fault ends.

KIP-966 (KAFKA-16540): the controller clears the ELR on such a change, of the
topic or of every topic (ConfigurationControlManager writes a ClearElrRecord),
since replicas that were eligible under the old min ISR may lack records
committed under the new one. Its lines carry `topic` (null for the cluster
default), `from` and `to`; the line that puts it back has `restore: true` and
ends it (harness.core.history.RESTORED_BY_SELF). The checker's fault budget
takes the lowest min ISR in force. Kafka's own tools make the change, in a node
that can run them (the injector's tool_nodes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from elr_harness.core.history import RESTORE, Fault
from elr_harness.nemesis.faults.base import (
    CLUSTER_SCOPE,
    CONFIG,
    Capability,
    FaultPackage,
    HealPhase,
    HealStep,
    Injector,
    Mix,
    NotNow,
    Undo,
    Use,
    end_each,
    why,
)
from elr_harness.nemesis.faults.config_changes import read_with_tools, record_change


def _changes(injector: Injector) -> dict[str | None, tuple[int, int]]:
    """What is (or may be) changed: topic (None: the cluster default) -> (before, now)."""
    return injector.kept(PACKAGE.name, dict)


def current(injector: Injector, topic: str | None) -> int | None:
    """The topic's own min.insync.replicas (None: the cluster default); None when
    none is set there."""
    return read_with_tools(injector, lambda node: injector.admin.min_isr(node, topic))


def change(injector: Injector, topic: str | None, to: int, was: int, step: str | None = None,
           detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """Set min.insync.replicas of `topic` (None: the cluster default) from `was` to
    `to`; `restore` puts it back."""
    def apply() -> None:
        injector.admin.alter_min_isr(injector.tool_nodes()[0], topic, to)

    return record_change(injector, PACKAGE.recorded, _changes(injector), topic,
                         {"topic": topic, "from": was, "to": to}, step, detail, apply)


def restore(injector: Injector, topic: str | None, step: str | None = None,
            detail: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Put back what `change` changed on `topic` (None if nothing is)."""
    changes = _changes(injector)
    if topic not in changes:
        return None
    before, now = changes[topic]
    return change(injector, topic, before, now, step, {**(detail or {}), RESTORE: True})


def _restore_all(injector: Injector, said: dict[str, Any]) -> None:
    """The cluster default first, then each topic's own."""
    topics = sorted(_changes(injector), key=lambda t: (t is not None, t or ""))
    end_each(topics, lambda topic: restore(injector, topic, **said))


def draw(mix: Mix, current_value: int) -> int | None:
    """A new min ISR within 1..RF other than `current_value` (None: there is none)."""
    values = [v for v in range(1, mix.replication_factor + 1) if v != current_value]
    return mix.rng.choice(values) if values else None


def inject(mix: Mix, package: FaultPackage) -> Undo | None:
    """A topic the observer saw, or the cluster default (one more choice among the
    topics), from the seeded RNG; its min ISR as the cluster has it now; a new one."""
    topic = mix.rng.choice([None, *sorted({s.topic for s in mix.states()})])
    where = "the cluster default" if topic is None else f"topic {topic}"
    was = current(mix.injector, topic)
    if was is None:
        mix.log(f"{package.name} skipped: {where} sets no min.insync.replicas")
        return None
    to = draw(mix, was)
    if to is None:
        mix.log(f"{package.name} skipped: no other min ISR within 1..RF for {where}")
        return None
    detail = why(package, None)
    change(mix.injector, topic, to, was, detail=detail)
    return lambda: restore(mix.injector, topic, detail=detail)


def act(use: Use, target: None, topic: str | None, choose: Callable[[int], int],
        fallback: int) -> Undo:
    """Change `topic`'s min ISR (None: the cluster default's) to choose(its min ISR
    now; `fallback` when the topic has none of its own)."""
    was = current(use.injector, topic) or fallback
    to = choose(was)
    if to == was:
        raise NotNow(f"no other min ISR than {was} to choose for {topic}")
    use.notes["min-isr"] = f"{topic}: {was} -> {to}"
    change(use.injector, topic, to, was, use.step, use.detail)
    return lambda: restore(use.injector, topic, **use.said())


def step_of(line: dict[str, Any], topology: Any, settings: Any) -> dict[str, Any]:
    """The new min ISR, on the topic the mix drew or the cluster default."""
    topic = line["detail"].get("topic")
    where = {"scope": CLUSTER_SCOPE} if topic is None else {"partition": f"{topic}-0"}
    return {"to": line["detail"]["to"], **where}


PACKAGE = FaultPackage(
    "min-isr-change", Fault.MIN_ISR_CHANGE, (), "#1b9e77", CONFIG, inject, act=act,
    step_of=step_of,
    heals=(HealStep(HealPhase.CONFIG, _restore_all, strict=False),),
    capabilities=frozenset({Capability.CHANGES_MIN_ISR}),
    help="raise or lower min.insync.replicas of a topic or the cluster default "
         "(within 1..RF; the controller must clear ELR, KAFKA-16540), then put it back")
