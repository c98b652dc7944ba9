"""Each data partition's last stable offset (LSO) against its high watermark, as the
observer recorded them (contract v4), read from the checker's side table.

Read only for a run with transactions. The report plots what the observer saw,
as it plots the high watermark; whether a gap is a hanging transaction is the
checker's call (results.json's hanging-txn rows, hanging_examples), never this
module's.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from elr_harness.checker.parquet_cache import SIDE, parquet_location
from elr_harness.checker.staging import Staging, is_plain
from elr_harness.core.anomalies import HANGING_TXN
from elr_harness.report.checked_tables import NS, PartitionKey, cache_problem

#: The side table's columns this module reads, typed as the checker writes them.
LSO_SCHEMA = pa.schema([("index", pa.int64()), ("time", pa.int64()), ("f", pa.string()),
                        ("topic", pa.string()), ("partition", pa.int32()),
                        ("hwm", pa.int64()), ("lso", pa.int64())])


@dataclass(frozen=True)
class LsoSeries:
    """One partition's observations that carried both offsets, kept where either
    changed (and the last, so a step drawing reaches it), in time order."""

    x: np.ndarray
    lso: np.ndarray
    hwm: np.ndarray
    #: how many observations carried both (before the unchanged ones were dropped)
    observations: int

    @property
    def gap(self) -> np.ndarray:
        """Offsets between the LSO and the high watermark: not yet readable committed."""
        return self.hwm - self.lso

    def seconds_below(self) -> float:
        """How long the LSO sat below the high watermark (each state holds until the next)."""
        if len(self.x) < 2:
            return 0.0
        held = np.diff(self.x)
        return float(held[self.gap[:-1] > 0].sum())


@dataclass
class LsoTables:
    """What the LSO plot draws, or why there is nothing ("" when read)."""

    problem: str = ""
    series: dict[PartitionKey, LsoSeries] = field(default_factory=dict)
    #: the time (s) of each observation a hanging-txn row names
    times: dict[int, float] = field(default_factory=dict)


def hanging_examples(results: dict[str, Any] | None) -> list[dict[str, Any]]:
    """results.json's hanging-txn rows (one per partition; the checker keeps up to
    max_examples of them), as it wrote them."""
    anomalies = results.get("anomalies") if isinstance(results, dict) else None
    entry = anomalies.get(HANGING_TXN) if isinstance(anomalies, dict) else None
    examples = entry.get("examples") if isinstance(entry, dict) else None
    return [e for e in examples if isinstance(e, dict)] if isinstance(examples, list) else []


def named_ops(examples: list[dict[str, Any]]) -> set[int]:
    """The observations the hanging rows name (where the LSO was first and last seen stuck)."""
    return {i for e in examples if isinstance(e.get("ops"), list)
            for i in e["ops"] if type(i) is int}


def read_lso(history: Path, topics: Collection[str], wanted: Collection[int]) -> LsoTables:
    """The LSO and high watermark of each partition of `topics` (every topic whose
    observations carry an LSO when empty), and the times of the `wanted` observations."""
    problem = cache_problem(history)
    if problem:
        return LsoTables(problem=problem)
    parquet = parquet_location(history)
    if is_plain(parquet):
        return _read(parquet / SIDE, topics, wanted)
    # as checked_tables: pyarrow wants a plain path to read
    with Staging() as stage:
        return _read(stage.link(parquet, "parquet") / SIDE, topics, wanted)


def _read(side: Path, topics: Collection[str], wanted: Collection[int]) -> LsoTables:
    columns = ["index", "time", "topic", "partition", "hwm", "lso"]
    obs = pd.read_parquet(side, engine="pyarrow", columns=columns,
                          filters=[("f", "==", "observe")],
                          schema=pa.schema([LSO_SCHEMA.field(c) for c in [*columns, "f"]]),
                          dtype_backend="pyarrow")
    out = LsoTables()
    if wanted:
        named = obs[obs["index"].isin(list(wanted))]
        out.times = {int(i): int(t) / NS for i, t in zip(named["index"], named["time"],
                                                          strict=True)}
    obs = obs.dropna(subset=["lso", "hwm"])
    if topics:
        obs = obs[obs["topic"].isin(list(topics))]
    obs = obs.sort_values(["time", "index"], kind="stable")
    for (topic, partition), rows in obs.groupby(["topic", "partition"], sort=True):
        out.series[(str(topic), int(partition))] = _changes(rows)
    return out


def _changes(rows: pd.DataFrame) -> LsoSeries:
    """A partition's rows where the LSO or the high watermark changed, plus its last."""
    x = rows["time"].to_numpy(dtype=np.int64) / NS
    lso = rows["lso"].to_numpy(dtype=np.int64)
    hwm = rows["hwm"].to_numpy(dtype=np.int64)
    keep = np.ones(len(x), dtype=bool)
    keep[1:] = (lso[1:] != lso[:-1]) | (hwm[1:] != hwm[:-1])
    keep[-1] = True
    return LsoSeries(x[keep], lso[keep], hwm[keep], len(x))
