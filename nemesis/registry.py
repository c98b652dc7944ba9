"""What `--nemesis` accepts, checked before anything starts."""

from __future__ import annotations

from dataclasses import dataclass

from harness.core.errors import BadInput
from nemesis.mix import FAULT_KINDS
from nemesis.packages import NOT_IN_ALL
from nemesis.schedules import check_overlap, resources_of

SCENARIOS = ("unclean-last-replica", "fenced-last-leader")
NONE = "none"


@dataclass(frozen=True)
class NemesisPlan:
    """`none`, one scripted scenario, or random mixes of fault kinds: one mix, or
    several that overlap (`partition+kill,pause`), each acting on its own
    resources (nemesis.schedules.check_overlap)."""

    text: str
    scenario: str | None
    #: the mixes: one group of kinds each
    groups: tuple[tuple[str, ...], ...] = ()

    @property
    def faults(self) -> tuple[str, ...]:
        """Every kind of every mix."""
        return tuple(dict.fromkeys(k for group in self.groups for k in group))

    @property
    def needs_page_cache_layer(self) -> bool:
        return self.scenario == "unclean-last-replica" or "page-cache-loss" in self.faults

    @property
    def test_name(self) -> str:
        if self.scenario:
            return self.scenario
        return "+".join("-".join(g) for g in self.groups) if self.groups else NONE


def valid_names() -> list[str]:
    return [NONE, *SCENARIOS, *FAULT_KINDS, "all"]


def parse_nemesis(text: str) -> NemesisPlan:
    """`none`, a scenario name, or a comma list of fault kinds (or `all`); `+`
    between comma lists makes mixes that overlap."""
    groups = [_kinds(part, text) for part in text.split("+")] if "+" in text else []
    if groups:
        plan = NemesisPlan(text, None, tuple(groups))
        try:
            check_overlap([resources_of(g) for g in groups])
        except ValueError as err:
            raise BadInput(f"--nemesis {text}: {err}") from None
        return plan
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise BadInput(f"--nemesis is empty; valid: {', '.join(valid_names())}")
    _known(names)
    if names == [NONE]:
        return NemesisPlan(text, None)
    scenarios = [n for n in names if n in SCENARIOS]
    if scenarios:
        if len(names) > 1:
            raise BadInput(f"scenario {scenarios[0]} runs alone; do not combine it with "
                           "other nemeses")
        return NemesisPlan(text, scenarios[0])
    return NemesisPlan(text, None, (_kinds(text, text),))


def _known(names: list[str]) -> None:
    unknown = [n for n in names if n not in valid_names()]
    if unknown:
        raise BadInput(f"unknown nemesis {', '.join(repr(n) for n in unknown)}; "
                       f"valid: {', '.join(valid_names())}")


def _kinds(part: str, text: str) -> tuple[str, ...]:
    """The fault kinds of one mix of `text`."""
    names = [n.strip() for n in part.split(",") if n.strip()]
    if not names:
        raise BadInput(f"--nemesis {text}: an empty mix; valid: {', '.join(valid_names())}")
    _known(names)
    if NONE in names or any(n in SCENARIOS for n in names):
        raise BadInput(f"--nemesis {text}: 'none' and scenarios cannot be mixed with "
                       "fault kinds")
    if "all" in names:
        return tuple(dict.fromkeys([k for k in FAULT_KINDS if k not in NOT_IN_ALL]
                                   + [n for n in names if n != "all"]))
    return tuple(dict.fromkeys(names))
