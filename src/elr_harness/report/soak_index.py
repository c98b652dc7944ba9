"""A soak's index.html: every run in order with its verdict and a link to its
report, and a plot of verdicts and lost writes by acks level over the soak.

It shows what soak.json records (read from each run's results.json when the
run ended), as one pandas table of the runs, and decides nothing itself.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from elr_harness.core.anomalies import NAMES
from elr_harness.core.config import ReportConfig
from elr_harness.core.history import ACKS_LEVELS
from elr_harness.report.atomic import write_atomically
from elr_harness.report.coverage import STATE_TEXT
from elr_harness.report.html import NO_FAVICON, Safe, join, stylesheet, table, tag
from elr_harness.report.plots import ACKS_COLOURS, to_data_uri

ACKS = ACKS_LEVELS
STATUS_CSS = {"valid": "valid", "invalid": "invalid", "unknown": "unknown",
              "error": "unchecked", "interrupted": "unchecked"}
STATUS_COLOURS = {"valid": "#2ca02c", "invalid": "#d62728", "unknown": "#7f7f7f",
                  "error": "#9467bd", "interrupted": "#bcbd22"}


def _link(soak_dir: Path, target: object, text: str) -> Safe:
    # a missing path is None in soak.json and may be NaN in the frame
    if not isinstance(target, str) or not target:
        return tag("span", "none", class_="muted")
    return tag("a", text, href=quote(os.path.relpath(target, soak_dir)))


def runs_frame(runs: list[dict[str, Any]]) -> pd.DataFrame:
    """soak.json's runs as one row each: the columns the plot and the table show."""
    rows = []
    for run in runs:
        lost = run.get("lost_write_by_acks") or {}
        bad = run.get("bad_anomalies") or {}
        rows.append({
            "run": run["index"] + 1, "entry": run["entry"], "seed": run["seed"],
            "kafka": run.get("kafka_version") or run["kafka_version_requested"],
            "status": run["status"],
            # a checked run with no lost write at all lost 0; a run never checked, None
            **{f"lost_{acks}": lost.get(acks, 0 if "anomalies" in run else None)
               for acks in ACKS},
            # in the contract's order (core.anomalies), unknown names last
            "detail": ", ".join(f"{name} ×{n}" for name, n in sorted(
                bad.items(), key=lambda item: (NAMES.index(item[0]) if item[0] in NAMES
                                               else len(NAMES), item[0])))
            or run.get("error") or run.get("reason") or "",
            "duration_s": run["duration_s"], "disk_bytes": run.get("disk_bytes"),
            "report": run.get("report"), "log": run.get("log"),
            "reproduce": run["reproduce"],
        })
    columns = ["run", "entry", "seed", "kafka", "status", *(f"lost_{a}" for a in ACKS),
               "detail", "duration_s", "disk_bytes", "report", "log", "reproduce"]
    return pd.DataFrame(rows, columns=columns).astype({f"lost_{a}": object for a in ACKS})


def _cells(row: Any, soak_dir: Path) -> list[object]:
    lost = [row[f"lost_{acks}"] for acks in ACKS]
    return [
        row["run"], row["entry"], row["seed"], row["kafka"],
        tag("span", row["status"].upper(), class_=f"pill {STATUS_CSS[row['status']]}"),
        " / ".join("-" if n is None or pd.isna(n) else str(int(n)) for n in lost),
        row["detail"], f"{row['duration_s']:.0f} s",
        "" if pd.isna(row["disk_bytes"]) else f"{row['disk_bytes'] / 1e6:.1f} MB",
        join([_link(soak_dir, row["report"], "report"), " ",
              _link(soak_dir, row["log"], "log")]),
        tag("code", row["reproduce"]),
    ]


def soak_plot(frame: pd.DataFrame, dpi: int) -> str:
    """Lost writes per run by acks level (log scale), each run's verdict beneath."""
    fig = Figure(figsize=(10, 3.6))
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [4, 1]})
    xs = frame["run"].to_numpy(dtype=float)
    width = 0.27
    for offset, acks in zip((-width, 0.0, width), ACKS, strict=True):
        ys = pd.to_numeric(frame[f"lost_{acks}"]).fillna(0).to_numpy(dtype=float)
        top.bar(xs + offset, ys + 1, width, bottom=0, color=ACKS_COLOURS[acks],
                label=f"acks={acks}")
    top.set_yscale("log")
    top.set_ylabel("lost writes + 1")
    top.legend(loc="upper left", fontsize=8, bbox_to_anchor=(1.0, 1.0))
    for status, colour in STATUS_COLOURS.items():
        picked = frame.loc[frame["status"] == status, "run"].to_list()
        if picked:
            bottom.scatter(picked, [0] * len(picked), color=colour, marker="s", s=40,
                           label=status)
    bottom.set_yticks([])
    bottom.set_xlabel("run")
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.legend(loc="upper left", fontsize=8, bbox_to_anchor=(1.0, 1.0))
    return to_data_uri(fig, dpi)


def render_soak_index(state: dict[str, Any], soak_dir: Path,
                      config: ReportConfig | None = None) -> str:
    config = config or ReportConfig()
    runs = state["runs"]
    frame = runs_frame(runs)
    counts = frame["status"].value_counts()
    tally = ", ".join(f"{counts[s]} {s}" for s in STATUS_CSS if s in counts) or "no run yet"
    ended = state.get("ended_at")
    facts = [f"started {state['started_at']}",
             f"ended {ended}: {state.get('stopped_because')}" if ended else "running",
             f"{len(runs)} runs ({tally}) in {state['used_s'] / 60:.1f} min"]
    if runs:
        body = join([
            tag("img", "", src=soak_plot(frame, config.plot_dpi), alt="lost writes per run"),
            table(["run", "plan entry", "seed", "Kafka", "verdict",
                   "lost writes acks=all / 1 / 0", "bad anomalies or error", "time", "disk",
                   "", "reproduce"], [_cells(row, soak_dir) for row in frame.to_dict("records")])])
    else:
        body = tag("div", "No run has finished yet.", class_="na")
    coverage = state.get("coverage")
    if runs and isinstance(coverage, dict):
        body = join([body, coverage_table(coverage)])
    abandoned = state.get("abandoned") or []
    if abandoned:
        body = join([body, tag("p", f"{len(abandoned)} run(s) were cut short when the "
                                    "soak's own process died and ran again on --resume.",
                               class_="muted")])
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"{NO_FAVICON}<title>elr-harness soak</title>"
        f"<style>{stylesheet()}</style></head><body><main>"
        f"{tag('h1', 'elr-harness soak')}"
        f"{tag('p', join([tag('code', state['command'])]))}"
        f"{tag('p', ' · '.join(facts) + f' · generated {generated}', class_='muted')}"
        f"{body}</main></body></html>\n")


def coverage_table(coverage: dict[str, Any]) -> Safe:
    """Per KIP-966 state, the runs that reached it (soak.json's `coverage`, from
    each run's checker); a state no run reached is highlighted."""
    states = coverage.get("states") or {}
    rows, classes = [], []
    for name, entry in states.items():
        runs = entry.get("runs") or []
        rows.append([name, STATE_TEXT.get(name, ""), len(runs),
                     ", ".join(str(i + 1) for i in runs), entry.get("count", 0)])
        classes.append(None if runs else "unreached")
    unreached = coverage.get("unreached") or []
    head = (f"{len(states) - len(unreached)} of {len(states)} KIP-966 states reached by "
            f"the {coverage.get('checked_runs', 0)} checked runs"
            + (f"; never reached: {', '.join(unreached)}." if unreached else "."))
    return join([tag("h2", "KIP-966 states"), tag("p", head, class_="muted"),
                 table(["state", "what", "runs", "which runs", "times reached"], rows,
                       row_classes=classes)])


def write_soak_index(state: dict[str, Any], soak_dir: Path) -> Path:
    path = soak_dir / "index.html"
    write_atomically(path, render_soak_index(state, soak_dir))
    return path

