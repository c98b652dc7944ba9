"""What `--nemesis` accepts, checked before anything starts."""

from __future__ import annotations

from dataclasses import dataclass

from harness.core.errors import BadInput
from nemesis.mix import FAULT_KINDS

SCENARIOS = ("unclean-last-replica",)
NONE = "none"


@dataclass(frozen=True)
class NemesisPlan:
    """`none`, one scripted scenario, or a random mix of fault kinds."""

    text: str
    scenario: str | None
    faults: tuple[str, ...]

    @property
    def needs_page_cache_layer(self) -> bool:
        return self.scenario == "unclean-last-replica" or "page-cache-loss" in self.faults

    @property
    def test_name(self) -> str:
        if self.scenario:
            return self.scenario
        return "-".join(self.faults) if self.faults else NONE


def valid_names() -> list[str]:
    return [NONE, *SCENARIOS, *FAULT_KINDS, "all"]


def parse_nemesis(text: str) -> NemesisPlan:
    """`none`, a scenario name, or a comma list of fault kinds (or `all`)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise BadInput(f"--nemesis is empty; valid: {', '.join(valid_names())}")
    unknown = [n for n in names if n not in valid_names()]
    if unknown:
        raise BadInput(f"unknown nemesis {', '.join(repr(n) for n in unknown)}; "
                       f"valid: {', '.join(valid_names())}")
    if names == [NONE]:
        return NemesisPlan(text, None, ())
    scenarios = [n for n in names if n in SCENARIOS]
    if scenarios:
        if len(names) > 1:
            raise BadInput(f"scenario {scenarios[0]} runs alone; do not combine it with "
                           "other nemeses")
        return NemesisPlan(text, scenarios[0], ())
    if NONE in names:
        raise BadInput("'none' cannot be combined with fault kinds")
    faults = FAULT_KINDS if "all" in names else tuple(dict.fromkeys(names))
    return NemesisPlan(text, None, tuple(faults))
