"""Each fault kind of a mix as one package, after Jepsen's nemesis/combined.clj:
its name on the command line, the kind the history records it as, the roles
its target is chosen by, how it is injected and ended, how a report draws it,
and whether it counts against KIP-966's fault budget.

A package's `inject` gets the mix (its injector, observed state, topology and
seeded RNG) and returns what ends the fault, or None when it is skipped. What a
package may read of the mix is the `Mix` protocol below, so this module never
imports nemesis.mix (which imports it for PACKAGES): no import cycle.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from harness.core.history import BUDGET_FAULTS, Fault
from nemesis import grudges
from nemesis.targets import Role, Topology, all_isr_full

Undo = Callable[[], Any]


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
    def pause(self, name: str, step: str | None = None,
              detail: dict[str, Any] | None = None) -> Any: ...
    def resume(self, name: str, step: str | None = None,
               detail: dict[str, Any] | None = None) -> Any: ...
    def page_cache_loss(self, name: str, step: str | None = None,
                        detail: dict[str, Any] | None = None) -> Any: ...


class Mix(Protocol):
    """What a package reads of the mix that injects it (nemesis.mix.RandomMix)."""

    injector: Injector
    topology: Topology
    rng: random.Random
    replication_factor: int
    bounce_hold_s: float
    stop_event: threading.Event
    log: Callable[[str], None]

    def states(self) -> list[Any]: ...
    def target(self, role: Role) -> str: ...

PARTITION_SHAPES = ("isolate", "majority-minority", "ring", "bridge")

#: What a fault acts on: overlapping schedules may not share one (nemesis.schedules).
NETWORK = "network"
PROCESSES = "processes"


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
    #: What it acts on (NETWORK or PROCESSES).
    resource: str
    inject: Callable[[Mix, FaultPackage], Undo | None]

    @property
    def counts_against_budget(self) -> bool:
        """Whether the checker counts it against the fault budget (the contract's)."""
        return self.recorded in BUDGET_FAULTS


def _why(package: FaultPackage, role: Role | None) -> dict[str, Any]:
    return {"mix": package.name, "role": None if role is None else str(role)}


def _partition(mix: Mix, package: FaultPackage) -> Undo:
    """A network partition of one of four shapes; only `isolate` has a target."""
    nodes = mix.topology.node_names
    shape = mix.rng.choice(PARTITION_SHAPES)
    role = None
    if shape == "isolate":
        role = _role_of(mix, package)
        grudge = grudges.isolate(mix.target(role), nodes)
    elif shape == "majority-minority":
        grudge = grudges.majority_minority(nodes, mix.rng)
    elif shape == "ring":
        grudge = grudges.ring(nodes, mix.rng)
    else:
        grudge = grudges.bridge(nodes, mix.rng)
    why = _why(package, role)
    mix.injector.partition(grudge, step=f"mix:{shape}", kind=package.recorded, detail=why)
    return lambda: mix.injector.heal(step=f"mix:{shape}", detail=why)


def _controller_partition(mix: Mix, package: FaultPackage) -> Undo:
    """The active controller cut off from every other node."""
    target = mix.target(Role.ACTIVE_CONTROLLER)
    why = _why(package, Role.ACTIVE_CONTROLLER)
    mix.injector.partition(grudges.isolate(target, mix.topology.node_names),
                           step=f"mix:{package.name}", kind=package.recorded, detail=why)
    return lambda: mix.injector.heal(step=f"mix:{package.name}", detail=why)


def _isolate_from_controllers(mix: Mix, package: FaultPackage) -> Undo:
    """A broker that still hears the other brokers but no controller."""
    role = _role_of(mix, package)
    broker = mix.target(role)
    why = _why(package, role)
    mix.injector.partition(grudges.from_controllers([broker], sorted(mix.topology.controllers)),
                           step=f"mix:{package.name}", kind=package.recorded, detail=why)
    return lambda: mix.injector.heal(step=f"mix:{package.name}", detail=why)


def _role_of(mix: Mix, package: FaultPackage) -> Role:
    """A role drawn from the package's (no draw when it has one)."""
    return package.roles[0] if len(package.roles) == 1 else mix.rng.choice(package.roles)


def _kill(mix: Mix, package: FaultPackage) -> Undo:
    role = _role_of(mix, package)
    target, why = mix.target(role), _why(package, role)
    mix.injector.kill(target, kind=package.recorded, detail=why)
    return lambda: mix.injector.start(target, detail=why)


def _stop(mix: Mix, package: FaultPackage) -> Undo:
    role = _role_of(mix, package)
    target, why = mix.target(role), _why(package, role)
    mix.injector.stop(target, detail=why)
    return lambda: mix.injector.start(target, detail=why)


def _pause(mix: Mix, package: FaultPackage) -> Undo:
    role = _role_of(mix, package)
    target, why = mix.target(role), _why(package, role)
    mix.injector.pause(target, detail=why)
    return lambda: mix.injector.resume(target, detail=why)


def _page_cache_loss(mix: Mix, package: FaultPackage) -> Undo | None:
    """Only while every observed partition has a full ISR: no partition then loses
    unflushed data on more than one replica between two full-ISR points (within
    KIP-966's budget of min.insync.replicas - 1 for min ISR >= 2)."""
    if not all_isr_full(mix.states(), mix.replication_factor):
        mix.log("page-cache-loss skipped: not every ISR is full (fault budget)")
        return None
    role = _role_of(mix, package)
    target, why = mix.target(role), _why(package, role)
    mix.injector.page_cache_loss(target, detail=why)
    return lambda: mix.injector.start(target, detail=why)


def _bounce_leader(mix: Mix, package: FaultPackage) -> Undo:
    """SIGSTOP a partition's leader for longer than the broker session timeout (it
    is fenced and loses leadership), then SIGCONT it; the controller's preferred
    leader election hands leadership back (KAFKA-18991's trigger: a follower
    moving to a new leader epoch while an old-epoch fetch is in flight)."""
    target, why = mix.target(Role.LEADER), _why(package, Role.LEADER)
    hold_s = mix.bounce_hold_s
    paused_at = time.monotonic()
    mix.injector.pause(target, detail={**why, "hold_s": hold_s})

    def undo() -> None:
        mix.stop_event.wait(max(0.0, paused_at + hold_s - time.monotonic()))
        mix.injector.resume(target, detail=why)

    return undo


PACKAGES: dict[str, FaultPackage] = {p.name: p for p in (
    FaultPackage("partition", Fault.PARTITION, (Role.LEADER, Role.ISR), "#e6550d", NETWORK,
                 _partition),
    FaultPackage("kill", Fault.KILL, (Role.LEADER, Role.ISR, Role.ELR, Role.ANY), "#de2d26",
                 PROCESSES, _kill),
    FaultPackage("stop", Fault.STOP, (Role.LEADER, Role.ISR, Role.ELR, Role.ANY), "#a50f15",
                 PROCESSES, _stop),
    FaultPackage("pause", Fault.PAUSE, (Role.LEADER, Role.ISR, Role.ANY), "#756bb1",
                 PROCESSES, _pause),
    FaultPackage("page-cache-loss", Fault.PAGE_CACHE_LOSS, (Role.LEADER, Role.ISR),
                 "#000000", PROCESSES, _page_cache_loss),
    FaultPackage("controller-kill", Fault.CONTROLLER_KILL, (Role.ACTIVE_CONTROLLER,),
                 "#fb6a4a", PROCESSES, _kill),
    FaultPackage("controller-partition", Fault.CONTROLLER_PARTITION,
                 (Role.ACTIVE_CONTROLLER,), "#fd8d3c", NETWORK, _controller_partition),
    FaultPackage("isolate-from-controllers", Fault.ISOLATE_FROM_CONTROLLERS,
                 (Role.LEADER, Role.ISR, Role.ANY), "#fdae6b", NETWORK,
                 _isolate_from_controllers),
    # recorded (and drawn) as the pause it is; detail.mix and detail.hold_s tell it apart
    FaultPackage("bounce-leader", Fault.PAUSE, (Role.LEADER,), "#756bb1", PROCESSES,
                 _bounce_leader),
)}

#: Kinds `--nemesis all` leaves out: bounce-leader changes the cluster's config
#: (preferred leader election every few seconds), so it is asked for by name.
NOT_IN_ALL = ("bounce-leader",)

#: How the report colours each recorded kind.
COLOURS: dict[str, str] = {str(p.recorded): p.colour for p in PACKAGES.values()}
