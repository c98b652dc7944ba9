"""What a fault kind or a scenario needs of the run around it, as data.

A kind or scenario names the storage layer it needs under the brokers and the
cluster or topic settings it changes; the run (harness.run_config, harness.run)
reads these from the registry and never tests a kind's name itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from elr_harness.core.config import RunConfig


class Layer(StrEnum):
    """A storage layer the brokers' data directories sit on."""

    #: The FUSE layer that keeps unsynced writes in memory (nemesis.pagecache), so a
    #: power loss can drop them.
    PAGE_CACHE = "page-cache"


@dataclass(frozen=True)
class Setting:
    """A config value a kind or scenario needs, unless the user chose it.

    `path` is where it lands in the run's config (`section.field`, or deeper:
    `cluster.timings.leader_imbalance_check_interval_s`); `value` reads it from
    the RunConfig (its own tunable there, so a --config file can change it).
    The user chose it when the flag of `unless` (default: `path`) was typed or
    a --config file holds that key or table.
    """

    path: str
    value: Callable[[RunConfig], Any]
    unless: str | None = None

    @property
    def chosen_by(self) -> str:
        """The config path whose presence keeps the user's choice."""
        return self.unless or self.path
