"""TOML text from plain data (Python reads TOML, it does not write it): the schedule
files a run keeps and the config a replay pins. Nested tables are written inline,
which reads back the same."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def toml_value(value: Any) -> str:
    """`value` as TOML (strings, numbers, booleans, lists and inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def toml_document(data: Mapping[str, Any], head: Sequence[str] = ()) -> str:
    """A document: top-level keys first, then each table as [name] (its own tables
    inline)."""
    lines = list(head)
    lines += [f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in data.items()
              if not isinstance(v, Mapping)]
    for key, table in data.items():
        if isinstance(table, Mapping):
            lines += ["", f"[{json.dumps(str(key))}]"]
            lines += [f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"
