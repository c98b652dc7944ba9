"""What every fault kind is made of (nemesis/faults/<kind>.py holds one each).

After Jepsen's nemesis/combined.clj: a kind is one package holding its name on
the command line, the kind the history records it as, the roles its target is
chosen by, how it is injected and ended, how a report draws it, what it acts
on, whether `--nemesis all` holds it, the layer and cluster settings it needs,
and its line of `harness run --help`.

A package's `inject` gets the mix (its injector, observed state, topology and
seeded RNG) and returns what ends the fault, or None when it is skipped. What a
package may read of the mix is the `Mix` protocol below, so no kind imports
nemesis.mix (which imports the registry): no import cycle.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from elr_harness.core.config import DiskFaultConfig, SlowNetworkConfig
from elr_harness.core.history import BUDGET_FAULTS, Fault
from elr_harness.nemesis import grudges
from elr_harness.nemesis.needs import Layer, Setting
from elr_harness.nemesis.targets import Role, Topology

Undo = Callable[[], Any]

#: What a fault acts on: overlapping schedules may not share one (nemesis.schedules).
NETWORK = "network"
PROCESSES = "processes"
#: The cluster's dynamic config and feature levels (a change and its restore).
CONFIG = "config"
#: Partitions' replica assignments (the controller's, changed by reassignments).
ASSIGNMENT = "assignment"


class Injector(Protocol):
    """What a mix's packages ask of nemesis.injector.FaultInjector."""

    def partition(self, grudge: grudges.Grudge, step: str | None = None,
                  kind: Fault | str = Fault.PARTITION,
                  detail: dict[str, Any] | None = None) -> Any: ...
    def heal(self, step: str | None = None, detail: dict[str, Any] | None = None) -> Any: ...
    def kill(self, name: str, step: str | None = None, kind: Fault | str = Fault.KILL,
             detail: dict[str, Any] | None = None) -> Any: ...
    def stop(self, name: str, step: str | None = None,
             detail: dict[str, Any] | None = None) -> Any: ...
    def start(self, name: str, step: str | None = None,
              detail: dict[str, Any] | None = None) -> Any: ...
    def pause(self, name: str, step: str | None = None, kind: Fault | str = Fault.PAUSE,
              detail: dict[str, Any] | None = None) -> Any: ...
    def resume(self, name: str, step: str | None = None,
               detail: dict[str, Any] | None = None) -> Any: ...
    def page_cache_loss(self, name: str, step: str | None = None,
                        detail: dict[str, Any] | None = None) -> Any: ...
    def log_dirs(self) -> list[str]: ...
    def disk_fault(self, name: str, directory: str, errno_name: str,
                   operations: tuple[str, ...], drop: bool, step: str | None = None,
                   detail: dict[str, Any] | None = None) -> Any: ...
    def end_disk_fault(self, name: str, step: str | None = None,
                       detail: dict[str, Any] | None = None) -> Any: ...
    def min_isr(self, topic: str | None) -> int | None: ...
    def min_isr_change(self, topic: str | None, to: int, current: int,
                       step: str | None = None,
                       detail: dict[str, Any] | None = None) -> Any: ...
    def restore_min_isr(self, topic: str | None, step: str | None = None,
                        detail: dict[str, Any] | None = None) -> Any: ...
    def feature_level(self, feature: str) -> int | None: ...
    def feature_change(self, feature: str, to: int, current: int, step: str | None = None,
                       detail: dict[str, Any] | None = None) -> Any: ...
    def restore_feature(self, feature: str, step: str | None = None,
                        detail: dict[str, Any] | None = None) -> Any: ...

    #: Brokers a page-cache loss took down that were not started since.
    lost_page_cache: set[str]
    #: Page-cache losses of the run so far.
    page_cache_losses: int

    @property
    def elr_feature_off(self) -> bool:
        """A feature change turned ELR off (or may have) and nothing restored it."""
        ...
    def slow_network(self, name: str, peers: Sequence[str], rate_kbit: int, loss: float,
                     step: str | None = None, detail: dict[str, Any] | None = None) -> Any: ...
    def unthrottle(self, name: str, step: str | None = None,
                   detail: dict[str, Any] | None = None) -> Any: ...
    def reassign(self, topic: str, partition: int, replicas: Sequence[int],
                 target: Sequence[int], restore: bool = False, step: str | None = None,
                 detail: dict[str, Any] | None = None) -> Any: ...
    def end_reassign(self, topic: str, partition: int, step: str | None = None,
                     detail: dict[str, Any] | None = None) -> Any: ...


class Mix(Protocol):
    """What a package reads of the mix that injects it (nemesis.mix.RandomMix)."""

    injector: Injector
    topology: Topology
    rng: random.Random
    replication_factor: int
    bounce_hold_s: float
    disk_fault: DiskFaultConfig
    slow_network: SlowNetworkConfig
    stop_event: threading.Event
    log: Callable[[str], None]

    def states(self) -> list[Any]: ...
    def target(self, role: Role) -> str: ...


@dataclass(frozen=True)
class FaultPackage:
    """One kind of fault a mix can inject."""

    #: The mix entry (`--nemesis partition,kill,...`).
    name: str
    #: The `fault` its history lines carry.
    recorded: Fault
    #: Roles its target is drawn from (empty: the target needs no role).
    roles: tuple[Role, ...]
    #: How plots draw it.
    colour: str
    #: What it acts on (NETWORK, PROCESSES, CONFIG or ASSIGNMENT; a disk fault restarts
    #: its broker at its end, so it is PROCESSES too).
    resource: str
    inject: Callable[[Mix, FaultPackage], Undo | None]
    #: Its line of `harness run --help`.
    help: str
    #: Whether `--nemesis all` holds it (a kind that changes the cluster's config
    #: for the whole run is asked for by name).
    in_all: bool = True
    #: Storage layers it needs under the brokers.
    layers: frozenset[Layer] = frozenset()
    #: Config values it needs unless the user chose them.
    cluster_settings: tuple[Setting, ...] = ()

    @property
    def counts_against_budget(self) -> bool:
        """Whether the checker counts it against the fault budget (the contract's)."""
        return self.recorded in BUDGET_FAULTS


def why(package: FaultPackage, role: Role | None) -> dict[str, Any]:
    """The detail every line of a mix fault carries: its entry and target role."""
    return {"mix": package.name, "role": None if role is None else str(role)}


def role_of(mix: Mix, package: FaultPackage) -> Role:
    """A role drawn from the package's (no draw when it has one)."""
    return package.roles[0] if len(package.roles) == 1 else mix.rng.choice(package.roles)
