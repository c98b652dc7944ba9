"""The run's phases as one bar (test.json's `phases`, then the check's time from
results.json), and where the workload started, which is where the plots' time axis
begins: a run's set-up (cluster formatted and started) holds no operation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from elr_harness.report.html import Safe, join, not_available, tag
from elr_harness.report.report_inputs import checker_stats

#: The phase the plots start at.
WORKLOAD = "workload + nemesis"


@dataclass(frozen=True)
class Phase:
    name: str
    start_s: float | None  # on the history's clock; None for the check (after the run)
    duration_s: float


def recorded_phases(test: dict[str, Any]) -> list[Phase]:
    """test.json's phases, those well formed; none for a run recorded before they
    were (a dict of elapsed times) or with none at all."""
    phases = test.get("phases")
    if not isinstance(phases, list):
        return []
    out = []
    for phase in phases:
        if not isinstance(phase, dict):
            continue
        name, start, duration = phase.get("name"), phase.get("start_s"), phase.get("duration_s")
        if isinstance(name, str) and _number(start) and _number(duration) and duration >= 0:
            out.append(Phase(name, float(start), float(duration)))
    return out


def workload_start_s(test: dict[str, Any]) -> float:
    """Where the workload began on the history's clock; 0 when test.json does not say."""
    for phase in recorded_phases(test):
        if phase.name == WORKLOAD:
            return max(0.0, phase.start_s or 0.0)
    return 0.0


def phases_bar(test: dict[str, Any], results: dict[str, Any] | None) -> Safe:
    """One bar, a segment per phase, as wide as its share of the time to verdict."""
    phases = recorded_phases(test)
    if not phases:
        return not_available("Phases", "test.json records no phase times (a run recorded "
                                       "before they were, or one that never started).")
    check = checker_stats(results).get("checker_seconds")
    if _number(check) and check >= 0:
        phases.append(Phase("check", None, float(check)))
    total = sum(p.duration_s for p in phases) or 1.0
    segments = []
    for n, phase in enumerate(phases):
        label = f"{phase.name} {phase.duration_s:.0f} s"
        segments.append(tag("div", tag("span", label), class_=f"phase phase-{n % 7}",
                            style=f"flex-grow: {phase.duration_s / total:.4f}",
                            title=label))
    return join([tag("div", join(segments), class_="phases"),
                 tag("div", f"{total:.0f} s from the run's start to its verdict: "
                            + ", ".join(f"{p.name} {p.duration_s:.1f} s" for p in phases),
                     class_="muted")])


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
