"""The worker thread every workload client runs in.

A client (a producer client, a consumer process) does its work in one daemon
thread; the Workload starts it, joins it with a bound and learns from
`crashed` whether it ended by a harness bug rather than by stop or time limit.
"""

from __future__ import annotations

import threading


class ClientThread:
    """Start, bounded join, and the exception the thread ended with, if any."""

    def __init__(self, name: str) -> None:
        self.name = name
        #: An unexpected exception that ended the thread (a harness bug), if any.
        self.crashed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait for the thread; True if it has ended (or never started: a Ctrl-C
        while the workload started its clients stops the ones it started)."""
        if self._thread.ident is None:
            return True
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _run(self) -> None:
        raise NotImplementedError("a client defines what its thread does")
