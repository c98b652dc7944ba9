"""`harness report RUN_DIR`: read a run directory, write its report.html, refresh the index.

The report only reads what the run and the checker wrote; the one file it
writes is report.html (replaced atomically, so a browser never sees half a
page), plus the store's index.html.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from elr_harness.core.config import ReportConfig
from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.core.validate import printable
from elr_harness.report.atomic import is_our_report, write_atomically
from elr_harness.report.checked_tables import (
    CheckedTables,
    Interest,
    example_interest,
    read_checked_tables,
)
from elr_harness.report.faults import coloured, fault_colours, pair_faults
from elr_harness.report.index import shown, write_index
from elr_harness.report.lost_writes import lost_writes_of
from elr_harness.report.render import render_report
from elr_harness.report.report_inputs import ReportInputs
from elr_harness.report.rundir import NOT_CHECKED, RunFiles, load_run, store_of
from elr_harness.report.transactions import lso_of

REPORT_NAME = "report.html"


def wanted_ops(results: dict[str, Any] | None) -> dict[int, Interest]:
    """The op indices anomaly examples name, with what all examples naming each are about."""
    wanted: dict[int, tuple[set[int], set[tuple[int, int]]]] = {}
    anomalies = results.get("anomalies") if results else None
    if not isinstance(anomalies, dict):
        return {}
    for entry in anomalies.values():
        examples = entry.get("examples") if isinstance(entry, dict) else None
        for example in examples if isinstance(examples, list) else []:
            if not isinstance(example, dict) or not isinstance(example.get("ops"), list):
                continue
            interest = example_interest(example)
            for index in example["ops"]:
                if isinstance(index, int):
                    values, positions = wanted.setdefault(index, (set(), set()))
                    values.update(interest.values)
                    positions.update(interest.positions)
    return {i: Interest(frozenset(v), frozenset(p)) for i, (v, p) in wanted.items()}


def coverage_examples(results: dict[str, Any] | None) -> frozenset[int]:
    """The op indices results.json's `coverage` gives as examples."""
    coverage = results.get("coverage") if results else None
    if not isinstance(coverage, dict):
        return frozenset()
    return frozenset(e["example"] for e in coverage.values()
                     if isinstance(e, dict) and type(e.get("example")) is int)


def checked_tables_of(run: RunFiles) -> CheckedTables:
    """What the checker's tables hold for the report, or why there is nothing: a run
    never checked (or whose check failed) has no results.json, and its plots and
    examples are omitted rather than drawn from the raw history."""
    if run.history_path is None:
        return CheckedTables(problem="history.jsonl is missing from the run directory.")
    if run.results is None:
        return CheckedTables(problem=f"the history was not checked ({run.results_problem}).")
    return read_checked_tables(run.history_path, wanted_ops(run.results),
                               marked=coverage_examples(run.results))


def build_report(run_dir: Path, config: ReportConfig) -> Path:
    """Render RUN_DIR/report.html from the run's files; refresh the store index if any."""
    target = run_dir / REPORT_NAME
    if not is_our_report(target):
        raise BadInput(f"{target} is not a report the harness wrote (a file of yours?); "
                       "it is left as it is: move it away to write the report")
    run = load_run(run_dir)
    if run.results is None and run.results_problem != NOT_CHECKED:
        # a results.json that is there but unreadable, or of another shape: a page saying
        # NOT CHECKED (or VALID from a made-up field) must not replace the last good one
        raise BadInput(f"{printable(str(run_dir)[:200])}/{run.results_problem}; "
                       f"report.html is left as it was")
    tables = checked_tables_of(run)
    inputs = ReportInputs(
        run=run,
        tables=tables,
        bands=coloured(pair_faults(tables.fault_events), fault_colours(run.test)),
        lost=lost_writes_of(run.results),
        config=config,
        lso=lso_of(run, tables.problem),
    )
    # a run directory's name, or a text of test.json, may hold what UTF-8 cannot
    page = shown(render_report(inputs))
    try:
        write_atomically(target, page)
    except OSError as err:
        raise HarnessError(f"cannot write {target}: {err}") from err
    store = store_of(run_dir)
    if store is not None:
        try:
            write_index(store)
        except OSError as err:
            raise HarnessError(f"report written to {target}, but the store index "
                               f"could not be: {err}") from err
    return target
