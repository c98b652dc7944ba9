"""`--config FILE`: the typed config's settings from a TOML file (or a run's
test.json, whose "config" records every setting the run used, so a run can be
replayed from it).

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
from pathlib import Path
from typing import Any

from elr_harness.core.errors import BadInput
from elr_harness.core.files import loads_json, read_text
from elr_harness.core.validate import shown_path

Settings = dict[str, Any]


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
