"""Lost writes as the report shows them: the checker's, read from results.json.

The report never decides what was lost. It once recomputed lost writes from
the raw history beside the checker's, and in a real ELR-off run its plot
showed 248 acks=all losses while its banner, from the checker, showed none.
Now the plot, the tables and the banner read the same entry of results.json
(anomalies[LOST_WRITE]: by_acks, by_partition, over_time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from elr_harness.core.anomalies import LOST_WRITE
from elr_harness.core.history import ACKS_LEVELS

#: Acks levels in the order the report lists them.


@dataclass(frozen=True)
class LostWrites:
    """The checker's lost writes of one run."""

    #: acks -> [(second of the run, lost writes acknowledged in that second)]
    over_time: dict[str, list[tuple[int, int]]]
    #: "topic-partition" -> {acks: n}
    by_partition: dict[str, dict[str, int]]
    counts_by_acks: dict[str, int]
    ok_by_acks: dict[str, int]
    #: partitions whose final read was incomplete: their missing sends are unseen
    incomplete: list[str]
    #: whether results.json exists (else nothing can be said)
    checked: bool


def _ints(mapping: Any) -> dict[str, int]:
    if not isinstance(mapping, dict):
        return {}
    return {str(k): int(v) for k, v in mapping.items() if isinstance(v, int)}


def lost_writes_of(results: dict[str, Any] | None) -> LostWrites:
    """The lost-write facts of a results.json (empty ones when there is none)."""
    if not isinstance(results, dict):
        return LostWrites({}, {}, {}, {}, [], checked=False)
    anomalies = results.get("anomalies") if isinstance(results.get("anomalies"), dict) else {}
    entry = anomalies.get(LOST_WRITE) if isinstance(anomalies.get(LOST_WRITE), dict) else {}
    stats = results.get("stats") if isinstance(results.get("stats"), dict) else {}
    raw_time = entry.get("over_time") if isinstance(entry.get("over_time"), dict) else {}
    over_time = {acks: sorted((int(s), int(n)) for s, n in raw_time.get(acks) or []
                              if isinstance(s, int) and isinstance(n, int))
                 for acks in ACKS_LEVELS}
    by_partition = {str(k): _ints(v) for k, v in (entry.get("by_partition") or {}).items()}
    incomplete = [str(p) for p in stats.get("incomplete_partitions") or []]
    return LostWrites(over_time=over_time, by_partition=by_partition,
                      counts_by_acks={a: _ints(entry.get("by_acks")).get(a, 0)
                                      for a in ACKS_LEVELS},
                      ok_by_acks={a: _ints(stats.get("sends_ok")).get(a, 0)
                                  for a in ACKS_LEVELS},
                      incomplete=incomplete, checked=True)
