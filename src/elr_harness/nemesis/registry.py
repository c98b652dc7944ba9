"""What `--nemesis` accepts, checked before anything starts, and what a run of it
needs: read from the registries of fault kinds (nemesis.faults) and scripted
scenarios (nemesis.scenarios), never from a kind's name."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from elr_harness.core.errors import BadInput
from elr_harness.nemesis.faults import FAULT_KINDS, NOT_IN_ALL, PACKAGES, in_all
from elr_harness.nemesis.needs import Layer, Needs, Setting
from elr_harness.nemesis.scenarios import SCENARIOS, ScenarioPackage
from elr_harness.nemesis.scenarios.base import SHORT_KAFKA_TIMEOUTS
from elr_harness.nemesis.schedule.compose import check_overlap, resources_of
from elr_harness.nemesis.schedule.file import (
    ScheduleFile,
    parse_schedule,
    read_schedule,
    shipped_schedules,
)

NONE = "none"
#: Every kind whose package is in `all` (nemesis.faults.in_all).
ALL = "all"
#: Faults chosen to reach the KIP-966 states not yet reached (nemesis.guided.search).
GUIDED = "guided"
GUIDED_HELP = ("faults chosen from the observed state to reach the KIP-966 states not yet "
               "reached (in this run, or in the soak so far: --reached), overlapped where a "
               "state needs it, within KIP-966's fault budget; every fault kind")


@dataclass(frozen=True)
class NemesisPlan:
    """`none`, one scripted scenario, or random mixes of fault kinds: one mix, or
    several that overlap (`partition+kill,pause`), each acting on its own
    resources (nemesis.schedule.compose.check_overlap)."""

    text: str
    scenario: str | None
    #: the mixes: one group of kinds each
    groups: tuple[tuple[str, ...], ...] = ()
    #: `guided`: faults aimed at KIP-966 states (nemesis.guided.search), of every kind
    guided: bool = False
    #: `--schedule FILE`: the steps of a schedule file (nemesis.schedule.file)
    schedule: ScheduleFile | None = None

    @property
    def faults(self) -> tuple[str, ...]:
        """Every kind of every mix (a guided schedule's: every kind)."""
        if self.guided:
            return FAULT_KINDS
        if self.schedule:
            return self.schedule.kinds
        return tuple(dict.fromkeys(k for group in self.groups for k in group))

    @property
    def scripted(self) -> ScenarioPackage | None:
        return SCENARIOS[self.scenario] if self.scenario else None

    @cached_property
    def played_file(self) -> ScheduleFile | None:
        """The schedule file the run plays: --schedule's, or its scenario's shipped one
        (None: a mix, a guided run, a scenario still in Python); read once, so the
        player and the run's schedule.toml share one parse."""
        if self.schedule is not None:
            return self.schedule
        scripted = self.scripted
        if scripted is None or scripted.file is None:
            return None
        # named as `--schedule NAME` plays it (the header of the run's schedule.toml)
        return parse_schedule(shipped_schedules()[scripted.file].read_text(), scripted.file)

    @property
    def needs(self) -> Needs:
        """What the file it plays needs of the run ([needs]; nothing for a mix): checked
        against the run before anything starts (run.spec)."""
        played = self.played_file
        return played.needs if played is not None else Needs()

    @property
    def layers(self) -> frozenset[Layer]:
        """The storage layers its kinds or scenario need under the brokers."""
        needs = [PACKAGES[k].layers for k in self.faults]
        if self.scripted:
            needs.append(self.scripted.layers)
        return frozenset().union(*needs)

    @property
    def needs_page_cache_layer(self) -> bool:
        return Layer.PAGE_CACHE in self.layers

    @property
    def cluster_settings(self) -> tuple[Setting, ...]:
        """The config values its kinds or scenario need unless the user chose them."""
        if self.scripted:
            return self.scripted.cluster_settings
        kinds = tuple(s for k in self.faults for s in PACKAGES[k].cluster_settings)
        if self.guided:  # a broker that is no replica answers through every round
            return (Setting("cluster.brokers", lambda run: run.guided.brokers), *kinds)
        if self.schedule:  # its waits are bounded as a scenario's: its Kafka timeouts
            # (unless it says otherwise), and what its [needs] table asks last, over its
            # kinds' defaults
            needs = self.schedule.needs
            short = SHORT_KAFKA_TIMEOUTS if needs.short_kafka_timeouts is not False else ()
            return (*short, *kinds, *needs.settings())
        return kinds

    @property
    def ends_by_itself(self) -> bool:
        """A scenario or a schedule file: the run ends when its steps are done."""
        return bool(self.scenario or self.schedule)

    @property
    def test_name(self) -> str:
        """The store's folder for its runs: the names as typed (`all` stays `all`),
        `-` between the kinds of a mix and `+` between mixes; every part is a
        name parse_nemesis knew, so it is safe as a folder name."""
        if self.scenario:
            return self.scenario
        if self.schedule:
            return "schedule-" + (re.sub(r"[^A-Za-z0-9_-]", "_", self.schedule.name)[:60]
                                  or "file")
        if self.guided:
            return GUIDED
        if not self.groups:
            return NONE
        return "+".join(_group_name(_names(part)) for part in self.text.split("+"))


#: The longest a mix's part of the store folder's name may be: every kind typed out
#: made one of 180 characters.
MAX_GROUP_NAME = 60


def _group_name(names: list[str]) -> str:
    """One mix's part of the store folder's name: its names as typed, `-` between;
    the kinds of `all` typed out are `all` (the others after it); a name still
    longer than MAX_GROUP_NAME is its first kinds and how many there are."""
    names = list(dict.fromkeys(names))
    if ALL not in names and set(in_all()) <= set(names):
        names = [ALL, *(n for n in names if n not in in_all())]
    name = "-".join(names)
    if len(name) <= MAX_GROUP_NAME:
        return name
    kept: list[str] = []
    for kind in names:
        if len("-".join([*kept, kind])) > MAX_GROUP_NAME - 12:
            break
        kept.append(kind)
    return "-".join([*kept, f"{len(names)}-kinds"])


def valid_names() -> list[str]:
    return [NONE, GUIDED, *SCENARIOS, *FAULT_KINDS, ALL]


def parse_nemesis(text: str, schedule: str | None = None) -> NemesisPlan:
    """`none`, a scenario name, or a comma list of fault kinds (or `all`); `+`
    between comma lists makes mixes that overlap. With `schedule` (--schedule FILE),
    that file's steps, and --nemesis must be none."""
    if schedule is not None:
        if text.strip() != NONE:
            raise BadInput(f"--schedule plays its own faults: give no --nemesis with it "
                           f"(got {text[:60]!r})")
        return NemesisPlan(NONE, None, schedule=read_schedule(Path(schedule)))
    groups = [_kinds(part, text) for part in text.split("+")] if "+" in text else []
    if groups:
        plan = NemesisPlan(text, None, tuple(groups))
        try:
            check_overlap([resources_of(g) for g in groups])
        except ValueError as err:
            raise BadInput(f"--nemesis {text}: {err}") from None
        return plan
    names = _names(text)
    if not names:
        raise BadInput(f"--nemesis is empty; valid: {', '.join(valid_names())}")
    _known(names)
    if names == [NONE]:
        return NemesisPlan(text, None)
    if GUIDED in names:
        if len(names) > 1:
            raise BadInput(f"{GUIDED} runs alone (it uses every fault kind); do not combine "
                           "it with other nemeses")
        return NemesisPlan(text, None, guided=True)
    scenarios = [n for n in names if n in SCENARIOS]
    if scenarios:
        if len(names) > 1:
            raise BadInput(f"scenario {scenarios[0]} runs alone; do not combine it with "
                           "other nemeses")
        return NemesisPlan(text, scenarios[0])
    return NemesisPlan(text, None, (_kinds(text, text),))


def plan_or_none(text: str, schedule: str | None = None) -> NemesisPlan | None:
    """The plan of `text`, or None when it does not parse (validation says why later)."""
    try:
        return parse_nemesis(text, schedule)
    except BadInput:
        return None


def _names(part: str) -> list[str]:
    """The names of a comma list, stripped, in the order typed."""
    return [n.strip() for n in part.split(",") if n.strip()]


def _known(names: list[str]) -> None:
    unknown = [n for n in names if n not in valid_names()]
    if unknown:
        raise BadInput(f"unknown nemesis {', '.join(repr(n) for n in unknown)}; "
                       f"valid: {', '.join(valid_names())}")


def _kinds(part: str, text: str) -> tuple[str, ...]:
    """The fault kinds of one mix of `text`."""
    names = _names(part)
    if not names:
        raise BadInput(f"--nemesis {text}: an empty mix; valid: {', '.join(valid_names())}")
    _known(names)
    if NONE in names or GUIDED in names or any(n in SCENARIOS for n in names):
        raise BadInput(f"--nemesis {text}: 'none', '{GUIDED}' and scenarios cannot be mixed "
                       "with fault kinds")
    if ALL in names:
        return tuple(dict.fromkeys([*in_all(), *(n for n in names if n != ALL)]))
    return tuple(dict.fromkeys(names))


def nemesis_flag_help() -> str:
    """`--nemesis`'s help in `harness run --help`: every name it accepts."""
    left_out = f" (every kind but {', '.join(NOT_IN_ALL)})" if NOT_IN_ALL else ""
    return (f"{NONE}, {GUIDED}, a scenario ({', '.join(SCENARIOS)}), or a comma list of "
            f"fault kinds ({', '.join(FAULT_KINDS)}) or {ALL}{left_out}; lists joined by + overlap "
            "(partition+kill,pause: one network mix and one process mix at once); each "
            "is described below")


def nemesis_epilog(width: int = 79) -> str:
    """The end of `harness run --help`: one line per scenario and fault kind, from
    the registries (already laid out: the parser must not reflow it)."""
    name_width = max(len(n) for n in (*SCENARIOS, *FAULT_KINDS, GUIDED)) + 2

    def entry(name: str, text: str) -> list[str]:
        return textwrap.wrap(text, width, initial_indent=f"  {name:<{name_width}}",
                             subsequent_indent=" " * (name_width + 2))

    lines = entry(GUIDED, GUIDED_HELP) + ["", "scenarios (--nemesis NAME, alone):"]
    for name, scenario in SCENARIOS.items():
        lines += entry(name, scenario.help)
    lines += ["", f"fault kinds (--nemesis KIND,KIND,... or {ALL}):"]
    for name, package in PACKAGES.items():
        lines += entry(name, package.help + ("" if package.in_all else f" [not in {ALL}]"))
    return "\n".join(lines)
