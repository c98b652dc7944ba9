"""`page-cache-loss`: power loss on one broker (kill -9, then every byte it never
fsynced dropped by the FUSE page-cache layer), started again when the fault ends.
The one kind that counts against KIP-966's fault budget (the contract's
BUDGET_FAULTS)."""

from __future__ import annotations

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import PROCESSES, FaultPackage, Mix, Undo, role_of, why
from elr_harness.nemesis.needs import Layer
from elr_harness.nemesis.targets import Role, all_isr_full


def inject(mix: Mix, package: FaultPackage) -> Undo | None:
    """Only while every observed partition has a full ISR: no partition then loses
    unflushed data on more than one replica between two full-ISR points (within
    KIP-966's budget of min.insync.replicas - 1 for min ISR >= 2). Never while a
    feature change has turned ELR off: KIP-966 promises nothing about an unclean
    shutdown then (the injector refuses it too)."""
    if mix.injector.elr_feature_off:
        mix.log(f"{package.name} skipped: the ELR feature is off (KIP-966 promises "
                "nothing about unclean shutdowns then)")
        return None
    if not all_isr_full(mix.states(), mix.replication_factor):
        mix.log(f"{package.name} skipped: not every ISR is full (fault budget)")
        return None
    role = role_of(mix, package)
    target, detail = mix.target(role), why(package, role)
    mix.injector.page_cache_loss(target, detail=detail)
    return lambda: mix.injector.start(target, detail=detail)


PACKAGE = FaultPackage(
    "page-cache-loss", Fault.PAGE_CACHE_LOSS, (Role.LEADER, Role.ISR), "#000000", PROCESSES,
    inject, layers=frozenset({Layer.PAGE_CACHE}),
    help="power loss on a leader or ISR member: kill -9 and drop its unsynced writes "
         "(only while every ISR is full and ELR is on)")
