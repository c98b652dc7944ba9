"""`--config FILE`: the typed config's settings from a TOML file (or a run's
test.json, whose "config" records every setting the run used, so a run can be
replayed from it).

The settings' one way down, from the file to a run's typed config:
1. here, file_settings: the file read (within files.py's bounds), each retired
   setting moved to where it went or dropped (a line each), and the paths it
   names kept for messages;
2. run/config.py: each section typed onto its dataclass (apply, here), each fault
   kind's table onto its package's defaults, then the flags typed, then what the
   nemesis's kinds need;
3. core/validate.py: every rule, each message naming where the value came from
   (the flag, the file's table and key, or the default).

The file's tables are the config's sections ([cluster], [cluster.timings],
[topic], [workload], [run], [checker]); each key is a field of that section's
dataclass. An unknown section or key, or a value of the wrong type, is refused
with a message naming it: a typo must not silently keep a default.
"""

from __future__ import annotations

import dataclasses
import tomllib
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elr_harness.core.errors import BadInput
from elr_harness.core.files import loads_json, read_text
from elr_harness.core.validate import shown_path

Settings = dict[str, Any]

#: test.json's format: 1 had no `format` and its kinds' settings in [run] (disk_fault,
#: slow_network, bounce_*), 2 has them in [run.faults.<kind>].
TEST_JSON_FORMAT = 2

#: Settings a --config file or an earlier run's test.json may still hold: where
#: each went (a path of today's config), or None when it is gone (it is ignored).
#: Either way a line says so: a recorded run replays, it is never refused for one.
RETIRED: dict[str, str | None] = {
    "run.disk_fault": "run.faults.disk-fault",
    "run.slow_network": "run.faults.slow-network",
    "run.bounce_hold_margin_s": "run.faults.bounce-leader.hold_margin_s",
    "run.bounce_leader_imbalance_check_s": "run.faults.bounce-leader.leader_imbalance_check_s",
    "run.guided.slow_rate_kbit": "run.faults.slow-network.away_rate_kbit",
    "run.guided.slow_loss": "run.faults.slow-network.away_loss",
    "run.scenario.quiet_after_faults_s": "run.quiet_after_faults_s",
    "run.scenario.warmup_s": None,
    # the holds and rates of the scenarios now played from their files (#55): each
    # file's own hold_s and settings say them
    "run.scenario.hold_min_isr_lowered_s": None,
    "run.scenario.hold_alone_s": None,
    "run.scenario.hold_fenced_s": None,
    "run.scenario.unfenced_poll_s": None,
    "run.scenario.slow_follower_rate_kbit": None,
    "run.scenario.slow_follower_loss": None,
    "run.scenario.slow_follower_hold_s": None,
    "run.scenario.disk_failure_hold_s": None,
    "checker.convert_with_duckdb": None,
    "checker.convert_threads": None,
    "checker.convert_memory": None,
}


def migrate(settings: dict[str, Any], where: str,
            note: Callable[[str], None]) -> dict[str, Any]:
    """The settings with every RETIRED one moved to where it went (a value already
    at the new place wins) or dropped, each with a line to `note`."""
    out = _copy(settings)
    for old, new in RETIRED.items():
        *parents, key = old.split(".")
        table = _table(out, parents)
        if table is None or key not in table:
            continue
        value = table.pop(key)
        if new is None:
            note(f"{where}{_shown_setting(old)} is retired; ignored")
            continue
        *new_parents, new_key = new.split(".")
        target = _table(out, new_parents, make=True)
        if target is None:
            note(f"{where}{_shown_setting(old)} is retired; ignored (no table for it)")
            continue
        if isinstance(value, dict) and isinstance(target.get(new_key, {}), dict):
            target[new_key] = {**value, **target.get(new_key, {})}
        else:
            target.setdefault(new_key, value)
        note(f"{where}{_shown_setting(old)} is retired; read as {_shown_setting(new)}")
    return out


def _copy(value: Any) -> Any:
    return {k: _copy(v) for k, v in value.items()} if isinstance(value, dict) else value


def _table(settings: dict[str, Any], path: list[str], make: bool = False
           ) -> dict[str, Any] | None:
    table: Any = settings
    for key in path:
        if not isinstance(table, dict):
            return None
        if key not in table and make:
            table[key] = {}
        table = table.get(key)
    return table if isinstance(table, dict) else None


def _shown_setting(path: str) -> str:
    """`run.disk_fault` -> `[run] disk_fault`, as TOML names it."""
    table, _, key = path.rpartition(".")
    return f"[{table}] {key}"


@dataclass(frozen=True)
class FileSettings:
    """A --config file's settings, retired ones moved, and the paths it names."""

    #: "--config FILE: ", how messages name the file ("" without one)
    where: str
    tables: Settings
    #: `section.field` of every setting the file names
    paths: frozenset[str]


def file_settings(path: Path | None, note: Callable[[str], None]) -> FileSettings:
    """Step 1 of the settings' way down (the module's docstring): the file's settings
    (none without a file), each retired one said to `note`."""
    where = f"--config {shown_path(path)}: " if path else ""
    tables = migrate(read_settings(path), where, note) if path else {}
    return FileSettings(where, tables, frozenset(setting_paths(tables)))


def read_settings(path: Path) -> Settings:
    """The file's sections as nested dicts (test.json: its "config" entry), read
    within files.py's bounds (a regular file, 16 MiB, 64 levels of nesting)."""
    shown = f"--config {shown_path(path)}"
    text = read_text(path, shown)
    if Path(path).suffix == ".json":
        data = loads_json(text, shown)
        config = data.get("config") if isinstance(data, dict) else None
        if not isinstance(config, dict):
            raise BadInput(f"{shown}: no \"config\" entry (not a run's test.json)")
        topics = config.pop("topics", None)
        if topics is not None and not isinstance(topics, list):
            raise BadInput(f"{shown}: [topics] must be a list of tables, got {topics!r:.60}")
        if topics:  # test.json lists topics; a run takes one
            config["topic"] = topics[0]
        return config
    try:
        return tomllib.loads(text)
    except ValueError as err:  # TOMLDecodeError, or an int of more than 4300 digits
        raise BadInput(f"{shown}: not TOML ({str(err)[:120]})") from None
    except RecursionError:
        raise BadInput(f"{shown}: not TOML (nested too deep)") from None


def setting_paths(settings: Settings, prefix: str = "") -> set[str]:
    """`section.field` of every leaf setting the file names (nested tables flattened),
    so a rule broken by one of them names the file."""
    paths = set()
    for key, value in settings.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and prefix.count(".") < 8:
            paths |= setting_paths(value, path)
        else:
            paths.add(path)
    return paths


def apply(section: Any, settings: Any, where: str) -> Any:
    """A copy of the frozen dataclass `section` with `settings` (a dict) applied;
    `where` names the table as TOML does (`--config F: [cluster.timings]`)."""
    if not isinstance(settings, dict):
        raise BadInput(f"{where} must be a table of settings, got {settings!r:.60}")
    fields = {f.name: f for f in dataclasses.fields(section)}
    hints = typing.get_type_hints(type(section))
    changes = {}
    for key, value in settings.items():
        if key not in fields:
            raise BadInput(f"{where} has no setting {str(key)[:60]!r}; known: "
                           f"{', '.join(sorted(fields))}")
        current = getattr(section, key)
        if dataclasses.is_dataclass(current):
            changes[key] = apply(current, value, f"{where[:-1]}.{key}]")
        else:
            changes[key] = _typed(value, hints[key], f"{where} {key}")
    return dataclasses.replace(section, **changes)


def _typed(value: Any, hint: Any, where: str) -> Any:
    """value as the field's type, or BadInput naming the setting."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in args:
            return None
        for arg in (a for a in args if a is not type(None)):
            try:
                return _typed(value, arg, where)
            except BadInput:
                continue
        raise BadInput(f"{where}: {value!r:.60} is not {hint}")
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise BadInput(f"{where}: {value!r:.60} is not a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_typed(v, args[0], where) for v in value)
        if len(value) != len(args):
            raise BadInput(f"{where}: {value!r:.60} needs {len(args)} items")
        return tuple(_typed(v, a, where) for v, a in zip(value, args, strict=True))
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:
                raise BadInput(f"{where}: {value!r:.60} is not a finite number") from None
    elif hint is str:
        if isinstance(value, str):
            return value
    elif hint is Path:
        if isinstance(value, str) and value:
            return Path(value)
    raise BadInput(f"{where}: {value!r:.60} is not {getattr(hint, '__name__', hint)}")
