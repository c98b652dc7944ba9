"""The short table `harness run` and `harness check` print at the end.

A person at a terminal wants the verdict, why, which anomalies and how many,
and where to look next; the report holds the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from elr_harness.core.validate import printable
from elr_harness.report.verdict import anomaly_counts, checked_line, count_label, verdict_of

VERDICT_STYLES = {
    "valid": "bold white on green",
    "invalid": "bold white on red",
    "unknown": "bold black on yellow",
    "unchecked": "bold white on grey37",
}


def summary_table(results: dict[str, Any], report_path: Path | None) -> Table:
    """The summary as a rich Table (print_summary prints it; tests read it)."""
    css, word = verdict_of(results)
    table = Table(title="elr-harness result", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value", overflow="fold")
    table.add_row("verdict", Text(f" {word} ", style=VERDICT_STYLES[css]))
    # results.json and the path are the user's: no control character reaches the terminal
    table.add_row("reason", Text(printable(results.get("reason") or "no reason given")))
    checked = checked_line(results)
    if checked:
        table.add_row("checked", Text(checked))
    counts = anomaly_counts(results)
    bad = {str(n) for n in results.get("bad_anomaly_types") or []}
    if counts:
        for name in counts:
            style = "red" if name in bad else "yellow"
            table.add_row(Text(printable(name), style=style),
                          Text(printable(count_label(results, name))))
    else:
        table.add_row("anomalies", "none")
    if report_path is not None:
        table.add_row("report", Text(printable(report_path)))
    else:
        table.add_row("report", Text("not written (`harness report RUN_DIR` makes it)"))
    return table


def print_summary(results: dict[str, Any], report_path: Path | None) -> None:
    """Print the verdict table to the terminal (plain text when not a terminal)."""
    Console(highlight=False).print(summary_table(results, report_path))
