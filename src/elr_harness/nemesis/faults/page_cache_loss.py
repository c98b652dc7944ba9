"""`page-cache-loss`: power loss on a leader or ISR member. Kafka is killed (-9)
and every byte it wrote but never fsynced is thrown away (the page-cache FUSE
layer under the brokers' log dirs, nemesis/pagecache/control.py); it finds no
clean-shutdown marker when it is started again.

It counts against KIP-966's fault budget (min ISR - 1 such losses between full
ISRs), so a mix injects it only while every observed partition has a full ISR,
and never while the ELR feature is off: KIP-966 promises nothing about an
unclean shutdown then (the injector refuses it too: base.unprotected).
"""

from __future__ import annotations

from typing import Any

from elr_harness.core.errors import HarnessError
from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import (
    PROCESSES,
    RESTART,
    Capability,
    FaultPackage,
    Injector,
    Mix,
    Undo,
    Use,
    detail_of,
    role_of,
    unprotected,
    why,
)
from elr_harness.nemesis.needs import Layer
from elr_harness.nemesis.targets import Role, all_isr_full


def power_loss(injector: Injector, name: str, step: str | None = None,
               detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """Kill -9 Kafka, then drop every byte it never fsynced. Kafka stays down
    (start it later)."""
    layer = injector.page_cache
    if layer is None:
        raise HarnessError("page-cache-loss needs the page-cache layer under the brokers")
    node = injector.node(name)
    injector.thaw(name, step, detail)

    def apply() -> dict[str, Any]:
        injector.page_cache_losses += 1
        injector.lost_page_cache.add(name)
        injector.take_down(name, "KILL")
        report = layer.power_loss(node)
        return {"bytes_dropped": report.get("bytes_dropped", {}),
                "total_bytes_dropped": report.get("total_bytes", 0)}

    return injector.record(Fault.PAGE_CACHE_LOSS, [name], detail_of(step, detail), apply,
                           lambda: unprotected(injector))


def inject(mix: Mix, package: FaultPackage) -> Undo | None:
    """Only while every observed partition has a full ISR: no partition then loses
    unflushed data on more than one replica between two full-ISR points (within
    KIP-966's budget of min.insync.replicas - 1 for min ISR >= 2)."""
    reason = unprotected(mix.injector)
    if reason:
        mix.log(f"{package.name} skipped: {reason}")
        return None
    if not all_isr_full(mix.states(), mix.replication_factor):
        mix.log(f"{package.name} skipped: not every ISR is full (fault budget)")
        return None
    role = role_of(mix, package)
    target, detail = mix.target(role), why(package, role)
    power_loss(mix.injector, target, detail=detail)
    return lambda: mix.injector.start(target, detail=detail)


def act(use: Use, target: str) -> Undo:
    """The target's power lost; the caller keeps the budget (a guided round does)."""
    power_loss(use.injector, target, use.step, use.detail)
    use.notes["dropped"] = True
    return lambda: use.injector.start(target, **use.said())


PACKAGE = FaultPackage(
    "page-cache-loss", Fault.PAGE_CACHE_LOSS, (Role.LEADER, Role.ISR), "#000000", PROCESSES,
    inject, act=act, heals=(RESTART,), layers=frozenset({Layer.PAGE_CACHE}),
    capabilities=frozenset({Capability.TAKES_OUT_OF_ISR, Capability.KEEPS_FENCED,
                            Capability.SHUTS_DOWN, Capability.STOPS_LEADING,
                            Capability.UNCLEAN_SHUTDOWN, Capability.DROPS_UNFLUSHED_DATA}),
    acts_on="brokers",
    help="power loss on a leader or ISR member: kill -9 and drop its unsynced writes "
         "(only while every ISR is full and ELR is on)")
