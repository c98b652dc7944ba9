"""The reference checker's `elr-member-unclean` (tests/reference_checker.py), written
from shared/HISTORY.md's row with docs/CHECKING.md's reading of it:

An `observe` with ELR on whose `elr` holds broker b, where b's most recent
shutdown was unclean (the last of the kill, page-cache-loss and stop faults
naming its node, taken in the order they began, is a kill or page-cache-loss
that ended ok before the observation; a disk-fault's detail never says its
process exited, so none counts), a start of that node ended ok after it, an
earlier observation of the partition after the shutdown listed b in `fenced`,
and this one is the first later observation of the partition to list b as
unfenced, with none in between showing b in the ISR. Judged only where
test.json's `observer` says `fenced_first` and `same_broker`, and no
feature-change lies between the first such start and the observation.

No import of the checkers package: it must stay an independent implementation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

SHUTDOWNS = ("kill", "page-cache-loss", "stop")
UNCLEAN = ("kill", "page-cache-loss")


def reference_unclean_registration(faults: list, observes: list[tuple[int, dict]],
                                   test: dict | None,
                                   broker_of: Callable[[str], int | None]) -> tuple[int, int]:
    """(found, judged): the observations that break the row, and those it judged.
    faults: the reference's Fault objects; observes: (position, line) in order."""
    observer = (test or {}).get("observer")
    if not (isinstance(observer, dict) and observer.get("fenced_first") is True
            and observer.get("same_broker") is True):
        return 0, 0
    elr_on = (test or {}).get("elr_enabled", True) is not False
    happened = [f for f in faults if f.status in ("ok", "info")]
    downs: dict[int, list] = defaultdict(list)
    starts: dict[int, list] = defaultdict(list)
    for f in happened:
        into = downs if f.fault in SHUTDOWNS else starts if f.fault == "start" else None
        for node in f.nodes if into is not None else ():
            b = broker_of(node)
            if b is not None:
                into[b].append(f)
    features = [(f.begin, f.position if f.completed else float("inf"))
                for f in happened if f.fault == "feature-change"]
    by_partition: dict[tuple[str, int], list[tuple[int, dict]]] = defaultdict(list)
    for position, o in observes:
        by_partition[(o["topic"], o["partition"])].append((position, o))

    def most_recent(b: int, position: int):
        began = [f for f in downs.get(b, []) if f.begin < position]
        return max(began, key=lambda f: f.begin) if began else None

    def first_start(b: int, shutdown) -> int | None:
        ended = [f.position for f in starts.get(b, []) if f.status == "ok" and f.completed
                 and f.position > shutdown.position]
        return min(ended) if ended else None

    found = judged = 0
    for lines in by_partition.values():
        for i, (position, o) in enumerate(lines):
            fenced = o.get("fenced")
            if fenced is None or o.get("elr") is None:
                continue
            level = o.get("elr_feature")
            if not (elr_on if level is None else level >= 1):
                continue
            for b in downs:  # a broker with no shutdown is never judged
                if b in fenced:
                    continue
                down = most_recent(b, position)
                if down is None or down.fault not in UNCLEAN or down.status != "ok" \
                        or not down.completed or down.position >= position:
                    continue
                start = first_start(b, down)
                if start is None or start >= position:
                    continue
                earlier = [(p, x) for p, x in lines[:i] if p > down.position]
                listed = [k for k, (_, x) in enumerate(earlier)
                          if x.get("fenced") is not None and b in x["fenced"]]
                if not listed:
                    continue
                after = earlier[listed[0] + 1:]
                if any(x.get("fenced") is not None and b not in x["fenced"] for _, x in after):
                    continue  # not the first to list b unfenced
                if any(b in (x.get("isr") or []) for _, x in after):
                    continue
                if any(begin < position and end > start for begin, end in features):
                    continue
                judged += 1
                found += b in o["elr"]
    return found, judged

