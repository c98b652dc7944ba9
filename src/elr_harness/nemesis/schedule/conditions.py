"""The conditions a schedule file's step waits for (`until = "..."`), in words a
Kafka engineer writes: observed facts of the schedule's partition, joined by
`and`; alternatives joined by `or` (`and` binds first: "elr on and B leads or elr
off and L leads").

    no leader                 the partition has no leader (leader -1)
    X leads                   X is its leader
    X in isr|elr|last-known-elr|fenced        and `X not in ...`
    X fenced / X unfenced     the controller holds X fenced, or X registered and not
    isr below min-isr         fewer ISR members than the topic's min ISR
    isr full                  every replica in the ISR
    isr is [X, Y]             exactly these ISR members
    elr empty / elr not empty (and last-known-elr empty / not empty)
    high-watermark at least N records committed on the partition (a warm-up)
    lso below high-watermark  the leader's last stable offset below its high
                              watermark: a transaction open, or its marker not yet
                              in (read only in a run with transactions)
    elr on / elr off          the cluster's eligible.leader.replicas.version is at
                              least 1 / is 0 (as the answering node finalized it)
    X registered              X's own log says the controller registered it since the
                              step acted (alone: it is read in the log, at once, so
                              the next step may catch X still fenced: KAFKA-19522)

X is a name an earlier step bound (`as = "A"`; L is the partition's leader when the
schedule starts) or a node's name (broker-2). A condition is parsed once, when the
file is read: a bad word is an input error naming the condition, never a wait that
can never end.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from elr_harness.cluster.observe import PartitionState

#: The partition's broker sets a condition may name.
SETS = ("isr", "elr", "last-known-elr", "fenced")
_NAME = r"[A-Za-z][A-Za-z0-9_-]*"


class ConditionError(ValueError):
    """A condition that is not one of the forms above (the message says which part)."""


@dataclass(frozen=True)
class Atom:
    """One fact: its form, the names it refers to, and the set it reads."""

    form: str
    names: tuple[str, ...] = ()
    subject: str = ""
    number: int = 0


@dataclass(frozen=True)
class Condition:
    """A parsed `until`: in one observation, every atom of one alternative holds."""

    text: str
    alternatives: tuple[tuple[Atom, ...], ...]

    @property
    def atoms(self) -> tuple[Atom, ...]:
        return tuple(a for group in self.alternatives for a in group)

    @property
    def registration(self) -> str | None:
        """The name of `X registered`: a condition read in X's log, not the partition."""
        first = self.atoms[0]
        return first.names[0] if first.form == "registered" else None

    @property
    def names(self) -> set[str]:
        return {n for atom in self.atoms for n in atom.names}

    def holds(self, state: PartitionState, broker: Callable[[str], int],
              replication_factor: int, min_isr: int) -> bool:
        """Whether `state` shows every atom of an alternative; `broker` maps a name to
        its broker id."""
        return any(all(_holds(a, state, broker, replication_factor, min_isr) for a in group)
                   for group in self.alternatives)


_FORMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("no-leader", re.compile(r"no leader")),
    ("leads", re.compile(rf"({_NAME}) leads")),
    ("not-in", re.compile(rf"({_NAME}) not in ({'|'.join(SETS)})")),
    ("in", re.compile(rf"({_NAME}) in ({'|'.join(SETS)})")),
    ("fenced", re.compile(rf"({_NAME}) fenced")),
    ("unfenced", re.compile(rf"({_NAME}) unfenced")),
    ("below", re.compile(r"isr below min-isr")),
    ("full", re.compile(r"isr full")),
    ("isr-is", re.compile(rf"isr is \[((?:{_NAME}(?:\s*,\s*{_NAME})*)?)\]")),
    ("not-empty", re.compile(r"(elr|last-known-elr) not empty")),
    ("empty", re.compile(r"(elr|last-known-elr) empty")),
    ("hwm", re.compile(r"high-watermark at least ([0-9]{1,12})")),
    ("lso-below", re.compile(r"lso below high-watermark")),
    ("elr-on", re.compile(r"elr on")),
    ("elr-off", re.compile(r"elr off")),
    ("registered", re.compile(rf"({_NAME}) registered")),
)


def parse_condition(text: str) -> Condition:
    """`text` as a Condition; ConditionError names the part that is no known form."""
    if not isinstance(text, str) or not text.strip():
        raise ConditionError("an empty condition")
    alternatives = []
    for alternative in re.split(r"\s+or\s+", text.strip()):
        parts = re.split(r"\s+and\s+", alternative.strip())
        alternatives.append(tuple(_atom(" ".join(p.split())) for p in parts))
    atoms = [a for group in alternatives for a in group]
    if len(atoms) > 1 and any(a.form == "registered" for a in atoms):
        raise ConditionError("`X registered` stands alone: it is read in X's log, not in "
                             "the partition's state")
    return Condition(text, tuple(alternatives))


def _atom(part: str) -> Atom:
    for form, pattern in _FORMS:
        match = pattern.fullmatch(part)
        if match is None:
            continue
        groups = match.groups()
        if form in ("leads", "fenced", "unfenced", "registered"):
            return Atom(form, (groups[0],))
        if form in ("in", "not-in"):
            return Atom(form, (groups[0],), groups[1])
        if form == "isr-is":
            names = tuple(n.strip() for n in groups[0].split(",")) if groups[0] else ()
            return Atom(form, names)
        if form in ("empty", "not-empty"):
            return Atom(form, (), groups[0])
        if form == "hwm":
            return Atom(form, number=int(groups[0]))
        return Atom(form)
    raise ConditionError(f"{part!r} is no condition (known: no leader, X leads, X in "
                         f"{'|'.join(SETS)}, X not in ..., X fenced, X unfenced, isr below "
                         "min-isr, isr full, isr is [X, ...], elr empty, elr not empty, "
                         "last-known-elr empty/not empty, high-watermark at least N, "
                         "lso below high-watermark, "
                         "elr on, elr off, X registered; joined by `and`, alternatives "
                         "by `or`)")


def _members(state: PartitionState, subject: str) -> Sequence[int] | None:
    """The set a condition reads; None where the cluster could not say."""
    return {"isr": state.isr, "elr": state.elr, "last-known-elr": state.last_known_elr,
            "fenced": state.fenced}[subject]


def _holds(atom: Atom, state: PartitionState, broker: Callable[[str], int],
           replication_factor: int, min_isr: int) -> bool:
    form = atom.form
    if form == "no-leader":
        return state.leader == -1
    if form == "leads":
        return state.leader == broker(atom.names[0])
    if form in ("in", "not-in", "fenced", "unfenced"):
        subject = atom.subject or "fenced"
        members = _members(state, subject)
        if members is None:  # the cluster could not say: neither holds
            return False
        inside = broker(atom.names[0]) in members
        return inside if form in ("in", "fenced") else not inside
    if form == "below":
        return len(state.isr) < (state.min_isr or min_isr)
    if form == "full":
        return len(state.isr) >= replication_factor
    if form == "isr-is":
        return sorted(state.isr) == sorted(broker(n) for n in atom.names)
    if form == "hwm":
        return state.high_watermark is not None and state.high_watermark >= atom.number
    if form == "lso-below":  # either offset unknown (not asked, no answer): not seen
        return (state.last_stable_offset is not None and state.high_watermark is not None
                and 0 <= state.last_stable_offset < state.high_watermark)
    if form == "registered":  # read in the broker's log (nemesis.schedule.played), never here
        return False
    if form in ("elr-on", "elr-off"):  # None: the node could not say; neither holds
        return state.elr_feature is not None and (state.elr_feature >= 1) == (form == "elr-on")
    members = _members(state, atom.subject)
    if members is None:
        return False
    return (not members) if form == "empty" else bool(members)


def described(state: PartitionState | None, names: Mapping[int, str] | None = None) -> str:
    """A partition's observed state in one line (what a wait saw instead)."""
    if state is None:
        return "the partition not observed"

    def ids(values: Sequence[int] | None) -> str:
        if values is None:
            return "?"
        return "[" + ", ".join((names or {}).get(v, str(v)) for v in sorted(values)) + "]"

    leader = (names or {}).get(state.leader, str(state.leader))
    return (f"leader {leader}, ISR {ids(state.isr)}, ELR {ids(state.elr)}, "
            f"LastKnownELR {ids(state.last_known_elr)}, fenced {ids(state.fenced)}")
