"""Schedules: what the nemesis does over a run, composed from small parts.

A schedule runs until its deadline or a stop and records what it did into a
result dict (test.json's `nemesis_result`). The parts:

- `Mix`: a seeded rotation of fault packages (nemesis.mix.RandomMix);
- `Scenario`: a scripted scenario's steps (nemesis.scenarios);
- `Quiet`: no fault for a while;
- `Recovery`: no fault until the cluster is whole again, then a while more
  (recovery the report can show);
- `Phases`: schedules one after another;
- `Overlap`: schedules at the same time, each in its own thread. Faults of
  overlapping schedules must not undo each other: a heal removes every
  iptables rule and a start revives what another stopped, so each overlapping
  schedule owns its resources (the network, the Kafka processes, or the
  cluster's config and features, or partitions' replica assignments) alone, and
  at most one may drop page caches, which keeps two losses from passing the
  fault-budget check at the same moment.

Every run ends with the injector's heal_all (harness.run), whatever the schedule.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from elr_harness.core.wait import wait_until
from elr_harness.nemesis.faults import NETWORK, PACKAGES, PROCESSES


def resources_of(kinds: Sequence[str]) -> set[str]:
    """What the faults of a mix of `kinds` act on (their packages say)."""
    return {PACKAGES[kind].resource for kind in kinds}


class Schedule(Protocol):
    def run(self, deadline: float, stop: threading.Event, result: dict[str, Any]) -> None:
        """Act until deadline (time.monotonic) or stop; record into result."""
        ...

    def resources(self) -> set[str]:
        """What its faults act on (NETWORK, PROCESSES, CONFIG, ASSIGNMENT)."""
        ...


@dataclass
class Mix:
    """A RandomMix made when the schedule starts (it needs the run's injector)."""

    kinds: tuple[str, ...]
    make: Callable[[tuple[str, ...], threading.Event], Any]

    def run(self, deadline: float, stop: threading.Event, result: dict[str, Any]) -> None:
        injected = self.make(self.kinds, stop).run(deadline)
        result.setdefault("injected", []).extend(injected)

    def resources(self) -> set[str]:
        return resources_of(self.kinds)


@dataclass
class Scenario:
    """The scripted scenario; its steps go to result["steps"]."""

    make: Callable[[threading.Event], Any]

    def run(self, deadline: float, stop: threading.Event, result: dict[str, Any]) -> None:
        result["steps"] = [asdict(s) for s in self.make(stop).run()]

    def resources(self) -> set[str]:
        return {NETWORK, PROCESSES}


@dataclass
class Quiet:
    seconds: float

    def run(self, deadline: float, stop: threading.Event, result: dict[str, Any]) -> None:
        stop.wait(max(0.0, min(self.seconds, deadline - time.monotonic())))

    def resources(self) -> set[str]:
        return set()


@dataclass
class Recovery:
    """No fault until the cluster is observed whole again (bounded by timeout_s),
    then `seconds` more: the workload goes on through the recovery, so the report
    shows it and writes after it, whether it took one second or thirty (a fixed
    quiet spell was either too short or mostly idle)."""

    recovered: Callable[[], bool]
    timeout_s: float
    poll_s: float
    seconds: float

    def run(self, deadline: float, stop: threading.Event, result: dict[str, Any]) -> None:
        bound = max(0.0, min(self.timeout_s, deadline - time.monotonic()))
        result["recovered_before_heal"] = wait_until(self.recovered, bound, self.poll_s, stop)
        Quiet(self.seconds).run(deadline, stop, result)

    def resources(self) -> set[str]:
        return set()


@dataclass
class Phases:
    parts: Sequence[Schedule]

    def run(self, deadline: float, stop: threading.Event, result: dict[str, Any]) -> None:
        for part in self.parts:
            if stop.is_set() or time.monotonic() >= deadline:
                break
            part.run(deadline, stop, result)

    def resources(self) -> set[str]:
        return set().union(*(p.resources() for p in self.parts))


@dataclass
class Overlap:
    parts: Sequence[Schedule]
    threads: list[threading.Thread] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        check_overlap([part.resources() for part in self.parts])

    def run(self, deadline: float, stop: threading.Event, result: dict[str, Any]) -> None:
        errors: list[str] = []
        lock = threading.Lock()

        def one(part: Schedule) -> None:
            own: dict[str, Any] = {}
            try:
                part.run(deadline, stop, own)
            except Exception as err:  # noqa: BLE001 - the others go on; recorded
                own["error"] = f"{type(err).__name__}: {err}"
            with lock:
                if "error" in own:
                    errors.append(own.pop("error"))
                result.setdefault("injected", []).extend(own.pop("injected", []))
                result.update(own)

        self.threads = [threading.Thread(target=one, args=(p,), name="nemesis-overlap",
                                         daemon=True) for p in self.parts]
        for thread in self.threads:
            thread.start()
        for thread in self.threads:
            thread.join()
        if errors:
            result["error"] = "; ".join(errors)

    def resources(self) -> set[str]:
        return set().union(*(p.resources() for p in self.parts))


def check_overlap(resources: Sequence[set[str]]) -> None:
    """ValueError unless overlapping schedules, by what each acts on, share none."""
    seen: dict[str, int] = {}
    for i, used in enumerate(resources):
        for resource in sorted(used):
            if resource in seen:
                raise ValueError(f"overlapping schedules {seen[resource] + 1} and {i + 1} "
                                 f"both act on the {resource}; their faults would undo "
                                 "each other's")
            seen[resource] = i
