"""Checks of the observer's partition-state samples (process -2).

hwm-regression: a partition's observed high watermark is lower than at its
previous observation that had one. elr-invariant: ELR and ISR overlap, or ELR
is not empty while the ISR has at least min.insync.replicas members (KIP-966);
a null ELR means the cluster could not say, so it is not checked.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.frames import anomaly, op_list, text, tp_name
from checkers.testinfo import RunInfo


def observations(ops: DataFrame) -> DataFrame:
    return ops.filter(F.col("f") == "observe").select(
        "index", "topic", "partition", "leader", "isr", "elr", "last_known_elr", "hwm")


def per_topic(info: RunInfo, pick) -> F.Column:
    """A per-topic setting from test.json as a column expression, the default elsewhere."""
    value = F.lit(pick(info.default_topic))
    for name, topic in info.topics.items():
        value = F.when(F.col("topic") == name, F.lit(pick(topic))).otherwise(value)
    return value


def hwm_regressions(obs: DataFrame) -> DataFrame:
    seq = Window.partitionBy("topic", "partition").orderBy("index")
    with_prev = obs.filter(F.col("hwm").isNotNull()).select(
        "topic", "partition", "index", "hwm",
        F.lag("hwm").over(seq).alias("prev_hwm"), F.lag("index").over(seq).alias("prev_index"))
    bad = with_prev.filter(F.col("hwm") < F.col("prev_hwm"))
    return anomaly(
        bad, "hwm-regression", offset=F.col("hwm"),
        ops=op_list("prev_index", "index"),
        extra=F.to_json(F.struct("prev_hwm")),
        description=F.format_string("the high watermark of %s went down from %s to %s",
                                    tp_name(), text("prev_hwm"), text("hwm")))


def elr_invariant(obs: DataFrame, info: RunInfo) -> DataFrame:
    min_isr = per_topic(info, lambda t: t.min_insync_replicas)
    isr = F.coalesce(F.col("isr"), F.array().cast("array<bigint>"))
    overlap = F.arrays_overlap(F.col("elr"), isr)
    elr_with_isr = (F.size("elr") > 0) & (F.size(isr) >= min_isr)
    bad = obs.filter(F.col("elr").isNotNull() & (F.coalesce(overlap, F.lit(False))
                                                 | elr_with_isr))
    return anomaly(
        bad, "elr-invariant",
        ops=op_list("index"),
        extra=F.to_json(F.struct("isr", "elr")),
        description=F.when(F.coalesce(overlap, F.lit(False)), F.format_string(
            "observed ELR %s overlaps ISR %s of %s", F.to_json("elr"), F.to_json(isr),
            tp_name())).otherwise(F.format_string(
                "observed ELR %s is not empty while ISR %s of %s has at least min ISR %s "
                "members", F.to_json("elr"), F.to_json(isr), tp_name(),
                min_isr.cast("string"))))
