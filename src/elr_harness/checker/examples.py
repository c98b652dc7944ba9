"""The examples of results.json: each anomaly's first rows, with every op a reader
needs to see it, the final polls that hold the offsets in question included.

An example row that asks to be held (frames.ANOMALY_COLUMNS: `hold`,
`hold_offsets`) gets, for each of its offsets, the final poll holding a record
at that offset; failing that the first final poll that read past it; failing
that the partition's last final ok poll.
"""

from __future__ import annotations

import json

#: Which examples of an anomaly come first: by op indices, then by place.
EXAMPLE_ORDER = ("ops", "topic", "partition", "offset", "value")


def example_order(r) -> tuple:
    """Spark's ascending EXAMPLE_ORDER in Python (nulls first), for results.json."""
    return tuple((r[c] is not None, r[c] if r[c] is not None else 0)
                 if c != "ops" else list(r[c]) for c in EXAMPLE_ORDER)


def examples(spark, rows: list, events, keys,
             partitions: dict) -> dict[int, dict[str, list[dict]]]:
    """The example rows (Spark rows of ANOMALY_COLUMNS) as results.json entries, by
    run; partitions: each run's judged partitions' final-read facts
    (last_final_poll), {run: {(topic, partition): facts}}."""
    from pyspark.sql import functions as F

    from elr_harness.checker.events import FINAL_RECORD
    from elr_harness.checker.frames import local_rows

    rows = sorted(rows, key=example_order)
    need = [(i, keys.encode(r["topic"], r["partition"], r["run"]), at)
            for i, r in enumerate(rows) if r["hold"] for at in r["hold_offsets"] or ()]
    holders: dict[int, set[int]] = {}
    if need:
        wanted = local_rows(spark, "id int, tp bigint, at bigint", need)
        found = (events.filter(f"kind = {FINAL_RECORD}").select("tp", "offset", "index")
                 .join(F.broadcast(wanted), ["tp"])
                 .filter("offset >= at")
                 .groupBy("id", "at")
                 .agg(F.expr("coalesce(min(CASE WHEN offset = at THEN index END), "
                             "min(index)) AS poll"))
                 .collect())
        for r in found:
            holders.setdefault(r["id"], set()).add(r["poll"])
    out: dict[int, dict[str, list[dict]]] = {}
    for i, r in enumerate(rows):
        ops = set(r["ops"])
        if r["hold"]:
            facts = partitions.get(r["run"], {}).get((r["topic"], r["partition"]))
            fallback = {facts.last_final_poll} if facts and facts.last_final_poll is not None \
                else set()
            ops |= holders.get(i) or fallback
        example = {"topic": r["topic"], "partition": r["partition"], "value": r["value"],
                   "offset": r["offset"], "acks": r["acks"], "ops": sorted(ops),
                   "description": r["description"]}
        if r["extra"]:
            for k, v in json.loads(r["extra"]).items():
                example.setdefault(k, v)
        out.setdefault(r["run"], {}).setdefault(r["name"], []).append(example)
    return out
