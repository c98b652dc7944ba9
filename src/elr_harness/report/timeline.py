"""The partitions, faults and controller metadata log sections: what happened when."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from elr_harness.report import plots
from elr_harness.report.checked_tables import STATE_COLUMNS, ObservedState
from elr_harness.report.faults import FaultBand
from elr_harness.report.html import Safe, h, image, join, not_available, table, tag
from elr_harness.report.metadata import PARTITION_FIELDS, decode_metadata
from elr_harness.report.phases import workload_start_s
from elr_harness.report.report_inputs import ReportInputs, ids, no_history_reason, parse_time


def op_anchor(index: int) -> str:
    """The id of the row where the timeline shows the line `index` (an observation
    in its partition's state table, a fault in the faults table)."""
    return f"op-{index}"


def _brokers(test: dict[str, Any]) -> list[int]:
    nodes = test.get("nodes")
    if not isinstance(nodes, dict):
        return []
    return sorted(
        node["id"] for node in nodes.values()
        if isinstance(node, dict) and node.get("role") == "broker"
        and isinstance(node.get("id"), int)
    )


_ID_CELLS = ("isr", "elr", "last_known_elr", "fenced")
#: Settings the observer may not have read (an older history, or a change mid-read).
_SETTING_CELLS = ("min_isr", "elr_feature")


def _table_events(states: list[ObservedState], bands: list[FaultBand]) -> list[tuple]:
    """The state table's rows before rendering: (time, 1, state) and (time, 0,
    ("start" | "end", band)), in the table's order."""
    events: list[tuple[float, int, Any]] = [(s.time_s, 1, s) for s in states]
    for band in bands:
        events.append((band.start_s, 0, ("start", band)))
        if band.end_s is not None and band.end_s > band.start_s:
            events.append((band.end_s, 0, ("end", band)))
    events.sort(key=lambda e: (e[0], e[1]))
    return events


def shown_observations(inputs: ReportInputs) -> set[int]:
    """The indices of the observations the partitions section shows a row of."""
    tables, cfg = inputs.tables, inputs.config
    shown: set[int] = set()
    for key in sorted(tables.states)[:cfg.max_partition_timelines]:
        events = _table_events(tables.states[key], inputs.bands)[:cfg.max_state_rows]
        shown.update(item.index for _t, _k, item in events if isinstance(item, ObservedState))
    return shown


def state_table(states: list[ObservedState], bands: list[FaultBand], limit: int) -> Safe:
    """Observed changes with the faults between them, in time order: the KIP-966 table."""
    events = _table_events(states, bands)
    rows = []
    previous: ObservedState | None = None
    for time_s, _kind, item in events[:limit]:
        if isinstance(item, ObservedState):
            cells = []
            for name in STATE_COLUMNS:
                value = getattr(item, name)
                old = None if previous is None else getattr(previous, name)
                text = (ids(value) if name in _ID_CELLS
                        else "?" if value is None and name in _SETTING_CELLS else str(value))
                changed = previous is not None and old != value
                cells.append(Safe(f'<span class="changed">{h(text)}</span>') if changed
                             else text)
            rows.append(Safe(tag("tr", join(
                tag("td", c) for c in [f"{time_s:.3f}", "observed", *cells]),
                id=op_anchor(item.index))))
            previous = item
        else:
            what, band = item
            if what == "start":
                label = f"{band.label} begins" if band.lasting else band.label
            else:
                label = f"{band.label} ends ({band.ended_by})"
            if band.uncertain and what == "start":
                label += " (info: may have half happened)"
            cells = [tag("td", f"{time_s:.3f}"), tag("td", "fault"),
                     tag("td", label, colspan=len(STATE_COLUMNS))]
            rows.append(Safe(tag("tr", join(cells), class_="fault")))
    more = ""
    if len(events) > limit:
        more = tag("div", f"{len(events) - limit} more rows not shown "
                          "(ReportConfig.max_state_rows).", class_="muted")
    head = join(tag("th", c) for c in ["time (s)", "event", "leader", "leader epoch", "ISR",
                                      "ELR", "LastKnownELR", "fenced", "min ISR",
                                      "ELR feature"])
    body = Safe("".join(rows))
    return join([tag("table", Safe(f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody>")),
                 more])


def partitions_section(inputs: ReportInputs) -> Safe:
    tables, cfg = inputs.tables, inputs.config
    if not tables.states:
        return not_available("Partition state", no_history_reason(inputs)
                             or "the history has no observe lines.")
    brokers = _brokers(inputs.run.test)
    parts = [tag("p", "Leader, ISR, ELR and LastKnownELR as the observer saw them, one lane per "
                      "broker, with the faults shaded, and above them the topic's min ISR in "
                      "effect (red while the ELR feature was off); the table lists every "
                      "change with the faults in between, changed cells highlighted.",
                 class_="muted")]
    keys = sorted(tables.states)
    for key in keys[:cfg.max_partition_timelines]:
        states = tables.states[key]
        uri = plots.membership_plot(key, states, brokers, inputs.bands, tables.end_time_s,
                                    cfg.max_fault_labels, cfg.plot_dpi,
                                    workload_start_s(inputs.run.test))
        parts.append(tag("h3", f"{key[0]}-{key[1]}", id=f"partition-{key[0]}-{key[1]}"))
        parts.append(image(uri, f"{key[0]}-{key[1]} membership timeline", ""))
        parts.append(tag("details", join([
            tag("summary", f"{len(states)} observed state changes with faults"),
            state_table(states, inputs.bands, cfg.max_state_rows),
        ]), open="open" if len(keys) <= 3 else None))
    if len(keys) > cfg.max_partition_timelines:
        rest = ", ".join(f"{t}-{p}" for t, p in keys[cfg.max_partition_timelines:])
        parts.append(tag("div", f"Not drawn (ReportConfig.max_partition_timelines): {rest}",
                         class_="muted"))
    return join(parts)


def faults_section(inputs: ReportInputs) -> Safe:
    if not inputs.bands:
        return not_available("Faults", no_history_reason(inputs)
                             or "the nemesis recorded no fault that took effect.")
    rows = []
    for band in inputs.bands:
        if not band.lasting:
            end, duration, ended_by = "", "", "(an event, not a lasting fault)"
        elif band.end_s is None:
            end, duration, ended_by = "never ended", "", ""
        else:
            end, duration = f"{band.end_s:.3f}", f"{band.end_s - band.start_s:.3f}"
            ended_by = band.ended_by or ""
        rows.append([band.step or "", band.kind, ", ".join(band.nodes), f"{band.start_s:.3f}",
                     end, duration, ended_by, "info (uncertain)" if band.uncertain else "ok",
                     band.start_index])
    return table(["step", "fault", "nodes", "start (s)", "end (s)", "duration (s)", "ended by",
                  "outcome", "op"], rows,
                 row_ids=[op_anchor(band.start_index) for band in inputs.bands])


# --------------------------------------------------------------------------
# Controller metadata log
# --------------------------------------------------------------------------


def _metadata_time(timestamp_ms: Any, start: datetime | None) -> tuple[str, str]:
    if not isinstance(timestamp_ms, int | float):
        return "", ""
    moment = datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC)
    since = f"{(moment - start).total_seconds():.3f}" if start else ""
    return since, moment.strftime("%H:%M:%S.%f")[:-3]


def metadata_section(inputs: ReportInputs) -> Safe:
    log = inputs.run.metadata
    if log.problem is not None:
        return not_available("Controller metadata log", log.problem)
    decoded = decode_metadata(log.records)
    start = parse_time(inputs.run.test.get("started_at"))
    limit = inputs.config.max_metadata_rows
    rows = []
    for row in decoded.rows[:limit]:
        since, clock = _metadata_time(row.timestamp_ms, start)
        if row.event:
            cells: list[object] = [tag("td", row.event, colspan=len(PARTITION_FIELDS))]
        else:
            cells = []
            for name, _title in PARTITION_FIELDS:
                value = row.values.get(name)
                text = ids(value) if isinstance(value, list) else ("" if value is None
                                                                   else str(value))
                cells.append(tag("td", text, class_="changed" if name in row.changed else None))
        rows.append(tag("tr", join([tag("td", row.offset), tag("td", since), tag("td", clock),
                                    tag("td", row.type), tag("td", row.subject), *cells])))
    head = join(tag("th", c) for c in ["offset", "time (s)", "UTC", "record", "partition / broker",
                                      *(title for _n, title in PARTITION_FIELDS)])
    notes = [tag("p", f"{log.node}: {decoded.total_records} records; {len(decoded.rows)} about "
                      "partitions and brokers below (the state after each record, the fields "
                      "the record changed highlighted).", class_="muted")]
    if decoded.other_types:
        notes.append(tag("div", "Other records: " + ", ".join(
            f"{k} ×{v}" for k, v in sorted(decoded.other_types.items())), class_="muted"))
    if len(decoded.rows) > limit:
        notes.append(tag("div", f"{len(decoded.rows) - limit} more rows not shown "
                                "(ReportConfig.max_metadata_rows).", class_="muted"))
    if not decoded.rows:
        return join([*notes, not_available("Partition and broker records",
                                           "the metadata log holds none.")])
    return join([*notes, tag("table", Safe(f"<thead><tr>{head}</tr></thead>"
                                           f"<tbody>{join(rows)}</tbody>"))])


