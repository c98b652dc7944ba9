"""harness.core.wait.wait_until: the one polling loop (#32)."""

from __future__ import annotations

import threading
import time

from elr_harness.core.wait import wait_until


class Clock:
    """A clock that moves only when the loop sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_it_times_out_and_asks_once_more_at_the_deadline():
    clock, asked = Clock(), []
    assert wait_until(lambda: asked.append(clock.now), 1.0, 0.375,
                      clock=clock, sleep=clock.sleep) is False
    assert asked == [100.0, 100.375, 100.75, 101.0]
    assert clock.sleeps == [0.375, 0.375, 0.25]


def test_early_success_returns_at_once_without_sleeping_more():
    clock, answers = Clock(), iter([False, False, True])
    assert wait_until(lambda: next(answers), 60.0, 0.5, clock=clock, sleep=clock.sleep) is True
    assert clock.sleeps == [0.5, 0.5]


def test_a_true_predicate_is_seen_even_with_no_time_left():
    clock = Clock()
    assert wait_until(lambda: True, 0.0, 1.0, clock=clock, sleep=clock.sleep) is True
    assert wait_until(lambda: False, 0.0, 1.0, clock=clock, sleep=clock.sleep) is False
    assert clock.sleeps == []


def test_a_stop_event_ends_the_wait_at_once():
    stop = threading.Event()
    asked = []
    timer = threading.Timer(0.2, stop.set)
    timer.start()
    started = time.monotonic()
    assert wait_until(lambda: asked.append(1), 30.0, 10.0, stop) is False
    assert time.monotonic() - started < 5.0
    assert asked == [1]
    timer.join()


def test_a_stop_already_set_asks_nothing():
    stop = threading.Event()
    stop.set()
    asked = []
    assert wait_until(lambda: asked.append(1) or True, 30.0, 1.0, stop) is False
    assert asked == []


def test_the_predicate_s_error_propagates():
    def broken() -> bool:
        raise RuntimeError("node died")
    try:
        wait_until(broken, 5.0, 0.1)
    except RuntimeError as err:
        assert str(err) == "node died"
    else:
        raise AssertionError("no error")
