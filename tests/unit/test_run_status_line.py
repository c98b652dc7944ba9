"""A run's progress off a terminal starts no live status line: rich's refresh
thread shares a lock with the main thread, and a SIGINT landing as the main
thread takes it left the status's exit waiting forever (a soak's child in CI,
interrupted by its parent's death, never wrote that it was interrupted)."""

from __future__ import annotations

import threading

from rich.console import Console
from rich.live import _RefreshThread

from elr_harness.run import phases


def _refresh_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if isinstance(t, _RefreshThread)]


def test_off_a_terminal_no_refresh_thread_runs(monkeypatch):
    monkeypatch.setattr(phases, "console", Console(force_terminal=False))
    with phases._status_line() as status:
        status.update("workload + nemesis  5 s")
        assert _refresh_threads() == []


def test_on_a_terminal_the_status_line_is_rich_s(monkeypatch):
    monkeypatch.setattr(phases, "console", Console(force_terminal=True))
    with phases._status_line() as status:
        status.update("workload + nemesis  5 s")
        [refresh] = _refresh_threads()
    refresh.join(5)
    assert not refresh.is_alive()
