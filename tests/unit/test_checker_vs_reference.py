"""The Spark checker against the reference checker (tests/reference_checker.py) on
random histories that follow shared/HISTORY.md (tests/history_strategies.py):
the same verdict, the same count of every anomaly (lost-write and unseen by
acks), the same truncated lines, incomplete partitions, fault budget counts and
checked counts; and on a malformed history, errors naming the same line.
Contract version 4's transactions get a test of their own, on histories of
history_strategies.txn_histories (the txn tally, the txn anomalies by protocol
and the read_committed final reads' completeness compared too).

One SparkSession for the whole module (checker_fixtures.spark). A check of a
tiny history alone takes 2-8 s on 2 cores, nearly all of it Spark's fixed cost,
so each test draws its histories first (Hypothesis, as ever) and the Spark
checker judges them in one batch (checker.check.check_histories); every
history is still compared with the reference, count for count, and
tests/unit/test_checker_batch.py holds the batch to what each history's check
alone gives. What is lost is Hypothesis's shrinking of a failing example: a
mismatch names the history's file instead. The type rules, which random
breakage samples thinly, also get a table of their own. Under CI=true the runs
are derandomized (tests/conftest.py's Hypothesis profile).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from checker_agreement import differences, reference_view, spark_view
from checker_fixtures import TEST_CONFIG
from history_strategies import (
    GeneratedHistory,
    histories,
    malformed_histories,
    txn_histories,
)
from hypothesis import HealthCheck, event, given, settings
from reference_checker import MalformedLine, reference_check
from synthetic import MIXABLE, every_anomaly, synthetic_test_json, write_run_dir

from elr_harness.checker.check import (
    check_histories,
    check_history,
    expression_codegen,
    whole_stage_codegen,
)
from elr_harness.core.config import CheckerConfig
from elr_harness.core.errors import HarnessError

pytestmark = pytest.mark.usefixtures("spark")

#: Spark's generated code for every stage and expression, whatever the size
GENERATED = replace(TEST_CONFIG, interpreted_below_bytes=0,
                    interpreted_expressions_below_bytes=0)


def _for_each_drawn(strategy, examples: int, take) -> None:
    """take(example) for each example Hypothesis draws from strategy, as a @given
    test of `examples` examples would run it (take runs under @given: it may call
    hypothesis.event)."""
    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(strategy)
    def each(example) -> None:
        take(example)

    each()


def _history_of(path: Path) -> str:
    test = path.parent / "test.json"
    return (f"history {path}:\n{path.read_text()[:4000]}\ntest.json: "
            + (test.read_text() if test.exists() else "none"))


def test_the_spark_checker_agrees_with_the_reference(tmp_path):
    drawn: list[tuple[Path, dict | None, dict]] = []

    def take(history: GeneratedHistory) -> None:
        path = history.write(tmp_path / f"history-{len(drawn)}")
        ref = reference_view(reference_check(path, history.test))
        _tell_the_kinds(ref)
        drawn.append((path, history.test, ref))

    _for_each_drawn(histories(), 60, take)
    assert len(drawn) >= 50, "Hypothesis drew the histories the test is sized for"
    _assert_spark_agrees(drawn)


def test_the_spark_checker_agrees_with_the_reference_on_transactions(tmp_path):
    """Contract version 4: histories with transactional producers, read_committed
    consumers, LSO observations and final reads at both isolations
    (history_strategies.txn_histories), anomalies injected at random."""
    drawn: list[tuple[Path, dict | None, dict]] = []

    def take(history: GeneratedHistory) -> None:
        path = history.write(tmp_path / f"txn-history-{len(drawn)}")
        ref = reference_view(reference_check(path, history.test))
        _tell_the_kinds(ref)
        drawn.append((path, history.test, ref))

    _for_each_drawn(txn_histories(), 40, take)
    assert len(drawn) >= 30, "Hypothesis drew the histories the test is sized for"
    _assert_spark_agrees(drawn)


def test_the_spark_checker_agrees_with_the_reference_on_generated_code(tmp_path):
    """The tests' histories are small, so Spark judges them interpreted (no
    whole-stage code, no class per expression: CheckerConfig's
    interpreted_below_bytes and interpreted_expressions_below_bytes), as it does a
    run's; a long soak's history crosses both thresholds and is judged by generated
    code. The same reference, on plain and transactional histories, holds that path
    to the same results."""
    drawn: list[tuple[Path, dict | None, dict]] = []

    def take(history: GeneratedHistory) -> None:
        path = history.write(tmp_path / f"history-{len(drawn)}")
        drawn.append((path, history.test, reference_view(reference_check(path, history.test))))

    _for_each_drawn(histories(), 20, take)
    _for_each_drawn(txn_histories(), 15, take)
    assert len(drawn) >= 28, "Hypothesis drew the histories the test is sized for"
    assert whole_stage_codegen(0, GENERATED) and expression_codegen(0, GENERATED) == "FALLBACK"
    _assert_spark_agrees(drawn, GENERATED)


def _assert_spark_agrees(drawn: list[tuple[Path, dict | None, dict]],
                         config: CheckerConfig = TEST_CONFIG) -> None:
    """The Spark checker, judging every drawn history in one batch, gives each the
    reference's view."""
    results = check_histories([(path, test) for path, test, _ in drawn], config)
    for (path, _, ref), got in zip(drawn, results, strict=True):
        if isinstance(got, HarnessError):
            raise AssertionError(f"{_history_of(path)}\nspark refused it: {got}")
        got = spark_view(got)
        assert got == ref, (json.dumps(differences(ref, got), indent=1) + "\n"
                            + _history_of(path))


def _tell_the_kinds(view: dict) -> None:
    """One hypothesis event per anomaly kind the example held ("valid" when none),
    so `pytest --hypothesis-show-statistics` shows the spread of the examples."""
    kinds = sorted(name for name, count in view["counts"].items() if count)
    for kind in kinds:
        event(kind)
    if not kinds:
        event("valid" if view["valid"] is True else f"no anomaly, {view['valid']}")
    for state, reached in view["coverage"].items():
        if reached["count"]:
            event(f"coverage: {state}")


_LINE = re.compile(r"\bline (\d+)\b")


def test_both_checkers_name_the_same_malformed_line(tmp_path):
    drawn: list[tuple[Path, dict | None, int, str, MalformedLine]] = []

    def take(case) -> None:
        history, number, how = case
        path = history.write(tmp_path / f"history-{len(drawn)}")
        with pytest.raises(MalformedLine) as ref_err:
            reference_check(path, history.test)
        drawn.append((path, history.test, number, how, ref_err.value))

    _for_each_drawn(malformed_histories(), 20, take)
    assert len(drawn) >= 15, "Hypothesis drew the histories the test is sized for"
    results = check_histories([(path, test) for path, test, *_ in drawn], TEST_CONFIG)
    for (path, _, number, how, ref_err), got in zip(drawn, results, strict=True):
        said = str(got) if isinstance(got, HarnessError) else \
            f"no error: valid={got['valid']!r}"
        assert ref_err.line == number, (how, str(ref_err), _history_of(path))
        named = _LINE.search(said)
        assert named is not None and int(named.group(1)) == number, (
            f"line {number} broken ({how}); reference: {ref_err}; spark: {said}\n"
            + _history_of(path))


def test_the_reference_agrees_with_the_spark_checker_on_every_planted_anomaly(tmp_path):
    """checker/synthetic.py's history with each mixable anomaly planted once."""
    spec = every_anomaly(1500, seed=11)
    write_run_dir(tmp_path, spec)
    test = synthetic_test_json(spec)
    history = tmp_path / "history.jsonl"
    ref = reference_view(reference_check(history, test))
    assert {name: ref["counts"][name] for name in MIXABLE} == dict.fromkeys(MIXABLE, 1)
    assert ref["valid"] is False
    got = spark_view(check_history(history, test, TEST_CONFIG))
    assert got == ref, json.dumps(differences(ref, got), indent=1)


# -- every type rule of a line, one broken field at a time --------------------------

_BASE = [
    {"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "send", "topic": "t",
     "partition": 0, "acks": "all", "value": 1},
    {"index": 1, "time": 1, "process": 0, "type": "ok", "f": "send", "topic": "t",
     "partition": 0, "acks": "all", "value": 1, "offset": 0},
    {"index": 2, "time": 2, "process": -1, "type": "invoke", "f": "fault", "fault": "kill",
     "nodes": ["broker-1"]},
    {"index": 3, "time": 3, "process": -1, "type": "ok", "f": "fault", "fault": "kill",
     "nodes": ["broker-1"], "detail": {}},
    {"index": 4, "time": 4, "process": -2, "type": "ok", "f": "observe", "topic": "t",
     "partition": 0, "leader": 1, "leader_epoch": 1, "isr": [1], "elr": [],
     "last_known_elr": []},
    {"index": 5, "time": 5, "process": -3, "type": "ok", "f": "replica", "topic": "t",
     "partition": 0, "node": "broker-1", "broker": 1, "log_end_offset": 1,
     "records": [[0, 1, 1]]},
    {"index": 6, "time": 6, "process": 9, "type": "invoke", "f": "poll", "topic": "t",
     "final": True, "seek": {"0": 0}},
    {"index": 7, "time": 7, "process": 9, "type": "ok", "f": "poll", "topic": "t",
     "final": True, "records": [[0, 0, 1]], "high_watermark": {"0": 1}},
    {"index": 8, "time": 8, "process": -4, "type": "ok", "f": "compaction", "topic": "t"},
]

#: (line to change, field, its raw JSON text, malformed?). Spark's typed reader
#: takes 5 for "5" and 1 for true (its variant read tells them apart); a line of
#: an unknown kind is judged on its common fields alone.
_TYPE_CASES = {
    "topic-int": (0, "topic", "5", True), "topic-bool": (0, "topic", "true", True),
    "topic-object": (0, "topic", '{"a": 1}', True), "acks-int": (0, "acks", "1", True),
    "acks-3": (0, "acks", '"3"', True), "value-text": (0, "value", '"1"', True),
    "error-int": (1, "error", "3", True), "error-null": (1, "error", "null", False),
    "offset-null": (1, "offset", "null", True), "type-int": (1, "type", "1", True),
    "f-int": (1, "f", "1", True), "fault-int": (2, "fault", "7", True),
    "nodes-int": (2, "nodes", "[2]", True), "nodes-null-item": (2, "nodes", '["a", null]', True),
    "nodes-text": (2, "nodes", '"broker-1"', True), "nodes-empty": (2, "nodes", "[]", False),
    "detail-list": (3, "detail", "[1]", True), "detail-int": (3, "detail", "1", True),
    "isr-text": (4, "isr", '"1"', True), "leader-null": (4, "leader", "null", True),
    "observe-invoke": (4, "type", '"invoke"', True), "node-int": (5, "node", "1", True),
    "final-int": (6, "final", "1", True), "seek-list": (6, "seek", "[0]", True),
    "records-object": (7, "records", "{}", True),
    "poll-with-a-text-value": (7, "value", '"x"', True),
    "send-with-a-text-isr": (0, "isr", '"1"', True),
    # contract version 3's observe fields: ints and a list of ints, on any kind
    "min-isr-text": (4, "min_isr", '"2"', True), "min-isr-fraction": (4, "min_isr", "1.5", True),
    "replicas-text": (4, "replicas", '["1"]', True), "replicas-int": (4, "replicas", "1", True),
    "elr-feature-bool": (4, "elr_feature", "true", True),
    "elr-feature-null": (4, "elr_feature", "null", False),
    "send-with-a-text-replicas": (0, "replicas", '"1"', True),
    "unknown-kind-value-text": (8, "value", '"x"', False),
    "unknown-kind-nodes-int": (8, "nodes", "[1]", False),
    "unknown-kind-records": (8, "records", "[[1]]", False),
    "unknown-kind-index-fraction": (8, "index", "1.5", True),
    "unknown-kind-bad-type": (8, "type", '"done"', True),
}


def _type_case_history(folder: Path, case: str) -> Path:
    at, name, raw, _ = _TYPE_CASES[case]
    lines = [json.dumps(line) for line in _BASE]
    lines[at] = json.dumps({**_BASE[at], name: "@@"}).replace('"@@"', raw)
    path = folder / case / "history.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def type_cases(tmp_path_factory) -> dict[str, tuple[Path, dict | HarnessError]]:
    """Every type case's history, checked by Spark in one batch."""
    folder = tmp_path_factory.mktemp("type-cases")
    paths = {case: _type_case_history(folder, case) for case in sorted(_TYPE_CASES)}
    results = check_histories([(path, None) for path in paths.values()], TEST_CONFIG)
    return {case: (path, got) for (case, path), got in zip(paths.items(), results,
                                                           strict=True)}


@pytest.mark.parametrize("case", sorted(_TYPE_CASES))
def test_each_type_rule_is_the_references(type_cases, case):
    """The checker refuses what the reference refuses, naming the same line, and
    accepts what it accepts (HISTORY.md's types; docs/CHECKING.md, "Lines")."""
    at, _, _, malformed = _TYPE_CASES[case]
    path, got = type_cases[case]
    if malformed:
        with pytest.raises(MalformedLine) as ref_err:
            reference_check(path, None)
        assert ref_err.value.line == at + 1
    else:
        reference_check(path, None)
    if malformed:
        assert isinstance(got, HarnessError), f"no error: valid={got['valid']!r}"
        assert f"line {at + 1} is not a valid history line" in str(got)
        assert "wrong type" not in str(got), "the message says what is wrong"
    else:
        assert not isinstance(got, HarnessError), str(got)
        assert got["valid"] is True
