"""The anomalies section: each anomaly the checker found, with the operations it names.

It shows what results.json says and the operations its examples point at, as
the checker's tables hold them (report/checked_tables.py); it decides nothing
itself.
"""

from __future__ import annotations

from typing import Any

from elr_harness.core.anomalies import BY_NAME
from elr_harness.report.checked_tables import Interest, example_interest, matching_records
from elr_harness.report.html import Safe, h, join, not_available, table, tag
from elr_harness.report.report_inputs import ReportInputs, ids, json_text, seconds
from elr_harness.report.verdict import count_label

#: Examples of an anomaly shown open; the rest sit in a collapsed list.
EXAMPLES_OPEN = 3


# --------------------------------------------------------------------------
# Anomalies with their evidence
# --------------------------------------------------------------------------


def _records_text(records: Any) -> str:
    if not isinstance(records, list):
        return ""
    return " ".join(json_text(r) for r in records)


def _poll_evidence(op: dict[str, Any], interest: Interest, cap: int) -> list[object]:
    """What a poll says about the example: the records it is about, or that a value is absent."""
    if "records_total" not in op:
        return []
    parts: list[object] = [f" {op['records_total']} records"]
    relevant = matching_records(op.get("records_relevant"), interest)
    if relevant:
        parts.append(join([" · about this example: ", tag("code", _records_text(relevant[:cap]))]))
        if len(relevant) > cap:
            parts.append(f" (+{len(relevant) - cap} more)")
    found = {r[2] for r in relevant}
    absent = sorted(v for v in interest.values if v not in found)
    if absent and op.get("records_total"):
        parts.append(join([" · ", tag("strong", "absent: " + ", ".join(map(str, absent)))]))
    if not interest.values and not interest.positions and op.get("records_first"):
        parts.append(join([" · first: ", tag("code", _records_text(op["records_first"]))]))
    return parts


def op_detail(op: dict[str, Any], interest: Interest, cap: int) -> Safe:
    """What one op says, compactly: the fields a reader needs for its f."""
    f = op.get("f")
    parts: list[object] = []
    if f == "send":
        parts.append(f"{op.get('topic')}-{op.get('partition')} acks={op.get('acks')} "
                     f"value={op.get('value')}")
        if "offset" in op:
            parts.append(f" offset={json_text(op.get('offset'))}")
    elif f == "poll":
        parts.append(f"topic={op.get('topic')}")
        if op.get("final"):
            parts.append(tag("strong", " final read"))
            if "partitions" in op:
                parts.append(f" partitions={json_text(op.get('partitions'))}")
        if "seek" in op:
            parts.append(f" seek={json_text(op.get('seek'))}")
        parts.extend(_poll_evidence(op, interest, cap))
        if "high_watermark" in op:
            parts.append(f" · hwm={json_text(op.get('high_watermark'))}")
    elif f == "observe":
        parts.append(f"{op.get('topic')}-{op.get('partition')} leader={op.get('leader')} "
                     f"epoch={op.get('leader_epoch')} ISR={ids(op.get('isr'))} "
                     f"ELR={ids(op.get('elr'))} LastKnownELR={ids(op.get('last_known_elr'))}")
        if "high_watermark" in op:
            parts.append(f" hwm={op.get('high_watermark')}")
        if op.get("fenced") is not None:
            parts.append(f" fenced={ids(op.get('fenced'))}")
    elif f == "fault":
        parts.append(f"{op.get('fault')} {json_text(op.get('nodes'))}")
        if op.get("detail"):
            parts.append(f" {json_text(op.get('detail'))}")
    if "error" in op:
        parts.append(join([" error: ", tag("strong", op.get("error"))]))
    return join(parts)


def ops_table(indices: list[Any], ops: dict[int, dict[str, Any]], interest: Interest,
              cap: int) -> Safe:
    rows = []
    for index in indices:
        op = ops.get(index) if isinstance(index, int) else None
        if op is None:
            rows.append([index, "", "", "", "", "not found in the checker's tables"])
            continue
        rows.append([index, seconds(op.get("time")), op.get("process"), op.get("type"),
                     op.get("f"), op_detail(op, interest, cap)])
    return table(["op", "time (s)", "process", "type", "f", "what"], rows, class_="ops")


def example_block(example: Any, ops: dict[int, dict[str, Any]], ops_problem: str,
                  cap: int) -> Safe:
    if not isinstance(example, dict):
        return tag("div", join(["example: ", tag("code", json_text(example))]), class_="example")
    description = example.get("description")
    scalars = [
        f"{key}={json_text(value) if not isinstance(value, str) else value}"
        for key, value in example.items()
        if key not in ("ops", "description")
    ]
    indices = example.get("ops") if isinstance(example.get("ops"), list) else []
    if not indices:
        evidence: Safe = tag("div", "this example names no operations", class_="muted")
    elif ops_problem:
        evidence = not_available("Operations", f"the ops {json_text(indices)} cannot be "
                                               f"shown: {ops_problem}")
    else:
        evidence = ops_table(indices, ops, example_interest(example), cap)
    return tag("div", join([
        tag("div", description, class_="desc") if description else "",
        tag("div", tag("code", " ".join(scalars))),
        evidence,
    ]), class_="example")


def anomalies_section(inputs: ReportInputs) -> Safe:
    results = inputs.run.results
    if results is None:
        return not_available("Anomalies", inputs.run.results_problem or "no results.json")
    anomalies = results.get("anomalies")
    anomalies = anomalies if isinstance(anomalies, dict) else {}
    bad = {str(n) for n in results.get("bad_anomaly_types") or []}
    names = {str(n) for n in results.get("anomaly_types") or []} | set(anomalies)
    if not names:
        return tag("p", "The checker found no anomaly of any type.")
    order = sorted(names, key=lambda n: (n not in bad, n))
    summary_rows, blocks = [], []
    for name in order:
        entry = anomalies.get(name)
        entry = entry if isinstance(entry, dict) else {}
        count = entry.get("count", "?")
        by_acks = entry.get("by_acks")
        by_acks_text = (", ".join(f"acks={k}: {v}" for k, v in by_acks.items())
                        if isinstance(by_acks, dict) else "")
        verdict = count_label(results, name).split(" ", 1)[1].strip("()")
        summary_rows.append([Safe(f'<a href="#anomaly-{h(name)}">{h(name)}</a>'), count,
                             verdict, by_acks_text])
        examples = entry.get("examples") if isinstance(entry.get("examples"), list) else []
        heading = join([name, f" — {count}",
                        tag("span", verdict, class_=f"badge {'bad' if name in bad else 'benign'}")])
        body = [tag("h3", heading)]
        known = BY_NAME.get(name)
        if known is not None:  # what it means (the contract's table, core.anomalies)
            body.append(tag("div", f"{known.meaning} (docs/CHECKING.md#{known.anchor})",
                            class_="muted"))
        if by_acks_text:
            body.append(tag("div", f"by acks: {by_acks_text}", class_="muted"))
        if examples:
            body.append(tag("div", f"{len(examples)} example(s) of {count}:", class_="muted"))
            blocks_of = [example_block(e, inputs.tables.ops, inputs.tables.problem,
                                       inputs.config.max_example_records) for e in examples]
            shown = EXAMPLES_OPEN
            body.extend(blocks_of[:shown])
            if len(blocks_of) > shown:
                body.append(tag("details", join([
                    tag("summary", f"{len(blocks_of) - shown} more example(s)"),
                    join(blocks_of[shown:])])))
        else:
            body.append(tag("div", "results.json gives no example.", class_="muted"))
        blocks.append(tag("div", join(body), class_="anomaly", id=f"anomaly-{name}"))
    return join([table(["anomaly", "count", "verdict", "by acks"], summary_rows),
                 join(blocks)])


