"""A recorder for injector tests: the lines a FaultInjector records, kept in a list."""

from __future__ import annotations

from typing import Any


class ListRecorder:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def record(self, **fields: Any) -> dict[str, Any]:
        self.lines.append(fields)
        return fields
