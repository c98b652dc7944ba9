"""The report's plots, drawn with matplotlib's Agg backend into inline PNG data URIs.

Figures are made without pyplot (no global figure state, nothing to close, safe
in any thread); each is rendered by an Agg canvas of its own.

Every plot shades the faults as bands so a reader can line effects up with
causes; every series is cut to at most ReportConfig.max_plot_points points
(keeping each bucket's extremes, so spikes survive downsampling).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.transforms import blended_transform_factory

from elr_harness.core.history import ACKS_LEVELS
from elr_harness.report.checked_tables import CheckedTables, ObservedState, PartitionKey
from elr_harness.report.faults import FaultBand
from elr_harness.report.lost_writes import LostWrites

OTHER_FAULT_COLOUR = "#636363"
SERIES_COLOURS = {
    "send acks=all": "#1f77b4",
    "send acks=1": "#2ca02c",
    "send acks=0": "#bcbd22",
    "poll": "#9467bd",
    "final poll": "#8c564b",
}
TYPE_MARKERS = {"ok": ".", "fail": "x", "info": "^"}
ACKS_COLOURS = {"all": "#d62728", "1": "#ff7f0e", "0": "#7f7f7f"}
ACKS_STYLES = {"all": "-", "1": "--", "0": ":"}
LANE_COLOURS = {
    "leader": "#1f77b4",
    "ISR": "#2ca02c",
    "ELR": "#ff7f0e",
    "LastKnownELR": "#9467bd",
    "fenced": "#7f7f7f",
}


def plain(text: object) -> str:
    """Text from the history for a plot: `$` would start matplotlib's math mode."""
    return str(text).replace("\\", "\\\\").replace("$", r"\$")


def to_data_uri(fig: Figure, dpi: int) -> str:
    """PNG bytes of a figure, inline, so report.html needs no other file."""
    buf = io.BytesIO()
    FigureCanvasAgg(fig)
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def downsample(x: Sequence[float], y: Sequence[float], max_points: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """At most max_points points, in order: half evenly spread (the body of the
    distribution), half the min and max of consecutive buckets (spikes survive)."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    n = len(xs)
    if n <= max_points:
        return xs, ys
    buckets = max(1, max_points // 4)
    size = -(-n // buckets)
    rows = np.arange(buckets) * size
    used = rows < n
    grid_low = np.full(buckets * size, np.inf)
    grid_low[:n] = ys
    grid_high = np.full(buckets * size, -np.inf)
    grid_high[:n] = ys
    lo = (rows + np.argmin(grid_low.reshape(buckets, size), axis=1))[used]
    hi = (rows + np.argmax(grid_high.reshape(buckets, size), axis=1))[used]
    extremes = np.unique(np.concatenate([lo, hi]))
    spread = np.linspace(0, n - 1, max(0, max_points - len(extremes))).astype(int)
    keep = np.unique(np.concatenate([extremes, spread]))
    return xs[keep], ys[keep]


def fault_colour(band: FaultBand) -> str:
    """Its kind's colour (test.json's), grey for a kind test.json gives none."""
    return band.colour or OTHER_FAULT_COLOUR


def draw_fault_bands(ax, bands: list[FaultBand], end_s: float, max_labels: int) -> None:
    """Shade each fault's interval; label it by kind and nodes when there are few."""
    label_each = len(bands) <= max_labels
    top = blended_transform_factory(ax.transData, ax.transAxes)
    for band in bands:
        end = band.end_s if band.end_s is not None else end_s
        colour = fault_colour(band)
        if end > band.start_s:
            ax.axvspan(band.start_s, end, color=colour, alpha=0.13, lw=0,
                       hatch="//" if band.uncertain else None)
        else:
            ax.axvline(band.start_s, color=colour, alpha=0.6, lw=1)
        if label_each:
            ax.text(band.start_s, 0.99, plain(band.label), transform=top, rotation=90,
                    va="top", ha="right", fontsize=6.5, color=colour, clip_on=True)
            if band.end_s is not None and band.end_s > band.start_s and band.ended_by:
                ax.axvline(band.end_s, color=colour, alpha=0.5, lw=0.8, ls="--")
                ax.text(band.end_s, 0.01, plain(band.ended_by), transform=top, rotation=90,
                        va="bottom", ha="left", fontsize=6.5, color="#444444", clip_on=True)


def fault_handles(bands: list[FaultBand]) -> list[Patch]:
    """Legend entries, one per fault kind present."""
    first = {}
    for band in bands:
        first.setdefault(band.kind, band)
    return [Patch(color=fault_colour(first[k]), alpha=0.3, label=plain(f"fault: {k}"))
            for k in sorted(first)]


def legend(ax, bands: list[FaultBand], **kwargs) -> None:
    """One legend right of the plot: the series, then the fault kinds.

    A single legend keeps bbox_inches="tight" measuring everything drawn.
    """
    handles, labels = ax.get_legend_handles_labels()
    extra = fault_handles(bands)
    if not handles and not extra:
        return
    ax.legend(handles=handles + extra, labels=labels + [p.get_label() for p in extra],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False,
              **kwargs)


def finish_time_axis(ax, end_s: float, start_s: float = 0.0) -> None:
    """The time axis from start_s (where the workload began: the set-up before it
    holds no operation) to just past end_s."""
    start = start_s if 0 < start_s < end_s else 0.0
    ax.set_xlim(start, start + max(end_s - start, 1e-3) * 1.01)
    ax.set_xlabel("seconds since start" + (f" (workload from {start:.0f} s)" if start else ""))
    ax.grid(True, alpha=0.25)


def latency_plot(tables: CheckedTables, bands: list[FaultBand], max_points: int,
                 max_labels: int, dpi: int, start_s: float = 0.0) -> str | None:
    """Latency of each completed op by f/acks (colour) and outcome (marker)."""
    if not tables.latency:
        return None
    fig = Figure(figsize=(11, 4.2))
    ax = fig.subplots()
    order = {name: i for i, name in enumerate(SERIES_COLOURS)}
    for (name, typ), series in sorted(tables.latency.items(),
                                      key=lambda kv: (order.get(kv[0][0], 99), kv[0])):
        x, y = downsample(series.x, series.y, max_points)
        y = np.maximum(y, 1e-3)
        ax.scatter(x, y, s=5 if typ == "ok" else 9, marker=TYPE_MARKERS.get(typ, "o"),
                   color=SERIES_COLOURS.get(name, "#333333"), alpha=0.6, linewidths=0.8,
                   label=plain(f"{name} {typ} ({len(series.x)})"))
    ax.set_yscale("log")
    ax.set_ylabel("latency (ms)")
    ax.set_title("Operation latency (completion time)")
    draw_fault_bands(ax, bands, tables.end_time_s, max_labels)
    legend(ax, bands, markerscale=2)
    finish_time_axis(ax, tables.end_time_s, start_s)
    return to_data_uri(fig, dpi)


def _binned(per_second: np.ndarray, seconds: int, bin_s: int) -> np.ndarray:
    rate = np.zeros(seconds + 1)
    n = min(len(per_second), seconds + 1)
    rate[:n] = per_second[:n]
    if bin_s > 1:
        pad = (-len(rate)) % bin_s
        rate = np.concatenate([rate, np.zeros(pad)]).reshape(-1, bin_s).mean(axis=1)
    return rate


def throughput_plot(tables: CheckedTables, bands: list[FaultBand], max_points: int,
                    max_labels: int, dpi: int, start_s: float = 0.0) -> str | None:
    """Client completions per second by outcome; averaged over wider bins on long runs."""
    if not any(c.any() for c in tables.throughput.values()):
        return None
    seconds = int(tables.end_time_s) + 1
    bin_s = max(1, -(-seconds // max_points))
    fig = Figure(figsize=(11, 3.4))
    ax = fig.subplots()
    colours = {"ok": "#2ca02c", "fail": "#d62728", "info": "#ff7f0e"}
    for typ in ("ok", "fail", "info"):
        counts = tables.throughput.get(typ)
        if counts is None or not counts.any():
            continue
        rate = _binned(counts, seconds, bin_s)
        ax.plot(np.arange(len(rate)) * bin_s, rate, drawstyle="steps-post",
                color=colours[typ], lw=1, label=typ)
    ax.set_ylabel("ops / s" + (f" (mean over {bin_s} s)" if bin_s > 1 else ""))
    ax.set_title("Throughput by outcome")
    draw_fault_bands(ax, bands, tables.end_time_s, max_labels)
    legend(ax, bands)
    finish_time_axis(ax, tables.end_time_s, start_s)
    return to_data_uri(fig, dpi)


def _intervals(states: list[ObservedState], end_s: float
               ) -> list[tuple[float, float, ObservedState]]:
    """(start, width, state) per observed state: each holds until the next change."""
    spans = []
    for i, state in enumerate(states):
        until = states[i + 1].time_s if i + 1 < len(states) else end_s
        spans.append((state.time_s, max(until - state.time_s, 1e-6), state))
    return spans


def membership_plot(key: PartitionKey, states: list[ObservedState], brokers: list[int],
                    bands: list[FaultBand], end_s: float, max_labels: int, dpi: int,
                    start_s: float = 0.0) -> str:
    """Per broker one lane for leader, ISR, ELR, LastKnownELR and fenced, faults
    beside them (a leader inside its fenced lane is KIP-966's fenced-leader)."""
    seen = {b for s in states for b in (s.isr + (s.elr or ()) + (s.last_known_elr or ()))}
    seen |= {s.leader for s in states if s.leader is not None and s.leader >= 0}
    ids = sorted(set(brokers) | seen)
    lanes = [(cat, b) for cat in LANE_COLOURS for b in ids]
    fig = Figure(figsize=(11, 1.3 + 0.24 * len(lanes)))
    ax = fig.subplots()
    spans = _intervals(states, end_s)
    for row, (cat, broker) in enumerate(lanes):
        y = len(lanes) - row - 1
        member, unknown = [], []
        for start, width, s in spans:
            if cat == "leader":
                inside = s.leader == broker
            elif cat == "ISR":
                inside = broker in s.isr
            else:
                members = {"ELR": s.elr, "LastKnownELR": s.last_known_elr,
                           "fenced": s.fenced}[cat]
                if members is None:
                    unknown.append((start, width))
                    continue
                inside = broker in members
            if inside:
                member.append((start, width))
        if member:
            ax.broken_barh(member, (y - 0.38, 0.76), color=LANE_COLOURS[cat])
        if unknown:
            ax.broken_barh(unknown, (y - 0.38, 0.76), facecolor="none", edgecolor="#bbbbbb",
                           hatch="..", lw=0)
    labels = [f"{cat} b{b}" for cat, b in reversed(lanes)]
    if any(s.min_isr is not None or s.elr_feature is not None for s in states):
        _settings_lane(ax, spans, len(lanes))
        labels.append("min ISR")
        ax.axhline(len(lanes) - 0.5, color="#999999", lw=0.6)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=7)
    for boundary in range(1, len(LANE_COLOURS)):
        ax.axhline(boundary * len(ids) - 0.5, color="#999999", lw=0.6)
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.set_title(plain(f"{key[0]}-{key[1]}: leader, ISR, ELR, LastKnownELR, fenced per "
                       "broker (hatched: the cluster could not say)"), fontsize=9)
    draw_fault_bands(ax, bands, end_s, max_labels)
    legend(ax, bands)
    finish_time_axis(ax, end_s, start_s)
    return to_data_uri(fig, dpi)


#: The settings lane: the min ISR in effect, red while the ELR feature was off.
SETTINGS_COLOURS = {"on": "#e0e0e0", "off": "#d62728", "unknown": "#ffffff"}


def _settings_lane(ax, spans: list[tuple[float, float, ObservedState]], y: int) -> None:
    """One lane above the brokers' lanes: the topic's min ISR as the observer read
    it, written where it changed ('?': not read), on red while the ELR feature was
    at 0 (KIP-966's protection off)."""
    by_colour: dict[str, list[tuple[float, float]]] = {}
    shown: object = object()
    for start, width, state in spans:
        level = state.elr_feature
        colour = "unknown" if level is None else "off" if level == 0 else "on"
        by_colour.setdefault(colour, []).append((start, width))
        if state.min_isr != shown:
            shown = state.min_isr
            ax.text(start, y, "?" if shown is None else str(shown), fontsize=7,
                    va="center", ha="left", color="#000000")
    for colour, bars in by_colour.items():
        ax.broken_barh(bars, (y - 0.38, 0.76), facecolor=SETTINGS_COLOURS[colour],
                       edgecolor="#bbbbbb" if colour == "unknown" else "none",
                       alpha=0.6 if colour == "off" else 1.0)


def hwm_plot(tables: CheckedTables, bands: list[FaultBand], max_points: int, max_labels: int,
             dpi: int, start_s: float = 0.0) -> str | None:
    """Observed high watermark per partition: it must never go down."""
    if not tables.hwm:
        return None
    fig = Figure(figsize=(11, 3.4))
    ax = fig.subplots()
    for key in sorted(tables.hwm):
        series = tables.hwm[key]
        x, y = downsample(series.x, series.y, max_points)
        ax.plot(x, y, drawstyle="steps-post", lw=1, label=plain(f"{key[0]}-{key[1]}"))
    ax.set_ylabel("high watermark")
    ax.set_title("High watermark (observer)")
    draw_fault_bands(ax, bands, tables.end_time_s, max_labels)
    legend(ax, bands)
    finish_time_axis(ax, tables.end_time_s, start_s)
    return to_data_uri(fig, dpi)


def lost_writes_plot(lost: LostWrites, bands: list[FaultBand], end_s: float, max_points: int,
                     max_labels: int, dpi: int, start_s: float = 0.0) -> str | None:
    """The checker's lost writes by acks level, cumulative over the second of the run
    their send was acknowledged in."""
    if not any(lost.over_time.get(acks) for acks in ACKS_LEVELS):
        return None
    fig = Figure(figsize=(11, 3.4))
    ax = fig.subplots()
    # acks=all last and thickest: its losses are the ones KIP-966 is about.
    for acks in reversed(ACKS_LEVELS):
        points = lost.over_time.get(acks)
        if not points:
            continue
        seconds = np.array([s for s, _ in points], dtype=float)
        total = np.cumsum([n for _, n in points])
        x, y = downsample(seconds, total, max_points)
        ax.plot(x, y, drawstyle="steps-post", color=ACKS_COLOURS[acks],
                lw=2.2 if acks == "all" else 1.3, ls=ACKS_STYLES[acks],
                label=f"acks={acks} ({int(total[-1])})")
    ax.set_ylabel("lost writes (cumulative)")
    ax.set_title("Lost writes by acks level (send completion time)")
    draw_fault_bands(ax, bands, end_s, max_labels)
    legend(ax, bands)
    finish_time_axis(ax, end_s, start_s)
    return to_data_uri(fig, dpi)
