"""Shared pieces of the checker tests: the checker config of the test session's one
SparkSession (the `spark` fixture, tests/unit/conftest.py), and a helper that writes
a synthetic run and checks it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from synthetic import Generated, SyntheticSpec, write_run_dir

from elr_harness.checker.check import check_history
from elr_harness.core.config import CheckerConfig

#: Small shuffles: the test histories are tiny and the machine has 2 cores. The full
#: JIT whatever the history's size: the one Spark session of the tests checks hundreds
#: of small histories, as a soak's does (checkers.spark.jvm_options); C1 alone, the
#: quick JIT a single small check starts with, made 32 of the hand-written cases take
#: 360 s instead of 216 s. The first check of the test process starts the session, so
#: the other shared config (report_fixtures.CHECKER_CONFIG) says the same
TEST_CONFIG = CheckerConfig(shuffle_partitions=2, quick_jit_below_bytes=0)


def check_synthetic(run_dir: Path, spec: SyntheticSpec, with_test_json: bool = True,
                    check: Callable[[Path, dict | None, CheckerConfig], dict] = check_history,
                    ) -> tuple[dict, Generated]:
    """Write a synthetic run into run_dir, check it (check_history, or a module's
    batched_checks.BatchedChecks.check_history), return (results, what was planted)."""
    generated = write_run_dir(run_dir, spec, with_test_json=with_test_json)
    test = json.loads((run_dir / "test.json").read_text()) if with_test_json else None
    return check(run_dir / "history.jsonl", test, TEST_CONFIG), generated


def assert_found_exactly(results: dict, generated: Generated, name: str) -> None:
    """The anomaly is reported with the planted count and exactly the planted op indices."""
    expected = generated.expected[name]
    entry = results["anomalies"].get(name)
    assert entry is not None, f"{name} not reported; found {results['anomaly_types']}"
    assert entry["count"] == len(expected), (name, entry["count"], expected)
    got = sorted(tuple(e["ops"]) for e in entry["examples"])
    assert got == sorted(e.ops for e in expected), (name, got, expected)
    for example, planted in zip(sorted(entry["examples"], key=lambda e: e["ops"]),
                                sorted(expected, key=lambda e: e.ops), strict=True):
        assert example["partition"] == planted.partition
        if planted.value is not None:
            assert example["value"] == planted.value
        if planted.offset is not None:
            assert example["offset"] == planted.offset


def run_python(script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run a Python script in a fresh process at the repository root (a Spark of its own)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)],
                          cwd=Path(__file__).resolve().parents[2],
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=300)
