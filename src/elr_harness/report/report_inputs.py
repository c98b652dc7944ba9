"""What every report section reads (ReportInputs) and the few formats they share."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from elr_harness.core.config import ReportConfig
from elr_harness.report.checked_tables import CheckedTables
from elr_harness.report.faults import FaultBand
from elr_harness.report.lost_writes import LostWrites
from elr_harness.report.lso import LsoTables
from elr_harness.report.rundir import RunFiles


@dataclass(frozen=True)
class ReportInputs:
    """Everything a report is made of, gathered by reports.build."""

    run: RunFiles
    tables: CheckedTables
    bands: list[FaultBand]
    lost: LostWrites
    config: ReportConfig
    #: a run with transactions: each partition's LSO against its high watermark
    #: (None for a run without them: its report reads and shows nothing of them)
    lso: LsoTables | None = None


def seconds(time_ns: Any) -> str:
    """History times (ns since start) as seconds, the unit the whole report uses."""
    if isinstance(time_ns, int | float):
        return f"{time_ns / 1e9:.3f}"
    return "?"


def ids(members: Any) -> str:
    if members is None:
        return "unknown"
    if isinstance(members, list | tuple):
        return "{" + ", ".join(str(m) for m in members) + "}"
    return str(members)


def json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def checker_stats(results: dict[str, Any] | None) -> dict[str, Any]:
    """results.json's stats section ({} when absent or of another shape)."""
    stats = results.get("stats") if isinstance(results, dict) else None
    return stats if isinstance(stats, dict) else {}


def no_history_reason(inputs: ReportInputs) -> str:
    """Why a section drawn from the checker's tables has nothing to show, or ''."""
    if inputs.tables.problem:
        return inputs.tables.problem
    if checker_stats(inputs.run.results).get("history_lines") == 0:
        return "the history is empty: the run recorded no operation."
    return ""
