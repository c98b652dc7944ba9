"""A batch of histories checked together (checker.check.check_histories) gives
each history exactly what its check alone gives (check_history, the path
`harness check` and a run take): the same results.json, and the same error for
a history a check refuses.

The property tests and the hand-written reference cases are judged in batches
(test_checker_vs_reference.py, test_reference_cases_through_spark.py); this is
what makes their verdicts the single check's. The batch mixes what could leak
from one run into another: histories of the same topic and process ids, faults
that change the cluster default's min ISR or turn the ELR feature off, each
planted anomaly, no test.json, an empty history, a cut-short last line and a
malformed one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checker_fixtures import TEST_CONFIG
from history_strategies import histories
from hypothesis import HealthCheck, given, settings
from synthetic import MIXABLE, Injection, SyntheticSpec, every_anomaly, write_run_dir

from elr_harness.checker.check import check_histories, check_history
from elr_harness.core.errors import HarnessError

pytestmark = pytest.mark.usefixtures("spark")


def _same(results: dict) -> dict:
    """results.json but the checker's own time."""
    return {**results, "stats": {k: v for k, v in results["stats"].items()
                                 if k != "checker_seconds"}}


def _cases(root: Path) -> list[tuple[Path, dict | None]]:
    cases: list[tuple[Path, dict | None]] = []

    def run_dir(name: str, spec: SyntheticSpec, with_test_json: bool = True) -> None:
        folder = root / name
        write_run_dir(folder, spec, with_test_json=with_test_json)
        test = json.loads((folder / "test.json").read_text()) if with_test_json else None
        cases.append((folder / "history.jsonl", test))

    run_dir("every-anomaly", every_anomaly(1500, seed=11))
    # a few planted anomalies per run, each run of the same topic and process ids
    # (four per run: each run is checked alone too, a Spark job each)
    for number in range(0, len(MIXABLE), 4):
        names = MIXABLE[number:number + 4]
        run_dir(f"planted-{number}", SyntheticSpec(lines=300, seed=number, injections=tuple(
            Injection(name, at=(i + 1) / (len(names) + 1)) for i, name in enumerate(names))))
    run_dir("clean", SyntheticSpec(lines=400, seed=3))
    run_dir("no-test-json", SyntheticSpec(lines=300, seed=4), with_test_json=False)
    empty = root / "empty" / "history.jsonl"
    empty.parent.mkdir()
    empty.write_text("")
    cases.append((empty, None))
    cut = root / "cut" / "history.jsonl"
    write_run_dir(cut.parent, SyntheticSpec(lines=300, seed=5))
    with cut.open("a") as f:
        f.write('{"index": 99999, "time": 1, "pro')
    cases.append((cut, None))
    broken = root / "broken" / "history.jsonl"
    write_run_dir(broken.parent, SyntheticSpec(lines=300, seed=6))
    lines = broken.read_text().splitlines(keepends=True)
    lines[40] = '{"index": 40, "time": oops}\n'
    broken.write_text("".join(lines))
    cases.append((broken, None))
    missing = root / "missing" / "history.jsonl"
    cases.append((missing, None))
    return cases


def _drawn(root: Path, count: int) -> list[tuple[Path, dict | None]]:
    """Random histories of the contract (the property tests' strategy)."""
    out: list[tuple[Path, dict | None]] = []

    @settings(max_examples=count, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(histories())
    def take(history) -> None:
        out.append((history.write(root / f"drawn-{len(out)}"), history.test))

    take()
    return out


def test_a_batch_gives_each_history_what_its_check_alone_gives(tmp_path):
    cases = _cases(tmp_path) + _drawn(tmp_path, 4)
    batch = check_histories(cases, TEST_CONFIG)
    assert len(batch) == len(cases)
    for (path, test), got in zip(cases, batch, strict=True):
        try:
            alone = check_history(path, test, TEST_CONFIG)
        except HarnessError as err:
            assert isinstance(got, HarnessError), f"{path}: alone {err}; batch {got}"
            assert str(got) == str(err), path
            continue
        assert not isinstance(got, HarnessError), f"{path}: batch refused it: {got}"
        assert _same(got) == _same(alone), path
    found = {name for got in batch if isinstance(got, dict) for name in got["anomaly_types"]}
    assert set(MIXABLE) <= found, "each planted anomaly was found in its own run"
    refused = [got for got in batch if isinstance(got, HarnessError)]
    assert len(refused) == 2, "the malformed history and the missing one"
