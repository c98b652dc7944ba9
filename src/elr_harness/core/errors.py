"""Errors the user can act on.

A HarnessError carries a message meant for a person and an exit code; the CLI
prints the message (never a traceback) and exits with that code. Exit codes
follow DESIGN.md: 0 valid, 1 invalid, 2 unknown or harness error.
"""

from __future__ import annotations

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_UNKNOWN = 2


class HarnessError(Exception):
    """A failure with a clear, user-facing message (bad input, no engine, ...)."""

    def __init__(self, message: str, exit_code: int = EXIT_UNKNOWN) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class BadInput(HarnessError):
    """The user asked for something impossible or unknown; nothing was started."""


class EngineUnavailable(HarnessError):
    """No Docker engine answers."""


class DistributionError(HarnessError):
    """A Kafka distribution could not be resolved or read."""


class ClusterStartError(HarnessError):
    """A node failed to start or the cluster never became ready."""


class HistoryError(HarnessError):
    """A history file is corrupt (a malformed line that is not the last one)."""


class Refused(HarnessError):
    """An action was refused before it changed anything (a fault recorded as `fail`:
    it certainly did not happen)."""
