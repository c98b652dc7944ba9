"""What every fault kind is made of (nemesis/faults/<kind>.py holds one each).

After Jepsen's nemesis/combined.clj and pytest's plugins: a kind is one module
holding everything about it, and nothing outside it (the registry and the
history contract aside) names it. Its `FaultPackage` says: its name on the
command line and the kind its lines record; how a random mix injects it and
how a schedule uses it on a target it chose (`act`), both built on the
injector's primitives; how `heal_all` ends it; its settings (a frozen
dataclass, `[run.faults.<kind>]` in --config) and their rules; its line of
`harness run --help`; its report colour; what it acts on; the layer and
cluster settings it needs; and its capabilities, by which a schedule (the
guided rounds) draws kinds without naming any.

A kind reads of the run only the `Injector` and `Mix` protocols below: the
injector's primitives (record a fault, the nodes, processes down and up, the
network's cuts, Kafka's admin tools, what is in force) and what a mix offers
(observed states, targets by role, the seeded RNG, each kind's settings). So
no kind imports the injector or the mix: no import cycle.
"""

from __future__ import annotations

import dataclasses
import random
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any, Protocol

from elr_harness.core.errors import HarnessError
from elr_harness.core.fault_meanings import BUDGET_FAULTS
from elr_harness.core.history import Fault
from elr_harness.nemesis.needs import Layer, Setting
from elr_harness.nemesis.targets import Role, Topology

Undo = Callable[[], Any]

#: What a fault acts on: overlapping schedules may not share one (nemesis.schedule.compose).
NETWORK = "network"
PROCESSES = "processes"
#: The cluster's dynamic config and feature levels (a change and its restore).
CONFIG = "config"
#: Partitions' replica assignments (the controller's, changed by reassignments).
ASSIGNMENT = "assignment"


class Capability(StrEnum):
    """What a schedule may use a kind for. The guided rounds (nemesis.guided.search) draw
    the kinds a step needs by these, never by name; a kind that gains one joins
    every step that asks for it. A capability that needs options of `act` says
    which."""

    #: Takes a broker out of the partitions' ISRs while it is in force (its undo
    #: brings the broker back).
    TAKES_OUT_OF_ISR = "takes a broker out of the ISR"
    #: Keeps the broker fenced meanwhile (the controllers stop hearing its
    #: heartbeats), so it cannot be elected either.
    KEEPS_FENCED = "keeps it fenced"
    #: Leaves the broker's Kafka process running (a later shutdown reaches it).
    KEEPS_RUNNING = "keeps its process running"
    #: Ends with the network's heal, which ends every cut at once.
    ENDS_WITH_EVERY_CUT = "ends with every network cut"
    #: Shuts the broker's Kafka down (its end starts it again).
    SHUTS_DOWN = "shuts a broker down"
    #: The broker stops leading its partitions: shut down, or frozen past its
    #: session timeout (fenced).
    STOPS_LEADING = "stops it leading"
    #: A shutdown without Kafka's clean-shutdown marker: the controller takes the
    #: broker out of ISR and ELR when it registers again.
    UNCLEAN_SHUTDOWN = "unclean shutdown"
    #: Drops writes that were never fsynced: counts against KIP-966's fault budget.
    DROPS_UNFLUSHED_DATA = "drops unflushed data"
    #: Makes the active controller give up leadership (act's target: it).
    FAILS_OVER_CONTROLLER = "fails the active controller over"
    #: Changes a topic's min.insync.replicas, or the cluster default's (act options:
    #: topic, None for the default: a schedule step's `scope = "cluster"`; choose,
    #: fallback).
    CHANGES_MIN_ISR = "changes min ISR"
    #: Turns the ELR feature to a level (act options: to, states).
    CHANGES_ELR_FEATURE = "changes the ELR feature"
    #: Reassigns a partition's replicas (act options: states, role).
    REASSIGNS = "reassigns replicas"
    #: Fails a log directory of a running broker (act options: may_drop).
    FAILS_A_LOG_DIR = "fails a log dir"
    #: Cuts the network as a table of node -> peers it drops (act options: cut;
    #: no target then), so a schedule can say any shape a mix drew.
    TAKES_A_CUT = "cuts as a table says"
    #: Only one of it may be in force at a time (a second is refused until the
    #: first ends): a schedule that overlaps two uses draws another kind.
    ONE_IN_FORCE = "one in force at a time"


#: A min ISR change's `scope` that changes the cluster default, not a topic's.
CLUSTER_SCOPE = "cluster"


class HealPhase(IntEnum):
    """The order in which heal_all ends what is in force (nemesis.injector): the
    network first, so that what follows can reach every node; reassignments
    before the restarts, so one a stopped replica held back is cancelled rather
    than completed by its return, and again after them, in case an end failed
    while the cluster had no controller; config and features last."""

    NETWORK = 10
    SHAPING = 20
    RESUME = 30
    DISK = 40
    ASSIGNMENT = 50
    PROCESSES = 60
    ASSIGNMENT_AGAIN = 70
    FEATURES = 75
    CONFIG = 80


@dataclass(frozen=True)
class HealStep:
    """How heal_all ends a kind in one phase: `end(injector, said)`, said being
    the step and detail every line it records carries. A step a phase shares
    between kinds is the same function, run once. `strict`: an error stops
    heal_all at once (the steps after it could not work); otherwise it is
    collected and raised once every phase had its go."""

    phase: HealPhase
    end: Callable[[Any, dict[str, Any]], None]
    strict: bool = True
    #: an error is only logged: a later phase tries again
    retried_later: bool = False


class Recorder(Protocol):
    def record(self, **fields: Any) -> dict[str, Any]: ...


class Injector(Protocol):
    """The primitives a kind is built on (nemesis.injector.FaultInjector)."""

    cluster: Any
    recorder: Recorder
    #: the page-cache layer under the brokers (None when the run has none)
    page_cache: Any
    #: how a request reaches a broker from the host (the harness's wire client)
    connect: Any
    #: nodes a primitive took down and that were not started since, and those paused
    down: set[str]
    paused: set[str]
    #: the grudge in force: node -> the peers whose packets it drops
    grudge: dict[str, list[str]]
    #: brokers a loss of unflushed data took down and that were not started since;
    #: how many losses of unflushed data the run had
    lost_page_cache: set[str]
    page_cache_losses: int
    #: KIP-966's protection is (or may be) off: the ELR feature was turned to 0
    protection_off: bool

    def record(self, kind: Fault | str, nodes: list[str], detail: dict[str, Any],
               action: Callable[[], dict[str, Any] | None],
               refuse: Callable[[], str | None] | None = None) -> dict[str, Any]:
        """Record the invoke, run `action`, record its end (the recorder's fault
        primitive): ok with the action's result, info when it failed half-way,
        fail when Kafka refused it; a reason `refuse` gives first records nothing
        and raises FaultRefused."""
        ...

    def node(self, name: str) -> Any: ...
    def kept(self, kind: str, make: Callable[[], Any]) -> Any:
        """The kind's own record of what of it is in force (made once, by `make`)."""
        ...
    def take_down(self, name: str, signal_name: str) -> int | None: ...
    def start(self, name: str, step: str | None = None,
              detail: dict[str, Any] | None = None) -> dict[str, Any]: ...
    def start_kafka(self, name: str) -> int | None: ...
    def freeze(self, name: str) -> None: ...
    def thaw(self, name: str, step: str | None = None,
             detail: dict[str, Any] | None = None) -> None: ...
    def resume(self, name: str, step: str | None = None,
               detail: dict[str, Any] | None = None) -> dict[str, Any]: ...
    def block(self, cuts: dict[str, list[str]], inbound_only: bool = False) -> None: ...
    def heal(self, step: str | None = None,
             detail: dict[str, Any] | None = None) -> dict[str, Any]: ...
    def stale_brokers(self) -> set[str]: ...
    def tool_nodes(self) -> list[Any]: ...
    @property
    def admin(self) -> Any: ...


class Mix(Protocol):
    """What a package reads of the mix that injects it (nemesis.mix.RandomMix)."""

    injector: Injector
    topology: Topology
    rng: random.Random
    replication_factor: int
    stop_event: threading.Event
    log: Callable[[str], None]

    def states(self) -> list[Any]: ...
    def target(self, role: Role) -> str: ...
    def settings(self, package: FaultPackage) -> Any: ...


@dataclass
class Use:
    """A schedule's use of a kind on a target it chose (a guided round): the
    injector, the cluster's nodes, the schedule's seeded RNG, the kind's
    settings, the stop event, and the step and detail its lines carry."""

    injector: Injector
    topology: Topology
    rng: random.Random
    settings: Any
    stop_event: threading.Event
    step: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    replication_factor: int = 3
    #: What the use did, in words and flags, for the schedule's own record (a guided
    #: round's notes): the kind fills it in (e.g. "dropped": True).
    notes: dict[str, Any] = field(default_factory=dict)
    #: The step the lines of its end carry (None: its own step); a schedule file's
    #: player sets it to the step that ends it.
    end_step: str | None = None

    def said(self) -> dict[str, Any]:
        """The step and detail every line of the use's end carries."""
        return {"step": self.end_step or self.step, "detail": self.detail}


#: A kind's step of a schedule file for a recorded line (FaultPackage.step_of).
StepOf = Callable[[Mapping[str, Any], Topology, Any], dict[str, Any]]


def on_its_node(line: Mapping[str, Any], topology: Topology, settings: Any) -> dict[str, Any]:
    """The step of a fault made on the one node its line names (most kinds')."""
    return {"target": line["nodes"][0]}


@dataclass(frozen=True)
class FaultPackage:
    """One kind of fault: all the run needs to know of it."""

    #: The mix entry (`--nemesis partition,kill,...`).
    name: str
    #: The `fault` its history lines carry.
    recorded: Fault
    #: Roles its target is drawn from by a mix (empty: the target needs no role).
    roles: tuple[Role, ...]
    #: How plots draw it (the run writes it into test.json for the report).
    colour: str
    #: What it acts on (NETWORK, PROCESSES, CONFIG or ASSIGNMENT; a disk fault restarts
    #: its broker at its end, so it is PROCESSES too).
    resource: str
    inject: Callable[[Mix, FaultPackage], Undo | None]
    #: Its line of `harness run --help`.
    help: str
    #: A schedule's use on a chosen target: act(use, target, **options) -> its end.
    act: Callable[..., Undo] | None = None
    capabilities: frozenset[Capability] = frozenset()
    #: How heal_all ends it.
    heals: tuple[HealStep, ...] = ()
    #: Its settings' type (a frozen dataclass whose defaults are the kind's), and
    #: the rule of each of its fields that the generic ones (by name: `*_s`, `*_ms`)
    #: do not cover (core.validate's rules, raising Invalid).
    settings: type | None = None
    rules: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    #: Whether `--nemesis all` holds it (a kind that changes the cluster's config
    #: for the whole run is asked for by name).
    in_all: bool = True
    #: Storage layers it needs under the brokers.
    layers: frozenset[Layer] = frozenset()
    #: Config values it needs unless the user chose them.
    cluster_settings: tuple[Setting, ...] = ()
    #: The nodes a schedule file's step may aim it at by name or role: "any" node,
    #: "brokers" only, or "controllers" only (a step aimed at the other class is
    #: refused, in the kind's words).
    acts_on: str = "any"
    #: The step of a schedule file that makes again what its `ok` line records (a
    #: mix's or a scenario's run: nemesis.schedule.recorded): the fields besides `fault`, from
    #: the line, the cluster's nodes and the run's settings of the kind.
    step_of: StepOf = on_its_node

    @property
    def counts_against_budget(self) -> bool:
        """Whether the checker counts it against the fault budget (the contract's)."""
        return self.recorded in BUDGET_FAULTS

    def can(self, *wanted: Capability) -> bool:
        return set(wanted) <= self.capabilities

    def default_settings(self) -> Any:
        return None if self.settings is None else self.settings()


class NotNow(Exception):
    """A use that cannot act now (why in the message): nothing was recorded."""


def settings_of(faults: Mapping[str, Any], package: FaultPackage) -> Any:
    """The run's settings of `package` (RunConfig.faults), its defaults when unset."""
    chosen = faults.get(package.name)
    return chosen if chosen is not None else package.default_settings()


def settings_table(settings: Any) -> dict[str, Any]:
    """A kind's settings as the TOML table --config and test.json give them."""
    return dataclasses.asdict(settings)


def why(package: FaultPackage, role: Role | None) -> dict[str, Any]:
    """The detail every line of a mix fault carries: its entry and target role."""
    return {"mix": package.name, "role": None if role is None else str(role)}


def role_of(mix: Mix, package: FaultPackage) -> Role:
    """A role drawn from the package's (no draw when it has one)."""
    return package.roles[0] if len(package.roles) == 1 else mix.rng.choice(package.roles)


def detail_of(step: str | None, extra: dict[str, Any] | None) -> dict[str, Any]:
    """A fault's detail before it runs: the caller's why (step, mix, role)."""
    return {**({"step": step} if step else {}), **(extra or {})}


# -- the fault budget: the one place its rules for injecting are written ------------


def unprotected(injector: Injector) -> str | None:
    """Why unflushed data may not be dropped now (None: it may): while the ELR
    feature is off KIP-966 promises nothing about an unclean shutdown, so a
    loss then would say nothing of Kafka. Kinds that drop data give this as
    their `refuse`; a mix and a guided round skip them meanwhile."""
    if injector.protection_off:
        return ("the ELR feature is off: KIP-966 promises nothing about lost unflushed "
                "data then")
    return None


def loss_outstanding(injector: Injector, states: Sequence[Any],
                     replication_factor: int) -> str | None:
    """Why KIP-966's protection may not be turned off now (None: it may): a broker
    that lost unflushed data is down (it would come back unprotected), or a loss
    happened and not every ISR is full again."""
    from elr_harness.nemesis.targets import all_isr_full

    if injector.lost_page_cache:
        return f"{', '.join(sorted(injector.lost_page_cache))} lost its page cache and is down"
    if injector.page_cache_losses and not all_isr_full(list(states), replication_factor):
        return ("a page-cache loss or a disk fault dropped unflushed data and not every "
                "ISR is full again")
    return None


# -- the ends several kinds share (one function each, so heal_all runs it once) --------


def heal_network(injector: Injector, said: dict[str, Any]) -> None:
    """Every cut ends with the network's heal: every iptables rule of ours removed on
    every node, also what a cut that failed half-way left (its grudge may not know)."""
    injector.heal(**said)


def resume_paused(injector: Injector, said: dict[str, Any]) -> None:
    for name in sorted(injector.paused):
        injector.resume(name, **said)


def start_what_is_down(injector: Injector, said: dict[str, Any]) -> None:
    """Start every node a kind took down, and every node whose Kafka looks dead."""
    from elr_harness.cluster.node import kafka_looks_dead

    spacing = injector.cluster.config.dead_look_spacing_s
    for name in sorted(injector.cluster.nodes):
        if name in injector.down or kafka_looks_dead(injector.node(name), spacing):
            injector.start(name, **said)


NETWORK_HEAL = HealStep(HealPhase.NETWORK, heal_network)
RESUME = HealStep(HealPhase.RESUME, resume_paused)
RESTART = HealStep(HealPhase.PROCESSES, start_what_is_down)


def end_each(keys: Iterable[Any], end: Callable[[Any], object]) -> None:
    """end(key) for every key, each even when an earlier one failed (a heal ends
    all it can); then the failures, joined, as one HarnessError."""
    errors = []
    for key in keys:
        try:
            end(key)
        except HarnessError as err:
            errors.append(err.message)
    if errors:
        raise HarnessError("; ".join(errors))


class NodeFault(Protocol):
    """A kind's fault on one node: `fault(injector, name, step, detail, kind=...)`."""

    def __call__(self, injector: Injector, name: str, step: str | None = None,
                 detail: dict[str, Any] | None = None, *, kind: Fault | str) -> Any: ...


def on_one_node(fault: NodeFault, recorded: Fault,
                end: Callable[[Injector], Callable[..., Any]]
                ) -> tuple[Callable[[Mix, FaultPackage], Undo], Callable[[Use, str], Undo]]:
    """The `inject` and `act` of a kind that is one fault on one node, recorded as
    `recorded`, and is ended by one injector primitive (`end(injector)`: a kill
    and a stop by `start`, a pause by `resume`); a mix draws the target by one of
    the package's roles."""
    def inject(mix: Mix, package: FaultPackage) -> Undo:
        role = role_of(mix, package)
        target, detail = mix.target(role), why(package, role)
        fault(mix.injector, target, detail=detail, kind=recorded)
        return lambda: end(mix.injector)(target, detail=detail)

    def act(use: Use, target: str) -> Undo:
        fault(use.injector, target, use.step, use.detail, kind=recorded)
        return lambda: end(use.injector)(target, **use.said())

    return inject, act
