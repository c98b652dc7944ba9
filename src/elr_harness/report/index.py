"""store/index.html: every run of the store, newest first, with its verdict and a link.

Runs are the directories store/<test>/<YYYYmmddTHHMMSS>/ that hold test.json;
the page is regenerated whenever a report is built, and `harness serve` answers
/ with it from memory. It reads only test.json and results.json of each run; a
run that cannot be read is a row saying so, never the end of the index.

The page carries a generator marker (GENERATOR): an index.html without it is
the user's, and is never overwritten.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from elr_harness.core.errors import BadInput
from elr_harness.report.atomic import may_replace, write_atomically
from elr_harness.report.html import NO_FAVICON, Safe, h, join, stylesheet, table, tag
from elr_harness.report.rundir import RUN_DIR_NAME, load_results, load_test_json
from elr_harness.report.verdict import anomaly_counts, verdict_of

INDEX_NAME = "index.html"
#: The index's columns.
HEADERS = ["time", "test", "nemesis / scenario", "ELR", "verdict", "anomalies", "Kafka", "seed",
           ""]
#: What marks an index.html as the harness's own (only such a file is overwritten).
GENERATOR = '<meta name="generator" content="elr-harness index">'
#: How the index written before GENERATOR existed began (its <title>, before any
#: user content): such a page is the harness's too, and is refreshed.
LEGACY_HEAD = '<html lang="en"><head><meta charset="utf-8">'
LEGACY_TITLE = "<title>elr-harness runs</title>"


@dataclass(frozen=True)
class RunSummary:
    """One index row: what test.json and results.json say about a run."""

    path: Path
    rel: str
    time: str
    test: dict[str, Any] | None
    results: dict[str, Any] | None
    problem: str | None
    has_report: bool


def shown(text: str) -> str:
    """Text as a page can hold it: a file name's bytes that are not UTF-8 (kept by
    Python as surrogates, which no encoder takes) and a lone surrogate a JSON
    file spelt (\\ud800) become U+FFFD."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _display_time(name: str) -> str:
    if RUN_DIR_NAME.match(name):
        try:
            return datetime.strptime(name, "%Y%m%dT%H%M%S").strftime("%Y-%m-%d %H:%M:%S")
        except ValueError:  # 20261399T999999: digits, but no time
            pass
    return shown(name)


def _summary(test_dir: Path, run_dir: Path) -> RunSummary:
    test: dict[str, Any] | None
    problem = None
    try:
        test = load_test_json(run_dir)
    except BadInput as err:
        test, problem = None, f"unreadable: {shown(err.message)}"
    results, why = load_results(run_dir)
    if results is None and problem is None and os.path.lexists(run_dir / "results.json"):
        problem = f"unreadable: {shown(why or '')}"
    return RunSummary(
        path=run_dir, rel=f"{test_dir.name}/{run_dir.name}", time=_display_time(run_dir.name),
        test=test, results=results, problem=problem,
        has_report=(run_dir / "report.html").is_file())


def _unreadable(path: Path, rel: str, err: OSError) -> RunSummary:
    """A row for a folder the index cannot list (its permissions, say)."""
    return RunSummary(path=path, rel=rel, time=shown(path.name), test=None, results=None,
                      problem=f"unreadable: {err.strerror or err}", has_report=False)


def find_runs(store: Path) -> list[RunSummary]:
    """Every run directory of the store, newest first (by its time-stamped name)."""
    runs = []
    for test_dir in store.iterdir():
        if test_dir.is_symlink() or not test_dir.is_dir():
            continue
        try:
            run_dirs = list(test_dir.iterdir())
        except OSError as err:
            runs.append(_unreadable(test_dir, test_dir.name, err))
            continue
        for run_dir in run_dirs:
            if run_dir.is_symlink() or not (run_dir / "test.json").is_file():
                continue
            runs.append(_summary(test_dir, run_dir))
    runs.sort(key=lambda r: (r.path.name, r.path.parent.name), reverse=True)
    return runs


def _latest(store: Path) -> Path | None:
    link = store / "latest"
    if link.is_symlink() or link.is_dir():
        try:
            return link.resolve()
        except OSError:
            return None
    return None


def _anomaly_cell(results: dict[str, Any] | None) -> Safe:
    counts = anomaly_counts(results)
    if results is None:
        return Safe("")
    if not counts:
        return h("none")
    bad = set(results.get("bad_anomaly_types") or [])
    cells = [tag("strong", f"{name} ×{n}") if name in bad else h(f"{name} ×{n}")
             for name, n in counts.items()]
    return Safe(", ".join(cells))


def _row(run: RunSummary, latest: Path | None) -> list[object]:
    """The run's cells; a results.json or test.json of a shape the cells cannot
    show makes the row say so (one odd run never ends the index)."""
    try:
        return _cells(run, latest)
    except Exception as err:  # noqa: BLE001 - any odd value of a user's file
        return [run.time, shown(run.path.parent.name),
                f"unreadable: {type(err).__name__}", "?", "", "", "", "", ""]


def _cells(run: RunSummary, latest: Path | None) -> list[object]:
    test = run.test or {}
    css, word = verdict_of(run.results)
    verdict = tag("span", word, class_=f"pill {css}")
    href = quote(os.fsencode(run.rel)) + "/report.html"
    if run.has_report:
        link: object = tag("a", "report", href=href)
    else:
        link = tag("span", "no report yet", class_="muted")
    when = join([run.time, tag("strong", " (latest)") if latest == run.path.resolve() else ""])
    elr = test.get("elr_enabled")
    return [
        when,
        test.get("test", shown(run.path.parent.name)),
        " ".join(str(part) for part in (test.get("nemesis"), run.problem) if part),
        "on" if elr is True else "off" if elr is False else "?",
        verdict,
        _anomaly_cell(run.results),
        test.get("kafka_version", ""),
        test.get("seed", ""),
        link,
    ]


def runs_frame(runs: list[RunSummary], latest: Path | None) -> pd.DataFrame:
    """The index's table: one row of cells per run, in the order given."""
    return pd.DataFrame([_row(r, latest) for r in runs], columns=HEADERS, dtype=object)


def render_index(store: Path) -> str:
    """The index page of the store, as text (harness serve sends it from memory)."""
    runs = find_runs(store)
    latest = _latest(store)
    if runs:
        body: Safe = table(HEADERS, runs_frame(runs, latest).to_numpy().tolist())
    else:
        body = tag("div", f"No run in {store} yet: `harness run` makes one.", class_="na")
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    where = f"store: {store.resolve()} · generated {generated}"
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"{GENERATOR}{NO_FAVICON}"
        "<title>elr-harness runs</title>"
        f"<style>{stylesheet()}</style></head><body><main>"
        f"{tag('h1', f'elr-harness runs ({len(runs)})')}"
        f"{tag('p', where, class_='muted')}"
        f"{body}</main></body></html>\n"
    )
    return shown(page)


def is_ours(index: Path) -> bool:
    """True when index.html may be (over)written: absent, or the harness's page
    (GENERATOR near its top, or the head it had before GENERATOR existed)."""
    return may_replace(index, lambda head, _tail: GENERATOR.encode() in head or (
        head.startswith(b"<!DOCTYPE html>\n" + LEGACY_HEAD.encode())
        and LEGACY_TITLE.encode() in head))


def write_index(store: Path) -> Path | None:
    """Regenerate store/index.html from the runs on disk; returns its path, or None
    when an index.html that is not the harness's is there (left as it is)."""
    if not store.is_dir():
        raise BadInput(f"{store} is not a store directory (expected store/<test>/<time>/ runs)")
    target = store / INDEX_NAME
    if not is_ours(target):
        return None
    write_atomically(target, render_index(store))
    return target
