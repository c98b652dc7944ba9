"""store/index.html: every run of the store, newest first, with its verdict and a link.

Runs are the directories store/<test>/<YYYYmmddTHHMMSS>/ that hold test.json;
the page is regenerated whenever a report is built or `harness serve` is asked
for it, and reads only test.json and results.json of each run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness.core.errors import BadInput
from reports.atomic import write_atomically
from reports.html import NO_FAVICON, Safe, h, join, stylesheet, table, tag
from reports.rundir import RUN_DIR_NAME, load_results, load_test_json
from reports.verdict import anomaly_counts, verdict_of

INDEX_NAME = "index.html"


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


def _display_time(name: str) -> str:
    if RUN_DIR_NAME.match(name):
        return datetime.strptime(name, "%Y%m%dT%H%M%S").strftime("%Y-%m-%d %H:%M:%S")
    return name


def find_runs(store: Path) -> list[RunSummary]:
    """Every run directory of the store, newest first (by its time-stamped name)."""
    runs = []
    for test_dir in store.iterdir():
        if test_dir.is_symlink() or not test_dir.is_dir():
            continue
        for run_dir in test_dir.iterdir():
            if run_dir.is_symlink() or not (run_dir / "test.json").is_file():
                continue
            test: dict[str, Any] | None
            problem = None
            try:
                test = load_test_json(run_dir)
            except BadInput as err:
                test, problem = None, err.message
            results, _why = load_results(run_dir)
            runs.append(RunSummary(
                path=run_dir,
                rel=f"{test_dir.name}/{run_dir.name}",
                time=_display_time(run_dir.name),
                test=test,
                results=results,
                problem=problem,
                has_report=(run_dir / "report.html").is_file(),
            ))
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
    test = run.test or {}
    css, word = verdict_of(run.results)
    verdict = tag("span", word, class_=f"pill {css}")
    href = quote(run.rel) + "/report.html"
    if run.has_report:
        link: object = tag("a", "report", href=href)
    else:
        link = tag("span", "no report yet", class_="muted")
    when = join([run.time, tag("strong", " (latest)") if latest == run.path.resolve() else ""])
    elr = test.get("elr_enabled")
    return [
        when,
        test.get("test", run.path.parent.name),
        test.get("nemesis", run.problem or ""),
        "on" if elr is True else "off" if elr is False else "?",
        verdict,
        _anomaly_cell(run.results),
        test.get("kafka_version", ""),
        test.get("seed", ""),
        link,
    ]


def render_index(store: Path) -> str:
    runs = find_runs(store)
    latest = _latest(store)
    if runs:
        body: Safe = table(["time", "test", "nemesis / scenario", "ELR", "verdict", "anomalies",
                            "Kafka", "seed", ""], [_row(r, latest) for r in runs])
    else:
        body = tag("div", f"No run in {store} yet: `harness run` makes one.", class_="na")
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"{NO_FAVICON}"
        "<title>elr-harness runs</title>"
        f"<style>{stylesheet()}</style></head><body><main>"
        f"{tag('h1', f'elr-harness runs ({len(runs)})')}"
        f"{tag('p', f'store: {store.resolve()} · generated {generated}', class_='muted')}"
        f"{body}</main></body></html>\n"
    )


def write_index(store: Path) -> Path:
    """Regenerate store/index.html from the runs on disk; returns its path."""
    if not store.is_dir():
        raise BadInput(f"{store} is not a store directory (expected store/<test>/<time>/ runs)")
    target = store / INDEX_NAME
    write_atomically(target, render_index(store))
    return target
