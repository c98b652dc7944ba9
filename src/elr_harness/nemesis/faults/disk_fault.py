"""`disk-fault`: one log directory of a leader or ISR member fails its writes
and/or fsyncs with EIO or ENOSPC for a while, through the FUSE page-cache
layer, while the broker runs on; it ends with the disk healthy and the broker
restarted (recorded as the `start` that ends it).

Brokers get two log directories when this kind is in the mix (JBOD; its cluster
setting), so Kafka takes the failed directory offline and the broker lives on:
the controller moves leadership and ISR membership of that directory's
partitions away (KIP-858's path, where ELR handling had bugs). Kafka keeps a
failed directory offline until the broker restarts, hence the restart at the
end.

The directory, errno, operations and the least time it fails are drawn from
the mix's seeded RNG ([run.faults.disk-fault]). A failed fsync forgets the
file's unsynced data (`"dropped": true` on the fault line): HISTORY.md counts
such a fault against the budget like a page-cache loss, so it is only injected
while every ISR is full, as a page-cache loss is, and never while the ELR
feature is off.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from elr_harness.cluster.kraft import broker_log_dirs
from elr_harness.core.errors import HarnessError
from elr_harness.core.history import Fault
from elr_harness.core.validate import Invalid, boolean, each, integer, one_of, text
from elr_harness.nemesis.faults.base import (
    PROCESSES,
    Capability,
    FaultPackage,
    HealPhase,
    HealStep,
    Injector,
    Mix,
    Undo,
    Use,
    detail_of,
    role_of,
    unprotected,
    why,
)
from elr_harness.nemesis.needs import Layer, Setting
from elr_harness.nemesis.pagecache.pagecache_faults import ERRNOS, OPERATIONS, DiskFault
from elr_harness.nemesis.targets import Role, all_isr_full


@dataclass(frozen=True)
class DiskFaultSettings:
    """How one of a broker's log directories fails, drawn from the run's seeded RNG
    ([run.faults.disk-fault] in --config)."""

    #: Errors the failing directory answers with, one drawn per fault.
    errnos: tuple[str, ...] = tuple(ERRNOS)
    #: What fails, one entry drawn per fault: operations joined by "+".
    operations: tuple[str, ...] = ("fsync", "write", "fsync+write")
    #: How long the directory fails at least, drawn between these (the fault lasts
    #: the mix's interval if that is longer). Above the brokers' high-watermark
    #: checkpoint interval (5 s, fsynced in every log dir), so Kafka meets the
    #: error even where no record is written.
    min_hold_s: float = 6.0
    max_hold_s: float = 12.0
    #: A failed fsync forgets the file's unsynced data (Linux after a writeback
    #: error): such a fault is recorded `"dropped": true` and, like a page-cache
    #: loss, injected only while every ISR is full.
    drop_on_failed_fsync: bool = True
    #: Log directories per broker while the kind is in the mix, unless chosen
    #: (cluster.log_dirs): with two, one fails while the broker lives on.
    log_dirs: int = 2


def _operations(value: str) -> str:
    """Some of the failing operations joined by '+'."""
    text(value, 100)
    parts = value.split("+")
    if not all(p in OPERATIONS for p in parts) or len(set(parts)) != len(parts):
        raise Invalid(f"{value[:60]!r} is not operations of {', '.join(OPERATIONS)} "
                      "joined by +")
    return value


def _failing(injector: Injector) -> dict[str, str]:
    """Brokers with a disk fault in force: node -> the failing log dir."""
    return injector.kept(PACKAGE.name, dict)


def log_dirs(injector: Injector) -> list[str]:
    """A broker's log directories (the same on every broker), as Kafka names them."""
    return broker_log_dirs(injector.cluster.config)


def dir_holding(injector: Injector, name: str, folder: str) -> str | None:
    """The log dir of broker `name` that holds the partition folder `folder`
    (`topic-N`); None unless exactly one does."""
    node = injector.cluster.nodes[name]
    found = [d for d in log_dirs(injector) if node.exec(["test", "-d", f"{d}/{folder}"]).ok]
    return found[0] if len(found) == 1 else None


def fail(injector: Injector, name: str, directory: str, errno_name: str,
         operations: tuple[str, ...], drop: bool, step: str | None = None,
         detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fail `operations` (write, fsync) under one log dir of a broker with an errno,
    through its page-cache layer, while Kafka runs on: Kafka takes the dir offline
    (or stops, when it was its only one). `drop`: a failed fsync forgets the
    file's unsynced data, recorded as `"dropped": true`."""
    layer = injector.page_cache
    if layer is None:
        raise HarnessError("disk-fault needs the page-cache layer under the brokers")
    node = injector.node(name)
    fault = DiskFault(layer.relative(directory), errno_name, tuple(operations), drop)
    dropping = drop and "fsync" in fault.operations
    said = {"dir": directory, "errno": errno_name, "operations": list(fault.operations),
            "dropped": dropping, **detail_of(step, detail)}

    def apply() -> None:
        layer.disk_fault(node, fault)
        _failing(injector)[name] = directory
        if dropping:  # a loss of unflushed data, as a page-cache loss is
            injector.page_cache_losses += 1

    return injector.record(PACKAGE.recorded, [name], said, apply,
                           (lambda: unprotected(injector)) if dropping else None)


def end(injector: Injector, name: str, step: str | None = None,
        detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """The disk is healthy again: errors off, then the broker restarted (cleanly if
    it still runs), since Kafka keeps a failed log dir offline until then.
    Recorded as the `start` that ends the disk fault, with what the fault did."""
    layer = injector.page_cache
    if layer is None:
        raise HarnessError("disk-fault needs the page-cache layer under the brokers")
    node = injector.node(name)
    timeouts = injector.cluster.config.timeouts

    def apply() -> dict[str, Any]:
        answer = layer.disk_fault(node, None)
        _failing(injector).pop(name, None)
        stopped = node.kafka_pid()
        if stopped is not None:
            node.signal_kafka("TERM")
            if not node.wait_kafka_gone(timeouts.kafka_gone_after_term_s):
                node.signal_kafka("KILL")  # a shutdown stuck on the failed dir
                if not node.wait_kafka_gone(timeouts.kafka_gone_s):
                    raise HarnessError(f"Kafka on {name} still runs after SIGKILL")
        injector.down.add(name)
        started = injector.start_kafka(name)
        return {"stopped_pid": stopped, "pid": started,
                "failed": answer.get("failed", {}),
                "bytes_dropped": answer.get("bytes_dropped", {}),
                "total_bytes_dropped": answer.get("total_bytes_dropped", 0)}

    return injector.record(Fault.START, [name], detail_of(step, detail), apply)


def _end_all(injector: Injector, said: dict[str, Any]) -> None:
    for name in sorted(_failing(injector)):
        end(injector, name, **said)


def _draw(rng: Any, settings: DiskFaultSettings, injector: Injector
          ) -> tuple[str, str, tuple[str, ...]]:
    """The failing log dir, errno and operations."""
    operations = tuple(rng.choice(settings.operations).split("+"))
    errno_name = rng.choice(settings.errnos)
    directory = rng.choice(log_dirs(injector))
    return directory, errno_name, operations


def inject(mix: Mix, package: FaultPackage) -> Undo | None:
    """Draw the fault, fail the directory; the undo waits out its hold and ends it."""
    settings: DiskFaultSettings = mix.settings(package)
    operations = tuple(mix.rng.choice(settings.operations).split("+"))
    errno_name = mix.rng.choice(settings.errnos)
    hold_s = round(mix.rng.uniform(settings.min_hold_s, settings.max_hold_s), 3)
    drops = settings.drop_on_failed_fsync and "fsync" in operations
    if drops and not all_isr_full(mix.states(), mix.replication_factor):
        mix.log(f"{package.name} skipped: it may drop unsynced data and not every ISR is "
                "full (fault budget)")
        return None
    role = role_of(mix, package)
    target, detail = mix.target(role), why(package, role)
    directory = mix.rng.choice(log_dirs(mix.injector))
    failing_from = time.monotonic()
    fail(mix.injector, target, directory, errno_name, operations, drops,
         detail={**detail, "hold_s": hold_s})

    def undo() -> None:
        mix.stop_event.wait(max(0.0, failing_from + hold_s - time.monotonic()))
        end(mix.injector, target, detail=detail)

    return undo


def act(use: Use, target: str, may_drop: bool = False, holding: str | None = None) -> Undo:
    """One of the target's log dirs fails (drawn as a mix draws it; the one that
    holds the partition folder `holding`, when given); it drops unsynced data only
    when `may_drop` (the caller keeps the budget) and the settings allow it. When
    `holding` is given and no one dir of the target is found to hold it, nothing
    fails: the history gets the fault's `info` line saying why, and the step its
    error (a random dir would fail one the partition is not in, a run that tests
    nothing it claims)."""
    settings: DiskFaultSettings = use.settings
    directory, errno_name, operations = _draw(use.rng, settings, use.injector)
    if holding:
        found = dir_holding(use.injector, target, holding)
        if found is None:
            def refuse() -> None:
                raise HarnessError(f"no one log dir of {target} is found to hold {holding} "
                                   "(none does, or more than one): no dir failed, none "
                                   "guessed")

            use.injector.record(PACKAGE.recorded, [target],
                                {"holding": holding, **detail_of(use.step, use.detail)},
                                refuse)
        directory = found  # record() raised refuse's error above when None
    drop = may_drop and settings.drop_on_failed_fsync and "fsync" in operations
    use.notes["disk"] = f"{errno_name} on {'+'.join(operations)}" + (
        ", drops unsynced data" if drop else "")
    use.notes["dropped"] = drop
    fail(use.injector, target, directory, errno_name, operations, drop, use.step, use.detail)
    return lambda: end(use.injector, target, **use.said())


def step_of(line: dict[str, Any], topology: Any, settings: Any) -> dict[str, Any]:
    """The target, failing with the errno and operations the mix drew."""
    detail = line["detail"]
    return {"target": line["nodes"][0],
            "settings": {**dataclasses.asdict(settings),
                         "operations": ["+".join(detail["operations"])],
                         "errnos": [detail["errno"]]}}


def _log_dirs(run: Any) -> int:
    chosen = run.faults.get("disk-fault")
    return (chosen or DiskFaultSettings()).log_dirs


PACKAGE = FaultPackage(
    "disk-fault", Fault.DISK_FAULT, (Role.LEADER, Role.ISR), "#8c510a", PROCESSES, inject,
    act=act, heals=(HealStep(HealPhase.DISK, _end_all),), step_of=step_of,
    capabilities=frozenset({Capability.FAILS_A_LOG_DIR, Capability.DROPS_UNFLUSHED_DATA}),
    settings=DiskFaultSettings,
    rules={"errnos": each(one_of(tuple(ERRNOS)), 1), "operations": each(_operations, 1),
           "drop_on_failed_fsync": boolean, "log_dirs": integer(1, 16)},
    layers=frozenset({Layer.PAGE_CACHE}),
    # two log dirs per broker (unless chosen), so one can fail while the broker lives
    cluster_settings=(Setting("cluster.log_dirs", _log_dirs),),
    acts_on="brokers",
    help="fail writes and/or fsyncs (EIO or ENOSPC) in one log dir of a leader or ISR "
         "member while it runs (two log dirs per broker); restart it with the disk healthy")
