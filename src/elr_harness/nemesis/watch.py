"""Watching one partition, as every schedule does (the scenarios, a schedule file's
player, the guided rounds, the mix): the observer's samples, the partition in one,
a bounded wait on it, and a reading of the active controller's metadata log."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from elr_harness.cluster.observe import PartitionState
from elr_harness.nemesis.injector import FaultInjector


class Observer(Protocol):
    def latest(self) -> Sequence[PartitionState]: ...
    def wait_for(self, predicate: Callable[[list[Any]], bool],
                 timeout_s: float) -> list[Any] | None: ...


def partition_in(states: Sequence[PartitionState], topic: str,
                 partition: int) -> PartitionState | None:
    """One partition's state in an observed sample (None: not in it)."""
    return next((s for s in states if (s.topic, s.partition) == (topic, partition)), None)


def read_controller(injector: FaultInjector, topic: str, partition: int,
                    log: Callable[[str], None], step: str) -> PartitionState | None:
    """The partition in the active controller's metadata log now, every partition of
    `topic` read recorded as an `observe` line with source "controller", so the
    checker sees what the reader saw (None: the controller could not say)."""
    try:
        views = injector.cluster.controller_view(topic)
    except Exception as err:  # noqa: BLE001 - the controller may be busy; ask again
        log(f"{step}: controller view unavailable: {err}")
        views = []
    for view in views:
        injector.recorder.record(source="controller", **view.as_observation())
    return partition_in(views, topic, partition)


def wait_for_partition(observer: Observer, topic: str, partition: int,
                       predicate: Callable[[PartitionState], bool], timeout_s: float,
                       fresh_after: PartitionState | None = None) -> PartitionState | None:
    """The partition in the first sample where `predicate` holds (a sample other than
    `fresh_after`, when given: while every broker that hears the controllers is away
    the latest sample stays the one from before), within timeout_s; else None."""
    def check(states: list[Any]) -> bool:
        s = partition_in(states, topic, partition)
        return s is not None and s is not fresh_after and predicate(s)

    sample = observer.wait_for(check, timeout_s)
    return None if sample is None else partition_in(sample, topic, partition)
