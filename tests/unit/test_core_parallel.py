"""harness.core.parallel.at_once: every action runs at once, every one is waited
for, and the error raised is the first in the items' order."""

from __future__ import annotations

import threading
import time

import pytest

from elr_harness.core.parallel import at_once


def test_the_actions_run_at_once_and_the_results_keep_the_items_order() -> None:
    began = threading.Barrier(3)  # one action at a time would break it

    def action(n: int) -> int:
        began.wait(timeout=2)
        return n * 10

    assert at_once(action, [3, 1, 2]) == [30, 10, 20]


def test_the_first_error_in_the_items_order_is_raised_after_all_have_ended() -> None:
    ended: list[str] = []

    def action(name: str) -> None:
        if name == "slow":
            time.sleep(0.3)
        ended.append(name)
        if name != "ok":
            raise ValueError(name)

    with pytest.raises(ValueError, match="slow"):
        at_once(action, ["ok", "slow", "fast"])
    assert sorted(ended) == ["fast", "ok", "slow"]


def test_a_tolerated_error_is_returned_in_its_place() -> None:
    def action(n: int) -> int:
        if n == 2:
            raise TimeoutError("host 2")
        return n

    results = at_once(action, [1, 2, 3], tolerate=TimeoutError)
    assert results[0] == 1 and results[2] == 3
    assert isinstance(results[1], TimeoutError)
    with pytest.raises(TimeoutError):
        at_once(action, [1, 2, 3], tolerate=KeyError)


def test_no_items_is_no_results() -> None:
    assert at_once(lambda n: n, []) == []
