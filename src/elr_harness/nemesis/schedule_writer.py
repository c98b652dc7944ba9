"""A schedule as a file again (nemesis.schedule_file reads them): the run's
schedule.toml, each step with what playing it did, and the candidates of
`harness shrink`. What is written here reads back as the same schedule."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from elr_harness.nemesis.schedule_file import OBSERVER, Needs, ScheduleFile, Step


def played_toml(schedule: ScheduleFile, record: Mapping[str, Any]) -> str:
    """schedule.toml of a run: the file's steps as written, each with what playing
    it did (`played`: the resolved target, the wait's outcome, ...)."""
    done = {s["step"]: {k: v for k, v in s.items() if k != "step"}
            for s in record.get("steps", [])}
    head = [f"# the schedule played by this run (from {schedule.path}); "
            "`harness run --schedule` plays it again"]
    names = record.get("names")
    if names:
        head.append(f"# names bound in this run: {_value(dict(names))}")
    return schedule_toml(schedule.help, schedule.steps, head,
                         lambda step: done.get(step.name) or {"not_played": True},
                         schedule.needs)


def schedule_toml(help_text: str, steps: Sequence[Step], head: Sequence[str] = (),
                  played: Callable[[Step], Mapping[str, Any]] | None = None,
                  needs: Needs | None = None) -> str:
    """`steps` as a schedule file (with each one's `played` table, when given)."""
    lines = [*head, f"help = {_value(help_text)}"]
    chosen = {k: v for k, v in dataclasses.asdict(needs).items() if v is not None} \
        if needs else {}
    if chosen:
        lines += ["", "[needs]", *(f"{k} = {_value(v)}" for k, v in chosen.items())]
    for step in steps:
        lines += ["", "[[step]]", f"name = {_value(step.name)}"]
        fields: list[tuple[str, Any]] = [
            ("fault", step.fault), ("end", step.end), ("target", step.target),
            ("as", step.bind), ("to", step.to),
            ("settings", dataclasses.asdict(step.settings) if step.settings else None),
            ("until", step.until.text if step.until else None),
            ("read", step.read if step.until and step.read != OBSERVER else None),
            ("within_s", step.within_s if step.until else None),
            ("hold_s", step.hold_s or None)]
        lines += [f"{key} = {_value(value)}" for key, value in fields if value is not None]
        if played is not None:
            lines.append(f"played = {_value(played(step))}")
    return "\n".join(lines) + "\n"


def _value(value: Any) -> str:
    """`value` as TOML (strings, numbers, booleans, lists and inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{json.dumps(str(k))} = {_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(str(value))
