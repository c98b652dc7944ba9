"""What a fault kind or a scenario needs of the run around it, as data.

A kind or scenario names the storage layer it needs under the brokers and the
cluster or topic settings it changes; the run (harness.run_config, harness.run)
reads these from the registry and never tests a kind's name itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from elr_harness.core.config import RunConfig
from elr_harness.core.errors import BadInput


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


#: What each [needs] field takes: (lowest, highest).
NEEDS_RANGES = {"brokers": (3, 1000), "min_insync_replicas": (1, 16), "log_dirs": (1, 16)}


@dataclass(frozen=True)
class Needs:
    """What a schedule file needs of the cluster (its `[needs]` table); None: anything."""

    #: at least this many brokers (a broker that is no replica answers the observer)
    brokers: int | None = None
    #: the topic's min ISR, exactly (KAFKA-19522's recipe needs an ISR of one)
    min_insync_replicas: int | None = None
    #: at least this many log dirs per broker (one may fail while the broker lives)
    log_dirs: int | None = None
    #: whether the run shortens Kafka's session and ISR-lag timeouts, as the scripted
    #: scenarios whose waits wait them out do (ScenarioTimings); None: yes
    short_kafka_timeouts: bool | None = None

    @classmethod
    def from_table(cls, raw: Any, where: str) -> Needs:
        """A file's [needs] table, checked (BadInput naming `where` and the field)."""
        if not isinstance(raw, dict):
            raise BadInput(f"{where}: `needs` must be a table ([needs])")
        known = (*NEEDS_RANGES, "short_kafka_timeouts")
        for key, value in raw.items():
            if key not in known:
                raise BadInput(f"{where}: [needs] has no field {str(key)[:40]!r}; known: "
                               f"{', '.join(known)}")
            if key == "short_kafka_timeouts":
                if not isinstance(value, bool):
                    raise BadInput(f"{where}: [needs] {key}: {value!r:.40} is not true or "
                                   "false")
                continue
            low, high = NEEDS_RANGES[key]
            if not isinstance(value, int) or isinstance(value, bool) or \
                    not low <= value <= high:
                raise BadInput(f"{where}: [needs] {key}: {value!r:.40} is not an integer "
                               f"{low}..{high}")
        return cls(**raw)

    def settings(self) -> tuple[Setting, ...]:
        """The config values the run takes unless its user chose them."""
        paths = {"brokers": "cluster.brokers", "log_dirs": "cluster.log_dirs",
                 "min_insync_replicas": "topic.min_insync_replicas"}
        chosen = {path: getattr(self, key) for key, path in paths.items()}
        return tuple(_fixed(path, value) for path, value in chosen.items()
                     if value is not None)

    def refuse(self, path: str, brokers: int, log_dirs: int,
               min_insync_replicas: Sequence[int]) -> None:
        """BadInput when the run's cluster is not what the schedule needs."""
        flags = []
        if self.brokers is not None and brokers < self.brokers:
            flags.append(f"--brokers {self.brokers} (or more)")
        if self.min_insync_replicas is not None and any(
                m != self.min_insync_replicas for m in min_insync_replicas):
            flags.append(f"--min-insync-replicas {self.min_insync_replicas}")
        if self.log_dirs is not None and log_dirs < self.log_dirs:
            flags.append(f"cluster.log_dirs = {self.log_dirs} (or more)")
        if flags:
            raise BadInput(f"--schedule {path} needs {', '.join(flags)} ([needs]); the run "
                           "chose otherwise")


def _fixed(path: str, value: int) -> Setting:
    """A Setting whose value is `value` whatever the run's config says."""
    return Setting(path, lambda _run: value)
