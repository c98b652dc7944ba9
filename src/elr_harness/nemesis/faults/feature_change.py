"""`feature-change`: turn ELR off (the `eligible.leader.replicas.version`
feature downgraded to 0, UpdateFeatures) and back on when the fault ends.

With ELR off the controller keeps no ELR, and KIP-966 promises nothing about
unclean shutdowns: the mix injects no page-cache loss while it is off
(nemesis.faults.page_cache_loss) nor any disk fault that drops unflushed data,
and this kind waits while such a loss is outstanding: its broker still down, or
back but not yet in every ISR (it would rejoin with ELR off, past the protection
the loss was judged under). Its lines
carry `feature`, `from` and `to`; the line that puts it back has `restore: true`
and ends it (harness.core.history.RESTORED_BY_SELF).
"""

from __future__ import annotations

from elr_harness.cluster.admin_tools import ELR_FEATURE
from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import CONFIG, FaultPackage, Mix, Undo, why
from elr_harness.nemesis.targets import all_isr_full


def outstanding_loss(mix: Mix) -> str | None:
    """Why a page-cache loss is not over yet (None: none is)."""
    if mix.injector.lost_page_cache:
        return f"{', '.join(sorted(mix.injector.lost_page_cache))} lost its page cache and is down"
    if mix.injector.page_cache_losses and not all_isr_full(mix.states(),
                                                           mix.replication_factor):
        return ("a page-cache loss or a disk fault dropped unflushed data and not every "
                "ISR is full again")
    return None


def inject(mix: Mix, package: FaultPackage) -> Undo | None:
    """Downgrade the ELR feature to 0 from the level the cluster has now."""
    reason = outstanding_loss(mix)
    if reason:
        mix.log(f"{package.name} skipped: {reason} (fault budget)")
        return None
    current = mix.injector.feature_level(ELR_FEATURE)
    if not current:
        mix.log(f"{package.name} skipped: {ELR_FEATURE} is at {current} (ELR is off)")
        return None
    detail = why(package, None)
    mix.injector.feature_change(ELR_FEATURE, 0, current, detail=detail)
    return lambda: mix.injector.restore_feature(ELR_FEATURE, detail=detail)


PACKAGE = FaultPackage(
    "feature-change", Fault.FEATURE_CHANGE, (), "#3182bd", CONFIG, inject,
    help="turn ELR off (eligible.leader.replicas.version downgraded to 0), then on "
         "again; no page-cache loss while it is off")
