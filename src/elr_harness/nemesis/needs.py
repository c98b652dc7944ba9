"""What a fault kind or a scenario needs of the run around it, as data.

A kind or scenario names the storage layer it needs under the brokers and the
cluster or topic settings it changes; the run (harness.run_config, harness.run)
reads these from the registry and never tests a kind's name itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from elr_harness.core.config import WORKLOADS, RunConfig, WorkloadConfig
from elr_harness.core.errors import BadInput


class Layer(StrEnum):
    """A storage layer the brokers' data directories sit on."""

    #: The FUSE layer that keeps unsynced writes in memory (nemesis.pagecache.control), so a
    #: power loss can drop them.
    PAGE_CACHE = "page-cache"


@dataclass(frozen=True)
class Setting:
    """A config value a kind or scenario needs, unless the user chose it.

    `path` is where it lands in the run's config (`section.field`, or deeper:
    `cluster.timings.leader_imbalance_check_interval_s`); `value` reads it from
    the RunConfig (its own tunable there, so a --config file can change it), or
    `follows` from the run's other sections as they stand (`{"cluster": ...,
    "topic": ...}`: unclean leader election on exactly when ELR is off). The
    user chose it when the flag of `unless` (default: `path`) was typed or a
    --config file holds that key or table.
    """

    path: str
    value: Callable[[RunConfig], Any] | None = None
    unless: str | None = None
    follows: Callable[[Mapping[str, Any]], Any] | None = None

    def __post_init__(self) -> None:
        if (self.value is None) == (self.follows is None):
            raise ValueError(f"setting {self.path}: a value or what it follows, one")

    @property
    def chosen_by(self) -> str:
        """The config path whose presence keeps the user's choice."""
        return self.unless or self.path

    def value_in(self, run: RunConfig, sections: Mapping[str, Any]) -> Any:
        """Its value in a run whose config sections stand as `sections`."""
        if self.follows is not None:
            return self.follows(sections)
        assert self.value is not None
        return self.value(run)


#: What each [needs] field takes: (lowest, highest).
NEEDS_RANGES = {"brokers": (3, 1000), "min_insync_replicas": (1, 16), "log_dirs": (1, 16)}
#: `unclean_leader_election = "elr-off"`: on exactly when ELR is off (off with ELR on,
#: as KIP-966 intends: KAFKA-20716's unclean election is ELR off's alone).
WITH_ELR_OFF = "elr-off"
_FLAGS = ("short_kafka_timeouts",)


@dataclass(frozen=True)
class Needs:
    """What a schedule file needs of the cluster (its `[needs]` table); None: anything.

    Each is set unless the user chose it (a flag typed, or a --config key), and a
    run that chose otherwise is refused before anything starts."""

    #: at least this many brokers (a broker that is no replica answers the observer)
    brokers: int | None = None
    #: the topic's min ISR, exactly (KAFKA-19522's recipe needs an ISR of one)
    min_insync_replicas: int | None = None
    #: at least this many log dirs per broker (one may fail while the broker lives)
    log_dirs: int | None = None
    #: whether the run shortens Kafka's session and ISR-lag timeouts, as the scripted
    #: scenarios whose waits wait them out do (ScenarioTimings); None: yes
    short_kafka_timeouts: bool | None = None
    #: workloads the run must drive (`["txn"]`: transactional producers, whose
    #: coordinator a step may act on); set to the default workloads plus these
    workloads: tuple[str, ...] | None = None
    #: the topic's unclean.leader.election.enable: true, false, or WITH_ELR_OFF (on
    #: exactly when the run's ELR is off)
    unclean_leader_election: bool | str | None = None

    @classmethod
    def from_table(cls, raw: Any, where: str) -> Needs:
        """A file's [needs] table, checked (BadInput naming `where` and the field)."""
        if not isinstance(raw, dict):
            raise BadInput(f"{where}: `needs` must be a table ([needs])")
        known = (*NEEDS_RANGES, *_FLAGS, "workloads", "unclean_leader_election")
        fields = dict(raw)
        for key, value in raw.items():
            if key not in known:
                raise BadInput(f"{where}: [needs] has no field {str(key)[:40]!r}; known: "
                               f"{', '.join(known)}")
            if key in _FLAGS:
                if not isinstance(value, bool):
                    raise BadInput(f"{where}: [needs] {key}: {value!r:.40} is not true or "
                                   "false")
            elif key == "workloads":
                fields[key] = _workloads(value, where)
            elif key == "unclean_leader_election":
                if not isinstance(value, bool) and value != WITH_ELR_OFF:
                    raise BadInput(f"{where}: [needs] {key}: {value!r:.40} is not true, false "
                                   f"or {WITH_ELR_OFF!r} (on exactly when ELR is off)")
            else:
                low, high = NEEDS_RANGES[key]
                if not isinstance(value, int) or isinstance(value, bool) or \
                        not low <= value <= high:
                    raise BadInput(f"{where}: [needs] {key}: {value!r:.40} is not an integer "
                                   f"{low}..{high}")
        return cls(**fields)

    def settings(self) -> tuple[Setting, ...]:
        """The config values the run takes unless its user chose them."""
        paths = {"brokers": "cluster.brokers", "log_dirs": "cluster.log_dirs",
                 "min_insync_replicas": "topic.min_insync_replicas"}
        chosen = {path: getattr(self, key) for key, path in paths.items()}
        fixed = [_fixed(path, value) for path, value in chosen.items() if value is not None]
        if self.workloads is not None:
            fixed.append(_fixed("workload.workloads", self.run_workloads))
        unclean = self.unclean_leader_election
        if isinstance(unclean, bool):
            fixed.append(_fixed("topic.unclean_leader_election", unclean))
        elif unclean is not None:  # on exactly when the run's ELR is off
            fixed.append(Setting("topic.unclean_leader_election",
                                 follows=lambda sections: not sections["cluster"].elr))
        return tuple(fixed)

    @property
    def run_workloads(self) -> tuple[str, ...]:
        """What the run drives unless --workload says: the default workloads and these,
        in WORKLOADS' order."""
        wanted = {*WorkloadConfig().workloads, *(self.workloads or ())}
        return tuple(w for w in WORKLOADS if w in wanted)

    def unclean_for(self, elr: bool) -> bool | None:
        """The unclean leader election it needs with ELR on or off (None: any)."""
        if self.unclean_leader_election == WITH_ELR_OFF:
            return not elr
        return self.unclean_leader_election  # type: ignore[return-value]

    def refuse(self, path: str, brokers: int, log_dirs: int,
               min_insync_replicas: Sequence[int], workloads: Sequence[str] | None = None,
               elr: bool = True, unclean_leader_election: Sequence[bool] = (),
               flag: str = "--schedule") -> None:
        """BadInput when the run's cluster is not what the schedule needs (`flag`: how
        the run named it, --schedule FILE or --nemesis SCENARIO)."""
        flags = []
        if self.brokers is not None and brokers < self.brokers:
            flags.append(f"--brokers {self.brokers} (or more)")
        if self.min_insync_replicas is not None and any(
                m != self.min_insync_replicas for m in min_insync_replicas):
            flags.append(f"--min-insync-replicas {self.min_insync_replicas}")
        if self.log_dirs is not None and log_dirs < self.log_dirs:
            flags.append(f"cluster.log_dirs = {self.log_dirs} (or more)")
        if self.workloads and workloads is not None and \
                not set(self.workloads) <= set(workloads):
            flags.append(f"--workload with {','.join(self.workloads)} (e.g. --workload "
                         f"{','.join(self.run_workloads)})")
        unclean = self.unclean_for(elr)
        if unclean is not None and any(u != unclean for u in unclean_leader_election):
            said = "on" if unclean else "off"
            when = f" with --elr {'on' if elr else 'off'}" \
                if self.unclean_leader_election == WITH_ELR_OFF else ""
            flags.append(f"--unclean-leader-election {said}{when}")
        if flags:
            raise BadInput(f"{flag} {path} needs {', '.join(flags)} ([needs]); the run "
                           "chose otherwise")


def _workloads(value: Any, where: str) -> tuple[str, ...]:
    """A [needs] workloads list: names of WORKLOADS, each once."""
    if not isinstance(value, list) or not value or not all(
            isinstance(v, str) and v in WORKLOADS for v in value) or \
            len(set(value)) != len(value):
        raise BadInput(f"{where}: [needs] workloads: {value!r:.60} is not a list of "
                       f"workloads, each once, of {', '.join(WORKLOADS)}")
    return tuple(value)


def _fixed(path: str, value: Any) -> Setting:
    """A Setting whose value is `value` whatever the run's config says."""
    return Setting(path, lambda _run: value)
