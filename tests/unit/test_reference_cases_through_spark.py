"""The hand-written reference cases (tests/unit/test_reference_checker.py, for
contract version 3's rules test_reference_checker_v3.py, and the contract's rows,
test_contract_rows.py and for version 4's transactions test_contract_rows_v4.py)
run through the Spark checker too (#32).

Each case builds its small history and asserts what the reference oracle
(tests/reference_checker.py) says of it; here the same case runs with a `check`
that also keeps every history it builds, and the Spark checker's verdict, anomaly
counts and the rest of checker_agreement's view of each must equal the
reference's. A history the reference refuses as malformed must make the Spark
checker fail naming the same line.

The Spark checker judges every case's histories in one batch
(checker.check.check_histories, in the one SparkSession of the unit tests): a
check of a tiny history is mostly Spark's fixed cost, and 283 of them one by one
took 23 minutes of the suite. Each case is still its own test, compared count
for count with its own results; tests/unit/test_checker_batch.py holds the batch
to what each history's check alone gives.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest
import test_contract_rows as cases_rows
import test_contract_rows_v4 as cases_rows_v4
import test_reference_checker as cases
import test_reference_checker_v3 as cases_v3
from _pytest.mark.structures import ParameterSet
from checker_agreement import differences, reference_view, spark_view
from checker_fixtures import TEST_CONFIG
from reference_checker import MalformedLine, reference_check

from elr_harness.checker.check import check_histories
from elr_harness.core.errors import HarnessError

pytestmark = pytest.mark.usefixtures("spark")


def _cases() -> list:
    """Every case of the two case files that takes `check`, its parametrized ones
    expanded, in the files' order."""
    found = []
    functions = [item for module in (cases, cases_v3, cases_rows, cases_rows_v4) for item in sorted(
        ((name, fn) for name, fn in vars(module).items()
         if name.startswith("test_") and inspect.isfunction(fn)
         and fn.__module__ == module.__name__
         and "check" in inspect.signature(fn).parameters),
        key=lambda item: item[1].__code__.co_firstlineno)]
    for name, fn in functions:
        marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
        if not marks:
            found.append(pytest.param(fn, {}, id=name))
            continue
        (mark,) = marks
        names = [n.strip() for n in mark.args[0].split(",")]
        for number, values in enumerate(mark.args[1]):
            if isinstance(values, ParameterSet):
                values = values.values  # a tuple of every name's value
            else:
                values = (values,) if len(names) == 1 else tuple(values)
            found.append(pytest.param(fn, dict(zip(names, values, strict=True)),
                                      id=f"{name}[{number}]"))
    return found


CASES = _cases()
_LINE = re.compile(r"\bline (\d+)\b")


def test_every_case_that_checks_a_history_is_taken():
    """82 functions of the first file take `check` (5 of them parametrized; the one
    that does not tests reference_check's own path handling), 10 of the second, 23
    of test_contract_rows (every one parametrized) and 12 of test_contract_rows_v4
    (8 of them parametrized)."""
    assert len({p.values[0].__name__ for p in CASES}) == 82 + 10 + 23 + 12
    assert len(CASES) == 82 + 10 - 5 + 4 + sum(
        len(next(m for m in fn.pytestmark if m.name == "parametrize").args[1])
        for fn in {p.values[0] for p in CASES} if getattr(fn, "pytestmark", None))


@pytest.fixture(scope="module")
def judged(tmp_path_factory, spark) -> dict[str, tuple]:
    """Every case run once with a `check` that keeps the histories it builds (and
    what the reference says of each), then all of them checked by Spark in one
    batch: {case id: (the case's own error or None, [(path, reference or
    MalformedLine, Spark's results or error)])}."""
    root = tmp_path_factory.mktemp("cases")
    kept: dict[str, tuple] = {}
    batch: list[tuple[Path, dict | None]] = []
    for param in CASES:
        case, params = param.values
        calls: list[list] = []
        folder = root / param.id.replace("/", "_")
        folder.mkdir()

        def check(history, test: dict | None = cases.TEST, calls=calls, folder=folder):
            path = folder / f"history-{len(calls)}" / "history.jsonl"
            path.parent.mkdir()
            if isinstance(history, bytes):  # a file that need not be UTF-8
                path.write_bytes(history)
            else:
                path.write_text(history if isinstance(history, str) else history.text())
            try:
                reference = reference_check(path, test)
            except MalformedLine as err:
                calls.append([path, err, len(batch)])
                batch.append((path, test))
                raise
            calls.append([path, reference, len(batch)])
            batch.append((path, test))
            return reference

        try:
            case(check, **params)  # the case's own assertions on the reference
            own = None
        except Exception as err:  # noqa: BLE001 - told by the case's own test below
            own = err
        kept[param.id] = (own, calls)
    results = check_histories(batch, TEST_CONFIG)
    return {name: (own, [(path, reference, results[at]) for path, reference, at in calls])
            for name, (own, calls) in kept.items()}


@pytest.mark.parametrize("case, params", CASES)
def test_the_spark_checker_agrees_with_the_reference_on_the_case(request, judged, case,
                                                                  params):
    own, calls = judged[request.node.callspec.id]
    if own is not None:
        raise own  # the case's own assertions on the reference failed
    assert calls, "the case checked no history"
    for path, reference, results in calls:
        if isinstance(reference, MalformedLine):
            if isinstance(results, HarnessError):
                said = str(results)
            else:
                said = f"no error: valid={results['valid']!r}"
            named = _LINE.search(said)
            assert named is not None and int(named.group(1)) == reference.line, (
                f"{path.parent.name}: reference: {reference}; spark: {said}")
            continue
        if isinstance(results, HarnessError):
            raise results
        want = reference_view(reference)
        got = spark_view(results)
        assert got == want, f"{path.parent.name}: " + json.dumps(differences(want, got),
                                                                  indent=1)
