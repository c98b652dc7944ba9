"""`feature-change`: turn ELR off (eligible.leader.replicas.version downgraded to
0, UpdateFeatures through Kafka's tools), then on again; its lines carry
`feature`, `from` and `to`, and the line that puts it back `restore: true`.

While it is off KIP-966 promises nothing about unclean shutdowns: the injector
is told (`protection_off`), so no data-dropping fault is injected meanwhile
(base.unprotected); and it is not turned off while a broker that lost unflushed
data is down, or before every ISR is full again after such a loss
(base.loss_outstanding): that loss would come back unprotected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from elr_harness.cluster.observe import PartitionState
from elr_harness.core.history import ELR_FEATURE, RESTORE, Fault
from elr_harness.nemesis.faults.base import (
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
    loss_outstanding,
    why,
)
from elr_harness.nemesis.faults.config_changes import read_with_tools, record_change


def _changes(injector: Injector) -> dict[str, tuple[int, int]]:
    """What is (or may be) changed: feature -> (level before, level now)."""
    return injector.kept(PACKAGE.name, dict)


def _protection(injector: Injector) -> None:
    """Tell the injector whether a change turned ELR off (or may have) and nothing
    restored it."""
    change = _changes(injector).get(ELR_FEATURE)
    injector.protection_off = change is not None and change[1] == 0


def level(injector: Injector, feature: str) -> int | None:
    """The finalized level of `feature`; None when the cluster does not know it."""
    return read_with_tools(injector, lambda node: injector.admin.feature_level(node, feature))


def change(injector: Injector, feature: str, to: int, was: int, step: str | None = None,
           detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """Upgrade or downgrade `feature` from level `was` to `to`. Turning ELR off is
    refused while a broker that lost its page cache is down (it would come back
    with ELR off: KIP-966's protection would be gone for the very shutdown it is
    about). `restore` puts it back."""
    def apply() -> None:
        injector.admin.update_feature(injector.tool_nodes()[0], feature, to, was)

    def refuse() -> str | None:
        if feature == ELR_FEATURE and to == 0 and injector.lost_page_cache:
            return (f"{', '.join(sorted(injector.lost_page_cache))} lost its page cache and "
                    "is down")
        return None

    return record_change(injector, PACKAGE.recorded, _changes(injector), feature,
                         {"feature": feature, "from": was, "to": to}, step, detail, apply,
                         refuse, changed=lambda: _protection(injector))


def restore(injector: Injector, feature: str, step: str | None = None,
            detail: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Put back what `change` changed (None if nothing is)."""
    changes = _changes(injector)
    if feature not in changes:
        return None
    before, now = changes[feature]
    return change(injector, feature, before, now, step, {**(detail or {}), RESTORE: True})


def _restore_all(injector: Injector, said: dict[str, Any]) -> None:
    end_each(sorted(_changes(injector)), lambda feature: restore(injector, feature, **said))


def inject(mix: Mix, package: FaultPackage) -> Undo | None:
    """Downgrade the ELR feature to 0 from the level the cluster has now."""
    reason = loss_outstanding(mix.injector, mix.states(), mix.replication_factor)
    if reason:
        mix.log(f"{package.name} skipped: {reason} (fault budget)")
        return None
    was = level(mix.injector, ELR_FEATURE)
    if not was:
        mix.log(f"{package.name} skipped: {ELR_FEATURE} is at {was} (ELR is off)")
        return None
    detail = why(package, None)
    change(mix.injector, ELR_FEATURE, 0, was, detail=detail)
    return lambda: restore(mix.injector, ELR_FEATURE, detail=detail)


def act(use: Use, target: None, states: Sequence[PartitionState], to: int = 0) -> Undo:
    """The ELR feature turned to `to` from the level it has now; not while a loss of
    unflushed data is not over in `states` (the observed partitions), as a mix."""
    reason = loss_outstanding(use.injector, states, use.replication_factor)
    if reason:
        raise NotNow(f"{PACKAGE.name}: {reason} (fault budget)")
    was = level(use.injector, ELR_FEATURE)
    if not was:
        raise NotNow(f"{ELR_FEATURE} is at {was} (ELR is off)")
    use.notes["feature"] = f"{ELR_FEATURE}: {was} -> {to}"
    change(use.injector, ELR_FEATURE, to, was, use.step, use.detail)
    return lambda: restore(use.injector, ELR_FEATURE, **use.said())


def step_of(line: dict[str, Any], topology: Any, settings: Any) -> dict[str, Any]:
    return {"to": line["detail"]["to"]}


PACKAGE = FaultPackage(
    "feature-change", Fault.FEATURE_CHANGE, (), "#3182bd", CONFIG, inject, act=act,
    step_of=step_of,
    heals=(HealStep(HealPhase.FEATURES, _restore_all, strict=False),),
    capabilities=frozenset({Capability.CHANGES_ELR_FEATURE}),
    help="turn ELR off (eligible.leader.replicas.version downgraded to 0), then on "
         "again; no page-cache loss while it is off")
