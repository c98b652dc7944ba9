"""A test module's checks of small histories, judged together in one Spark batch
before its tests run (#60).

A check of a tiny history is mostly Spark's fixed cost of planning and starting
its jobs (about 5 s each in the shared session, where the batch takes about
that for all of a module's). So a module routes its checks through
`BatchedChecks.check_history` and takes the fixture `fixture()` makes: before its first
test, each test function that calls the check (by the name the module gives) is
run once up to its first check, with a throwaway tmp_path, and the history and
test.json it would check are kept; they are checked together by
checker.check.check_histories, whose results are each history's check alone
(tests/unit/test_checker_batch.py holds it to that). When the test then runs for
real, its check of the same bytes with the same test.json gets those results; a
check of anything else (a second check in one test, another config) is a real
check_history. Every test still runs its whole body and asserts everything it
did.

ELR_TEST_UNBATCHED=1 turns the batch off: every check is then its own
check_history, as before, to hold the two to the same outcome by hand.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from _pytest.mark.structures import ParameterSet
from checker_fixtures import TEST_CONFIG

from elr_harness.checker.check import check_histories, check_history, resolve_history
from elr_harness.core.config import CheckerConfig


class _Recorded(BaseException):
    """Stops a test function at its first check in the recording pass (a
    BaseException, so no `except Exception` in a test swallows it)."""


def _key(history: bytes, test: dict | None) -> tuple[str, str]:
    return hashlib.sha256(history).hexdigest(), json.dumps(test, sort_keys=True)


def _param_sets(fn: Callable) -> list[dict]:
    """Every set of parametrize arguments fn runs with ({} if none): the product of
    its parametrize marks, as pytest makes it."""
    sets: list[dict] = [{}]
    for mark in getattr(fn, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names = [n.strip() for n in mark.args[0].split(",")] if isinstance(
            mark.args[0], str) else list(mark.args[0])
        expanded = []
        for values in mark.args[1]:
            if isinstance(values, ParameterSet):
                values = values.values
            elif len(names) == 1:
                values = (values,)
            expanded.append(dict(zip(names, values, strict=True)))
        sets = [{**a, **b} for a in sets for b in expanded]
    return sets


class BatchedChecks:
    """check_history for one test module, its checks prefetched in one batch."""

    def __init__(self, config: CheckerConfig = TEST_CONFIG) -> None:
        self.config = config
        self._recording: list[tuple[bytes, dict | None]] | None = None
        self._results: dict[tuple[str, str], dict] = {}
        self.served = 0  # checks answered from the batch

    def check_history(self, path: Path, test: dict | None, config: CheckerConfig) -> dict:
        """checker.check.check_history, or the batch's results for these bytes."""
        if self._recording is not None:
            self._recording.append((resolve_history(path).read_bytes(), test))
            raise _Recorded
        if config is self.config:
            hit = self._results.get(_key(resolve_history(path).read_bytes(), test))
            if hit is not None:
                self.served += 1
                return copy.deepcopy(hit)
        return check_history(path, test, config)

    def fixture(self, calls: str, autouse: bool = False) -> Callable:
        """The module-scoped fixture `_checked_together` of a test module that routes
        its checks through this: the first check of each test function that refers
        to `calls`, judged in one batch before the module's first test (in the
        tests' one SparkSession). A module assigns it to `_checked_together`."""
        @pytest.fixture(scope="module", autouse=autouse, name="_checked_together")
        def checked_together(spark, tmp_path_factory, request) -> None:
            self.prefetch(request.module, calls, tmp_path_factory.mktemp("batch"))
        return checked_together

    def prefetch(self, module: ModuleType, calls: str, root: Path) -> int:
        """Record the first check of every test function of module that refers to
        the name `calls`, and judge them all in one batch. Returns how many
        histories the batch judged."""
        if os.environ.get("ELR_TEST_UNBATCHED") == "1":
            return 0
        recorded: list[tuple[bytes, dict | None]] = []
        functions = [fn for name, fn in vars(module).items()
                     if name.startswith("test_") and inspect.isfunction(fn)
                     and fn.__module__ == module.__name__ and calls in fn.__code__.co_names
                     and not hasattr(fn, "hypothesis")]  # drawn examples: not known ahead
        for number, fn in enumerate(functions):
            wanted = set(inspect.signature(fn).parameters)
            for index, params in enumerate(_param_sets(fn)):
                if not wanted <= set(params) | {"tmp_path"}:
                    continue  # takes a fixture this pass cannot give: checked when it runs
                tmp = root / "record" / f"{number}-{index}"
                tmp.mkdir(parents=True)
                args = {**params, **({"tmp_path": tmp} if "tmp_path" in wanted else {})}
                self._recording = recorded
                try:
                    fn(**{k: v for k, v in args.items() if k in wanted})
                except _Recorded:
                    pass
                except Exception:  # noqa: BLE001 - the test itself will say what is wrong
                    pass
                finally:
                    self._recording = None
        unique: dict[tuple[str, str], tuple[bytes, dict | None]] = {}
        for history, test in recorded:
            unique.setdefault(_key(history, test), (history, test))
        cases = []
        for number, (history, test) in enumerate(unique.values()):
            path = root / "batch" / str(number) / "history.jsonl"
            path.parent.mkdir(parents=True)
            path.write_bytes(history)
            cases.append((path, test))
        for key, results in zip(unique, check_histories(cases, self.config), strict=True):
            if isinstance(results, dict):  # a refused history: its test's own check says so
                self._results[key] = results
        return len(cases)
