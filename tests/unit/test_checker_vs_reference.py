"""The Spark checker against the reference checker (tests/reference_checker.py) on
random histories that follow shared/HISTORY.md (tests/history_strategies.py):
the same verdict, the same count of every anomaly (lost-write and unseen by
acks), the same truncated lines, incomplete partitions, fault budget counts and
checked counts; and on a malformed history, errors naming the same line.

One SparkSession for the whole module (checker_fixtures.spark); a check of a
tiny history takes about a second, hence the modest numbers of examples. Under
CI=true the runs are derandomized (tests/conftest.py's Hypothesis profile).
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from checker_agreement import differences, reference_view, spark_view
from checker_fixtures import TEST_CONFIG, spark  # noqa: F401
from history_strategies import GeneratedHistory, histories, malformed_histories
from hypothesis import HealthCheck, given, settings
from reference_checker import MalformedLine, reference_check

from checkers.check import check_history
from checkers.synthetic import MIXABLE, every_anomaly, synthetic_test_json, write_run_dir
from harness.errors import HarnessError

pytestmark = pytest.mark.usefixtures("spark")


def _both(history: GeneratedHistory) -> tuple[dict, dict]:
    with tempfile.TemporaryDirectory(prefix="vs-reference-") as tmp:
        path = history.write(Path(tmp))
        ref = reference_view(reference_check(path, history.test))
        got = spark_view(check_history(path, history.test, TEST_CONFIG))
    return ref, got


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_the_spark_checker_agrees_with_the_reference(history):
    ref, got = _both(history)
    assert got == ref, json.dumps(differences(ref, got), indent=1)


_LINE = re.compile(r"\bline (\d+)\b")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(malformed_histories())
def test_both_checkers_name_the_same_malformed_line(case):
    history, number, how = case
    with tempfile.TemporaryDirectory(prefix="vs-reference-") as tmp:
        path = history.write(Path(tmp))
        with pytest.raises(MalformedLine) as ref_err:
            reference_check(path, history.test)
        try:
            results = check_history(path, history.test, TEST_CONFIG)
        except HarnessError as err:
            said = str(err)
        else:
            said = f"no error: valid={results['valid']!r}"
    assert ref_err.value.line == number, (how, str(ref_err.value))
    named = _LINE.search(said)
    assert named is not None and int(named.group(1)) == number, (
        f"line {number} broken ({how}); reference: {ref_err.value}; spark: {said}")


def test_the_reference_agrees_with_the_spark_checker_on_every_planted_anomaly(tmp_path):
    """checkers/synthetic.py's history with each mixable anomaly planted once."""
    spec = every_anomaly(1500, seed=11)
    write_run_dir(tmp_path, spec)
    test = synthetic_test_json(spec)
    history = tmp_path / "history.jsonl"
    ref = reference_view(reference_check(history, test))
    assert {name: ref["counts"][name] for name in MIXABLE} == dict.fromkeys(MIXABLE, 1)
    assert ref["valid"] is False
    got = spark_view(check_history(history, test, TEST_CONFIG))
    assert got == ref, json.dumps(differences(ref, got), indent=1)
