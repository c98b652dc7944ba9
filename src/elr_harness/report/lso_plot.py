"""The LSO plot: each data partition's last stable offset against its high
watermark, on the latency plot's clock with the faults shaded as every plot
shades them (report/plots.py).

Two panels share the time axis. Above, the offsets themselves: the LSO solid,
the high watermark dashed in the same colour, the space between them filled.
Offsets grow into the thousands while a transaction holds back a handful, so
that fill is a sliver; below, the gap itself (high watermark minus LSO) on a
scale that shows a gap of one, so a partition whose LSO stays below its high
watermark stands out as a plateau that does not fall back to zero. The
checker's hanging-txn rows are drawn where they say the LSO stuck.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from elr_harness.report.faults import FaultBand
from elr_harness.report.lso import LsoSeries, LsoTables
from elr_harness.report.plots import (
    downsample,
    draw_fault_bands,
    finish_time_axis,
    legend,
    plain,
    to_data_uri,
)

#: One colour per partition, cycling (matplotlib's tab10 without its red, which
#: marks a hanging transaction).
PARTITION_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                     "#7f7f7f", "#bcbd22", "#17becf")
HANGING_COLOUR = "#d62728"


def partition_name(key: tuple[str, int]) -> str:
    return f"{key[0]}-{key[1]}"


def thinned(series: LsoSeries, max_points: int) -> LsoSeries:
    """At most max_points of the series' points, the same ones for both offsets (so
    the fill stays between them), keeping the largest and smallest gaps."""
    n = len(series.x)
    if n <= max_points:
        return series
    rows = downsample(np.arange(n), series.gap, max_points)[0].astype(int)
    return LsoSeries(series.x[rows], series.lso[rows], series.hwm[rows], series.observations)


def _hanging_span(example: dict[str, Any], lso: LsoTables, end_s: float
                  ) -> tuple[float, float] | None:
    """From the first to the last observation the row names (the end of the run when
    the last is unknown); None when not even the first is known."""
    ops = [i for i in example.get("ops") or [] if type(i) is int]
    times = [lso.times[i] for i in ops if i in lso.times]
    if not times:
        return None
    start, end = min(times), max(times)
    return start, end if end > start else end_s


def _gap_at(series: LsoSeries, time_s: float) -> float:
    """The gap in force at time_s (the last change at or before it)."""
    at = max(0, int(np.searchsorted(series.x, time_s, side="right")) - 1)
    return float(series.gap[at])


def _draw_hanging(top, bottom, examples: list[dict[str, Any]], lso: LsoTables,
                  end_s: float, max_labels: int) -> None:
    """Each hanging-txn row: its first offset over the span it stayed stuck (above),
    the gap over that span (below), labelled with partition, offset and txn id."""
    label_each = len(examples) <= max_labels
    for example in examples:
        partition = example.get("partition")
        key = (str(example.get("topic")), partition if isinstance(partition, int) else -1)
        series = lso.series.get(key)
        span = _hanging_span(example, lso, end_s)
        offset = example.get("first_offset", example.get("offset"))
        if series is None or span is None or not isinstance(offset, int):
            continue
        start, end = span
        top.hlines(offset, start, end, color=HANGING_COLOUR, lw=3, alpha=0.8)
        gap = _gap_at(series, start)
        bottom.hlines(gap, start, end, color=HANGING_COLOUR, lw=3, alpha=0.8)
        bottom.plot([start], [gap], marker="x", color=HANGING_COLOUR, ms=7)
        if label_each:
            txn = example.get("txn_id")
            bottom.annotate(plain(f"hanging {partition_name(key)}: offset {offset}"
                                  + (f", {txn}" if txn else "")),
                            (start, gap), xytext=(4, 6), textcoords="offset points",
                            fontsize=7, color=HANGING_COLOUR, clip_on=True)


def lso_figure(lso: LsoTables, examples: list[dict[str, Any]], bands: list[FaultBand],
               end_s: float, max_points: int, max_labels: int, start_s: float = 0.0
               ) -> Figure | None:
    """The figure (None without a series): one LSO line per partition above, its
    gap below; split from lso_plot so a test can count what is drawn."""
    if not lso.series:
        return None
    fig = Figure(figsize=(11, 5.8))
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    for n, key in enumerate(sorted(lso.series)):
        series = thinned(lso.series[key], max_points)
        colour = PARTITION_COLOURS[n % len(PARTITION_COLOURS)]
        name = plain(partition_name(key))
        top.fill_between(series.x, series.lso, series.hwm, step="post", color=colour,
                         alpha=0.3, lw=0)
        top.plot(series.x, series.hwm, drawstyle="steps-post", color=colour, lw=0.9, ls="--")
        top.plot(series.x, series.lso, drawstyle="steps-post", color=colour, lw=1.3,
                 label=name)
        bottom.fill_between(series.x, 0, series.gap, step="post", color=colour, alpha=0.3,
                            lw=0)
        bottom.plot(series.x, series.gap, drawstyle="steps-post", color=colour, lw=1,
                    label=name)
    # the line styles' meaning, as legend entries of their own
    top.plot([], [], color="#444444", lw=1.3, label="LSO (solid)")
    top.plot([], [], color="#444444", lw=0.9, ls="--", label="high watermark (dashed)")
    if examples:
        top.plot([], [], color=HANGING_COLOUR, lw=3, label="hanging-txn (checker)")
    top.set_ylabel("offset")
    top.set_title("Last stable offset (LSO) against the high watermark (observer)")
    bottom.set_yscale("symlog", linthresh=1)
    # headroom above the largest gap (on this scale, a factor) for the hanging labels
    largest = max(float(s.gap.max()) for s in lso.series.values())
    bottom.set_ylim(0, max(largest, 1.0) * 6)
    bottom.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    bottom.set_ylabel("HWM − LSO")
    _draw_hanging(top, bottom, examples, lso, end_s, max_labels)
    draw_fault_bands(top, bands, end_s, max_labels)
    draw_fault_bands(bottom, bands, end_s, 0)
    legend(top, bands)
    top.grid(True, alpha=0.25)
    finish_time_axis(bottom, end_s, start_s)
    return fig


def lso_lines(fig: Figure) -> list[Line2D]:
    """The partitions' LSO lines of an lso_figure (the labelled lines with data)."""
    return [line for line in fig.axes[0].get_lines()
            if len(line.get_xdata()) and not line.get_label().startswith("_")]


def lso_plot(lso: LsoTables, examples: list[dict[str, Any]], bands: list[FaultBand],
             end_s: float, max_points: int, max_labels: int, dpi: int,
             start_s: float = 0.0) -> str | None:
    fig = lso_figure(lso, examples, bands, end_s, max_points, max_labels, start_s)
    return None if fig is None else to_data_uri(fig, dpi)
