"""The registry of fault kinds: one module per kind, nemesis/faults/<kind>.py.

Everything that asks which kinds there are reads this: `--nemesis` and `all`
(nemesis.registry), `harness run --help`, the mix (nemesis.mix), the guided
rounds (by capability), heal_all (nemesis.injector), the schedules' resources,
the layer and settings a run needs, each kind's settings and their rules
(run.config), and the colours the run writes for the report. A new kind is its
module and one line here (and its name in the history contract).
"""

from __future__ import annotations

from elr_harness.nemesis.faults import (
    bounce_leader,
    controller_kill,
    controller_partition,
    disk_fault,
    feature_change,
    isolate_from_controllers,
    kill,
    min_isr_change,
    one_way_partition,
    page_cache_loss,
    partition,
    pause,
    reassign,
    slow_network,
    stop,
)
from elr_harness.nemesis.faults.base import (
    ASSIGNMENT,
    CONFIG,
    NETWORK,
    PROCESSES,
    Capability,
    FaultPackage,
    Injector,
    Mix,
)

__all__ = ["ASSIGNMENT", "COLOURS", "CONFIG", "FAULT_KINDS", "NETWORK", "NOT_IN_ALL",
           "PACKAGES", "PROCESSES", "Capability", "FaultPackage", "Injector", "Mix", "in_all",
           "with_capabilities"]

#: Every kind by its `--nemesis` name. The order is the seeded rotation's input
#: (nemesis.mix): changing it changes which fault a seed injects when.
PACKAGES: dict[str, FaultPackage] = {m.PACKAGE.name: m.PACKAGE for m in (
    partition, kill, stop, pause, page_cache_loss, controller_kill, controller_partition,
    isolate_from_controllers, bounce_leader, disk_fault, min_isr_change, feature_change,
    slow_network, reassign, one_way_partition)}

#: The entries a mix may hold: one per fault package.
FAULT_KINDS = tuple(PACKAGES)

#: Kinds `--nemesis all` leaves out (each says why in its module).
NOT_IN_ALL = tuple(name for name, p in PACKAGES.items() if not p.in_all)

#: How the report colours each recorded kind.
COLOURS: dict[str, str] = {str(p.recorded): p.colour for p in PACKAGES.values()}


def with_capabilities(*wanted: Capability, without: tuple[Capability, ...] = ()
                      ) -> tuple[FaultPackage, ...]:
    """The kinds that can do all of `wanted` and none of `without`, in registry order:
    what a schedule draws from (nemesis.guided.search), never a kind by name."""
    return tuple(p for p in PACKAGES.values()
                 if p.can(*wanted) and not any(c in p.capabilities for c in without))


def in_all() -> tuple[str, ...]:
    """The kinds of `--nemesis all`, in registry order."""
    return tuple(name for name, p in PACKAGES.items() if p.in_all)
