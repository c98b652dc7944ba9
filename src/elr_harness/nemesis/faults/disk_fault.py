"""`disk-fault`: one log directory of a leader or ISR member fails its writes
and/or fsyncs with EIO or ENOSPC for a while, through the FUSE page-cache
layer, while the broker runs on; it ends with the disk healthy and the broker
restarted (recorded as the `start` that ends it).

Brokers get two log directories when this kind is in the mix (JBOD; the
package's cluster setting), so Kafka takes the failed directory offline and
the broker lives on: the controller moves leadership and ISR membership of
that directory's partitions away (KIP-858's path, where ELR handling had bugs).
Kafka keeps a failed directory offline until the broker restarts, hence the
restart at the end.

The directory, errno, operations and the least time it fails are drawn from
the mix's seeded RNG (RunConfig.disk_fault). A failed fsync forgets the file's
unsynced data (`"dropped": true` on the fault line): HISTORY.md counts such a
fault against the budget like a page-cache loss, so it is only injected while
every ISR is full, as a page-cache loss is.
"""

from __future__ import annotations

import time

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import PROCESSES, FaultPackage, Mix, Undo, role_of, why
from elr_harness.nemesis.needs import Layer, Setting
from elr_harness.nemesis.targets import Role, all_isr_full


def inject(mix: Mix, package: FaultPackage) -> Undo | None:
    """Draw the fault, fail the directory; the undo waits out its hold and ends it."""
    config = mix.disk_fault
    operations = tuple(mix.rng.choice(config.operations).split("+"))
    errno_name = mix.rng.choice(config.errnos)
    hold_s = round(mix.rng.uniform(config.min_hold_s, config.max_hold_s), 3)
    drops = config.drop_on_failed_fsync and "fsync" in operations
    if drops and not all_isr_full(mix.states(), mix.replication_factor):
        mix.log(f"{package.name} skipped: it may drop unsynced data and not every ISR is "
                "full (fault budget)")
        return None
    role = role_of(mix, package)
    target, detail = mix.target(role), why(package, role)
    directory = mix.rng.choice(mix.injector.log_dirs())
    failing_from = time.monotonic()
    mix.injector.disk_fault(target, directory, errno_name, operations, drops,
                            detail={**detail, "hold_s": hold_s})

    def undo() -> None:
        mix.stop_event.wait(max(0.0, failing_from + hold_s - time.monotonic()))
        mix.injector.end_disk_fault(target, detail=detail)

    return undo


PACKAGE = FaultPackage(
    "disk-fault", Fault.DISK_FAULT, (Role.LEADER, Role.ISR), "#8c510a", PROCESSES, inject,
    layers=frozenset({Layer.PAGE_CACHE}),
    # two log dirs per broker (unless chosen), so one can fail while the broker lives
    cluster_settings=(Setting("cluster.log_dirs", lambda run: run.disk_fault.log_dirs),),
    help="fail writes and/or fsyncs (EIO or ENOSPC) in one log dir of a leader or ISR "
         "member while it runs (two log dirs per broker); restart it with the disk healthy")
