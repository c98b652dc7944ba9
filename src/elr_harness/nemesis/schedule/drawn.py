"""The schedule a run drew as it went (a guided run's rounds), step by step in the
form of a schedule file's [[step]] tables (nemesis.schedule.file): each fault with
the node it resolved to and its settings, each end, each wait as the condition it
waited for and whether it saw it, each hold. The run writes them as schedule.toml
(nemesis.schedule.writer.recorded_toml), so `harness replay` and `harness shrink`
play a guided run's faults again without its draws."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

#: The shortest wait a file holds (nemesis.schedule.file: 0 < within_s).
MIN_WAIT_S = 0.1


class DrawnSteps:
    """The [[step]] tables of a drawn schedule, in the order played."""

    def __init__(self) -> None:
        self.tables: list[dict[str, Any]] = []
        #: step names of faults not ended yet, by the schedule's own label (F1 away)
        self.open: dict[str, str] = {}

    def _add(self, label: str, what: str, partition: str, **fields: Any) -> dict[str, Any]:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", what).strip("-")
        name = f"{label}-{len(self.tables) + 1}-{slug}"[:40].rstrip("-")
        table = {"name": name, "partition": partition,
                 **{k: v for k, v in fields.items() if v is not None}}
        self.tables.append(table)
        return table

    def fault(self, label: str, what: str, partition: str, kind: str, target: str | None,
              to: int | None = None, settings: Any = None,
              played: dict[str, Any] | None = None,
              cut: dict[str, list[str]] | None = None) -> str:
        """A fault made: its step's name (what its end names); `cut`: the exact cut of
        a kind that takes one (a step's `cut`, instead of a target)."""
        table = self._add(label, what, partition, fault=kind, target=target, to=to,
                          settings=dataclasses.asdict(settings) if settings else None,
                          cut=cut, played=played or {})
        self.open[f"{label}:{what}"] = table["name"]
        return table["name"]

    def end(self, label: str, what: str, partition: str) -> None:
        """The fault of `what` ended (no step when none is open under that label)."""
        name = self.open.pop(f"{label}:{what}", None)
        if name is not None:
            self._add(label, f"{what} ends", partition, end=name, played={})

    def end_all(self, label: str, partition: str) -> None:
        """Every fault of `label` still in force ended (a round's heal)."""
        for key in [k for k in self.open if k.startswith(f"{label}:")]:
            self.end(label, key.split(":", 1)[1], partition)

    def wait(self, label: str, what: str, partition: str, until: str, within_s: float,
             seen: bool, saw: str | None = None) -> None:
        played: dict[str, Any] = {"seen": seen}
        if saw is not None:
            played["saw"] = saw
        # a file's wait is bounded above zero: a schedule that waited 0 s looked once
        self._add(label, what, partition, until=until, within_s=max(within_s, MIN_WAIT_S),
                  played=played)

    def hold(self, seconds: float) -> None:
        """The last step held a while longer."""
        if self.tables and seconds > 0:
            last = self.tables[-1]
            last["hold_s"] = round(last.get("hold_s", 0.0) + seconds, 1)
            if "played" in last:  # `played` stays the table's last field
                last["played"] = last.pop("played")
