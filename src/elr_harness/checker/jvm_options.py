"""The checker JVM's options for a history's size: the configured ones, and the
JIT (C1 only below a size, where C2's compiles do not pay back). Read by the
session's start (checker/spark.py) and by the class archive's training
(checker/jvm_archive.py), which runs with what a check of its history gets."""

from __future__ import annotations

import os

from elr_harness.core.config import CheckerConfig


def jvm_options(config: CheckerConfig, history_bytes: int | None = None,
                cached: bool = False) -> str:
    """The JVM options for a history of this size, to be converted or with its Parquet
    cache current (ELR_CHECKER_JVM_OPTIONS overrides)."""
    if "ELR_CHECKER_JVM_OPTIONS" in os.environ:
        return os.environ["ELR_CHECKER_JVM_OPTIONS"]
    return sized_jvm_options(config, history_bytes, cached)


def sized_jvm_options(config: CheckerConfig, history_bytes: int | None = None,
                      cached: bool = False) -> str:
    """The configured JVM options and the JIT a history of this size is checked with."""
    below = config.quick_jit_cached_below_bytes if cached else config.quick_jit_below_bytes
    quick = history_bytes is None or history_bytes < below
    return f"{config.jvm_options} -XX:TieredStopAtLevel=1" if quick else config.jvm_options
