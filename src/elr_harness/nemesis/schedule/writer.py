"""A schedule as a file again (nemesis.schedule.file reads them): the run's
schedule.toml, each step with what playing it did, and the candidates of
`harness shrink`. What is written here reads back as the same schedule."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from elr_harness.core.toml_write import toml_value
from elr_harness.nemesis.needs import Needs
from elr_harness.nemesis.schedule.file import Placement, ScheduleFile
from elr_harness.nemesis.schedule.step import OBSERVER, Step


def played_toml(schedule: ScheduleFile, record: Mapping[str, Any]) -> str:
    """schedule.toml of a run: the file's steps as written, each with what playing
    it did (`played`: the resolved target, the wait's outcome, ...)."""
    done = {s["step"]: {k: v for k, v in s.items() if k != "step"}
            for s in record.get("steps", [])}
    head = [f"# the schedule played by this run (from {schedule.path}); "
            "`harness run --schedule` plays it again"]
    names = record.get("names")
    if names:
        head.append(f"# names bound in this run: {toml_value(dict(names))}")
    if record.get("renamed"):
        head.append(f"# its nodes, renamed by [placement]: {toml_value(dict(record['renamed']))}")
    return schedule_toml(schedule.help, schedule.steps, head,
                         lambda step: done.get(step.name) or {"not_played": True},
                         schedule.needs, schedule.placement)


def schedule_toml(help_text: str, steps: Sequence[Step], head: Sequence[str] = (),
                  played: Callable[[Step], Mapping[str, Any]] | None = None,
                  needs: Needs | None = None, placement: Placement | None = None) -> str:
    """`steps` as a schedule file (with each one's `played` table, when given)."""
    tables = []
    for step in steps:
        table = step_table(step)
        if played is not None:
            table["played"] = played(step)
        tables.append(table)
    chosen = {k: v for k, v in dataclasses.asdict(needs).items() if v is not None} \
        if needs else {}
    return tables_toml(help_text, tables, head, chosen,
                       placement.table() if placement else None)


def step_table(step: Step) -> dict[str, Any]:
    """One step as its [[step]] table has it."""
    fields: dict[str, Any] = {
        "name": step.name,
        "partition": step.partition_text,
        "fault": step.fault, "end": step.end, "target": step.target, "as": step.bind,
        "to": step.to,
        "settings": dataclasses.asdict(step.settings) if step.settings else None,
        "cut": step.cut, "scope": step.scope,
        "until": step.until.text if step.until else None,
        "read": step.read if (step.until or step.watch) and step.read != OBSERVER else None,
        "within_s": step.within_s if step.until else None,
        "hold_s": step.hold_s or None,
        "watch": step.watch.text if step.watch else None}
    return {k: v for k, v in fields.items() if v is not None}


def tables_toml(help_text: str, steps: Sequence[Mapping[str, Any]], head: Sequence[str] = (),
                needs: Mapping[str, Any] | None = None,
                placement: Mapping[str, Any] | None = None) -> str:
    """A schedule file of [[step]] tables (each a mapping of its fields, `played` last)."""
    lines = [*head, f"help = {toml_value(help_text)}"]
    for name, table in (("needs", needs), ("placement", placement)):
        if table:
            lines += ["", f"[{name}]", *(f"{k} = {toml_value(v)}" for k, v in table.items())]
    for table in steps:
        lines += ["", "[[step]]"]
        lines += [f"{key} = {toml_value(value)}" for key, value in table.items()
                  if key != "played" and value is not None]
        if "played" in table:
            lines.append(f"played = {toml_value(table['played'])}")
    return "\n".join(lines) + "\n"


def recorded_toml(record: Mapping[str, Any]) -> str:
    """schedule.toml of a run whose schedule was drawn as it went (a guided run):
    the steps it recorded, in file form, each with what playing it did."""
    head = ["# the schedule this run played, step by step (drawn as it went: each",
            "# target the node it resolved to); `harness run --schedule` plays it again"]
    return tables_toml(record.get("help", ""), record.get("steps", []), head,
                       record.get("needs"), record.get("placement"))
