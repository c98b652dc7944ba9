"""One [[step]] of a schedule file (nemesis.schedule.file has the grammar): its
fields, and the checks each field meets against the steps before it. Every
mistake is an input error naming the file, the line, the step and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from elr_harness.core.config_file import apply
from elr_harness.core.errors import BadInput
from elr_harness.core.validate import Invalid
from elr_harness.nemesis.faults import PACKAGES, FaultPackage
from elr_harness.nemesis.faults.base import CLUSTER_SCOPE
from elr_harness.nemesis.faults.base import Capability as C
from elr_harness.nemesis.schedule.conditions import Condition, ConditionError, parse_condition
from elr_harness.nemesis.targets import Role

#: The name the partition's leader at the start is bound to.
LEADER_NAME = "L"
#: The name the transaction coordinator of the run's first transactional producer
#: at the start is bound to (unbound in a run without transactions).
COORDINATOR_NAME = "C"
#: A step's `partition` naming that coordinator's `__transaction_state` partition.
COORDINATOR_PARTITION = "coordinator"
#: Bounds of a wait and of a hold (seconds).
MAX_WAIT_S = 600.0
MAX_HOLD_S = 600.0
#: What a kind that changes the cluster's config takes as `to`, by capability.
TO_RANGES = {C.CHANGES_ELR_FEATURE: (0, 1), C.CHANGES_MIN_ISR: (1, 16)}
#: The roles a reassignment's moved replica is drawn from.
REASSIGN_ROLES = (Role.ELR, Role.ISR, Role.ANY)


def to_range(package: FaultPackage) -> tuple[int, int] | None:
    """The `to` a kind takes (low, high), or None: it takes none."""
    return next((span for c, span in TO_RANGES.items() if package.can(c)), None)
#: Where a wait reads the partition: the brokers (the run's observer), or the active
#: controller's metadata log (each reading recorded as an `observe` line).
OBSERVER, CONTROLLER = "observer", "controller"
_FIELDS = ("name", "partition", "fault", "end", "target", "as", "to", "settings", "cut",
           "scope", "until", "read", "within_s", "hold_s", "watch", "played")
#: A min ISR change's scope: a topic's (the step's partition's), or the cluster default.
SCOPES = ("topic", CLUSTER_SCOPE)
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,39}")
NODE = re.compile(r"(broker|controller)-[0-9]{1,4}")
PARTITION = re.compile(r"([A-Za-z0-9._-]{1,249})-([0-9]{1,6})")

@dataclass(frozen=True)
class Step:
    """One step of a schedule file, checked."""

    number: int
    name: str
    #: the kind it uses; None for a step that ends an earlier one's fault
    fault: str | None = None
    #: the step whose fault this one ends
    end: str | None = None
    #: a Role's value, a bound name, a node name, or None (a config kind)
    target: str | None = None
    bind: str | None = None
    to: int | None = None
    settings: Any = None
    #: a network cut, exactly: node -> the peers it drops (a kind that TAKES_A_CUT)
    cut: dict[str, list[str]] | None = None
    #: a min ISR change's scope (SCOPES); None: the topic's
    scope: str | None = None
    until: Condition | None = None
    read: str = OBSERVER
    #: (topic, partition) its roles and wait read, or COORDINATOR_PARTITION (the
    #: coordinator's __transaction_state partition); None: the schedule's own
    partition: tuple[str, int] | str | None = None
    within_s: float = 0.0
    hold_s: float = 0.0
    #: a condition watched for through the hold (what must never happen while it
    #: lasts: "L leads" while B is away); recorded whether and when it was seen
    watch: Condition | None = None

    @property
    def partition_text(self) -> str | None:
        """Its `partition` as the file writes it (None: the schedule's own)."""
        if self.partition is None or isinstance(self.partition, str):
            return self.partition
        return f"{self.partition[0]}-{self.partition[1]}"

class Earlier(list[Step]):
    """The steps checked so far, with what a later step's checks look up in them
    (names, bound names, steps with a fault, steps ended), kept as each is added: a
    schedule of 20,000 steps took 18.7 s when each step gathered these anew."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.binds: set[str] = set()
        self.faulted: dict[str, Step] = {}
        self.ended: set[str] = set()

    def append(self, step: Step) -> None:
        super().append(step)
        self.names.add(step.name)
        if step.bind:
            self.binds.add(step.bind)
        if step.fault:
            self.faulted[step.name] = step
        if step.end:
            self.ended.add(step.end)


class StepChecker:
    """Checks one [[step]] table against the steps before it."""

    def __init__(self, text: str, path: str, number: int, raw: dict[str, Any],
                 before: Earlier) -> None:
        self.text, self.path, self.number, self.raw, self.before = text, path, number, raw, before
        self.name = raw.get("name") if isinstance(raw.get("name"), str) else f"step-{number}"

    def fail(self, field: str, why: str) -> BadInput:
        line = _line_of(self.text, self.number, field)
        where = f" line {line}" if line else ""
        return BadInput(f"--schedule {self.path}{where}: step {self.number} "
                        f"({str(self.name)[:40]}): `{field}`: {why}")

    def bound(self) -> set[str]:
        return {LEADER_NAME, COORDINATOR_NAME} | self.before.binds

    def step(self) -> Step:
        raw = self.raw
        for key in raw:
            if key not in _FIELDS:
                raise self.fail(key, f"no such field; known: {', '.join(_FIELDS)}")
        name = raw.get("name", self.name)
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise self.fail("name", "a name of letters, digits, - and _ (at most 40)")
        if name in self.before.names:
            raise self.fail("name", f"{name!r} names an earlier step too")
        if "fault" in raw and "end" in raw:
            raise self.fail("fault", "a step has either `fault` (a kind) or `end` "
                                     "(an earlier step whose fault it ends), not both")
        if not {"fault", "end", "until", "watch"} & set(raw):
            raise self.fail("fault", "a step makes a fault (`fault`), ends one (`end`), "
                                     "waits (`until`) or watches (`watch`)")
        bind = self._bind()
        until = self._until(bind)
        watch = self._until(bind, "watch")
        within_s = self._seconds("within_s", MAX_WAIT_S, above_zero=True)
        if until is None and "within_s" in raw:
            raise self.fail("within_s", "bounds a wait: give `until` too")
        if until is not None and "within_s" not in raw:
            raise self.fail("within_s", f"a wait needs its bound (0 < within_s <= "
                                        f"{MAX_WAIT_S:.0f})")
        hold_s = self._seconds("hold_s", MAX_HOLD_S)
        read = self.raw.get("read", OBSERVER)
        if read not in (OBSERVER, CONTROLLER):
            raise self.fail("read", f"{str(read)[:40]!r}: a wait reads `{OBSERVER}` (the "
                                    f"brokers) or `{CONTROLLER}` (its metadata log)")
        if "read" in raw and until is None and watch is None:
            raise self.fail("read", "says where a wait or a watch reads: give `until` or "
                                    "`watch` too")
        if until is not None and until.registration and read != OBSERVER:
            raise self.fail("read", "a registration is read in the broker's own log")
        if watch is not None and watch.registration:
            raise self.fail("watch", "a watch reads the partition; a registration is read "
                                     "in the broker's own log (`until`)")
        if watch is not None and not hold_s:
            raise self.fail("watch", "watches through the hold: give `hold_s` too")
        common = {"number": self.number, "name": name, "bind": bind, "until": until,
                  "read": read, "within_s": within_s, "hold_s": hold_s, "watch": watch,
                  "partition": self._partition()}
        if "fault" not in raw and "end" not in raw:
            for key in ("target", "to", "settings", "as", "cut", "scope"):
                if key in raw:
                    raise self.fail(key, "a step that only waits takes none")
            return Step(**common)
        if "end" in raw:
            for key in ("target", "to", "settings", "cut", "scope"):
                if key in raw:
                    raise self.fail(key, "a step that ends another's fault takes none")
            ended = raw["end"]
            earlier = self.before.faulted
            if not isinstance(ended, str) or ended not in earlier:
                shown = ", ".join(list(earlier)[:20]) + (", ..." if len(earlier) > 20 else "")
                raise self.fail("end", f"{str(ended)[:40]!r} is no earlier step with a fault; "
                                       f"earlier: {shown or 'none'}")
            if ended in self.before.ended:
                raise self.fail("end", f"step {ended!r} was ended already")
            if bind:
                raise self.fail("as", "a step that ends another's fault chooses no node")
            return Step(end=ended, **common)
        fault = raw["fault"]
        package = PACKAGES.get(fault) if isinstance(fault, str) else None
        if package is None or package.act is None:
            known = ", ".join(k for k, p in PACKAGES.items() if p.act is not None)
            raise self.fail("fault", f"{str(fault)[:40]!r} is no fault kind; known: {known}")
        target = self._target(package)
        if bind and (target is None or package.can(C.REASSIGNS)):
            raise self.fail("as", f"{fault} chooses no node to bind")
        return Step(fault=fault, target=target, to=self._to(package),
                    settings=self._settings(package), cut=self._cut(package),
                    scope=self._scope(package), **common)

    def _bind(self) -> str | None:
        bind = self.raw.get("as")
        if bind is None:
            return None
        if not isinstance(bind, str) or not NAME.fullmatch(bind) or NODE.fullmatch(bind) \
                or bind in {r.value for r in Role}:
            raise self.fail("as", "a name of letters, digits, - and _ that is no role and no "
                                  "node name")
        if bind in self.bound():
            raise self.fail("as", f"{bind!r} is bound already (L is the partition's leader "
                                  "at the start, C the transaction coordinator)")
        return bind

    def _until(self, bind: str | None, field: str = "until") -> Condition | None:
        """The step's condition `field` (its wait's, or its watch's), checked."""
        if field not in self.raw:
            return None
        try:
            condition = parse_condition(self.raw[field])
        except ConditionError as err:
            raise self.fail(field, str(err)) from None
        known = self.bound() | ({bind} if bind else set())
        for name in sorted(condition.names):
            if name not in known and not NODE.fullmatch(name):
                raise self.fail(field, f"{name!r} is neither bound by an earlier step nor "
                                       f"a node; bound: {', '.join(sorted(known))}")
        return condition

    def _partition(self) -> tuple[str, int] | str | None:
        text = self.raw.get("partition")
        if text is None or text == COORDINATOR_PARTITION:
            return text
        match = PARTITION.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise self.fail("partition", f"{str(text)[:40]!r} is no partition: topic-N, or "
                                         f"{COORDINATOR_PARTITION!r} (the transaction "
                                         "coordinator's __transaction_state partition)")
        return match.group(1), int(match.group(2))

    def _seconds(self, field: str, most: float, above_zero: bool = False) -> float:
        value = self.raw.get(field, 0.0)
        ok = isinstance(value, int | float) and not isinstance(value, bool) and \
            (value > 0 if above_zero else value >= 0) and value <= most
        if field in self.raw and not ok:
            low = "0 <" if above_zero else "0 <="
            raise self.fail(field, f"{value!r:.40} is not a number of seconds "
                                   f"{low} {field} <= {most:.0f}")
        return float(value)

    def _target(self, package: FaultPackage) -> str | None:
        target = self.raw.get("target")
        if "cut" in self.raw and package.can(C.TAKES_A_CUT):
            if target is not None:
                raise self.fail("target", "a step with a `cut` takes no target: the cut "
                                          "names its nodes")
            return None
        if to_range(package) is not None:
            if target is not None:
                raise self.fail("target", f"{package.name} acts on the cluster's config: "
                                          "no target")
            return None
        if package.can(C.REASSIGNS):
            roles = REASSIGN_ROLES
            target = Role.ANY.value if target is None else target
            if target not in {r.value for r in roles}:
                raise self.fail("target", f"{package.name} moves a replica of a role: one of "
                                          f"{', '.join(r.value for r in roles)}")
            return target
        if target is None:
            raise self.fail("target", f"{package.name} needs a target: a role, a bound name "
                                      "or a node")
        roles = {r.value for r in Role}
        if not isinstance(target, str) or not (target in roles or target in self.bound()
                                               or NODE.fullmatch(target)):
            raise self.fail("target", f"{str(target)[:40]!r} is no role ({', '.join(roles)}), "
                                      f"no bound name ({', '.join(sorted(self.bound()))}) and "
                                      "no node name (broker-N, controller-N)")
        on_controller = target == Role.ACTIVE_CONTROLLER.value or \
            target.startswith("controller-") and NODE.fullmatch(target) is not None
        on_broker = target in roles - {Role.ACTIVE_CONTROLLER.value} or target in (
            LEADER_NAME, COORDINATOR_NAME) or target.startswith("broker-") and \
            NODE.fullmatch(target) is not None
        if package.acts_on == "controllers" and on_broker:
            raise self.fail("target", f"{package.name} acts on a controller: aim it at "
                                      "`active-controller` or a controller node "
                                      f"(controller-N), not {target[:40]!r}")
        if package.acts_on == "brokers" and on_controller:
            raise self.fail("target", f"{package.name} acts on a broker only: aim it at a "
                                      f"broker's role or node, not {target[:40]!r}")
        if target == Role.ACTIVE_CONTROLLER.value and Role.ACTIVE_CONTROLLER not in \
                package.roles:
            raise self.fail("target", f"{package.name} does not act on a controller")
        if target in (Role.COORDINATOR.value, COORDINATOR_NAME) and \
                not set(package.roles) - {Role.ACTIVE_CONTROLLER}:
            raise self.fail("target", f"{package.name} acts on a controller only, and the "
                                      "transaction coordinator is a broker")
        return target

    def _to(self, package: FaultPackage) -> int | None:
        span = to_range(package)
        if span is None:
            if "to" in self.raw:
                raise self.fail("to", f"{package.name} takes no `to`")
            return None
        low, high = span
        value = self.raw.get("to")
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise self.fail("to", f"{package.name} needs `to`, an integer {low}..{high}")
        return value

    def _cut(self, package: FaultPackage) -> dict[str, list[str]] | None:
        if "cut" not in self.raw:
            return None
        if not package.can(C.TAKES_A_CUT):
            raise self.fail("cut", f"{package.name} takes no cut")
        raw = self.raw["cut"]
        shape = "a table of node = [the peers it drops], e.g. { \"broker-1\" = " \
                "[\"broker-2\"] }"
        if not isinstance(raw, dict) or not raw:
            raise self.fail("cut", shape)
        cut: dict[str, list[str]] = {}
        for node, peers in raw.items():
            if not NODE.fullmatch(node):
                raise self.fail("cut", f"{node[:40]!r} is no node name (broker-N, "
                                       "controller-N)")
            if not isinstance(peers, list) or not peers or not all(
                    isinstance(p, str) and NODE.fullmatch(p) and p != node for p in peers):
                raise self.fail("cut", f"{node}: {shape}, of other nodes")
            cut[node] = sorted(set(peers))
        return cut

    def _scope(self, package: FaultPackage) -> str | None:
        if "scope" not in self.raw:
            return None
        if not package.can(C.CHANGES_MIN_ISR):
            raise self.fail("scope", f"{package.name} takes no scope")
        scope = self.raw["scope"]
        if scope not in SCOPES:
            raise self.fail("scope", f"{str(scope)[:40]!r}: one of {', '.join(SCOPES)}")
        if scope == CLUSTER_SCOPE and "partition" in self.raw:
            raise self.fail("scope", "the cluster default is no partition's: give `scope` "
                                     "or `partition`, not both")
        return None if scope == "topic" else scope

    def _settings(self, package: FaultPackage) -> Any:
        if "settings" not in self.raw:
            return None
        if package.settings is None:
            raise self.fail("settings", f"{package.name} has no settings")
        try:
            settings = apply(package.default_settings(), self.raw["settings"],
                             f"[run.faults.{package.name}]")
            for field, rule in package.rules.items():
                rule(getattr(settings, field))
        except (BadInput, Invalid) as err:
            raise self.fail("settings", str(err)) from None
        return settings


def _line_of(text: str, number: int, field: str) -> int | None:
    """The line of `field` in the number-th [[step]] table (the table's own line when
    the field is not written there)."""
    lines = text.splitlines()
    headers = [i for i, line in enumerate(lines) if line.strip().startswith("[[step]]")]
    if len(headers) < number:
        return None
    start = headers[number - 1]
    stop = headers[number] if len(headers) > number else len(lines)
    key = re.compile(rf"\s*{re.escape(field)}\s*=")
    for i in range(start + 1, stop):
        if key.match(lines[i]):
            return i + 1
    return start + 1
