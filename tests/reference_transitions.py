"""The reference checker's rules over two consecutive observations of a partition
(tests/reference_checker.py), written from shared/HISTORY.md's rows
`elr-member-dropped` and `election-outside-elr` with docs/CHECKING.md's
readings: one pass over each partition's observations in history order.

No import of the checkers package: it must stay an independent implementation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

ELR_FEATURE = "eligible.leader.replicas.version"
UNCLEAN_SHUTDOWNS = ("kill", "page-cache-loss", "disk-fault")
SHUTDOWNS = (*UNCLEAN_SHUTDOWNS, "stop")
#: "no min-isr-change, feature-change or reassign fault between them" (a
#: reassignment's end is part of the reassignment).
ADMIN = ("min-isr-change", "feature-change", "reassign", "reassign-end")


def reference_transitions(faults: list, observes: list[tuple[int, dict]], test: dict | None,
                          min_isr_of: Callable[[str], int],
                          broker_of: Callable[[str], int | None]) -> tuple[dict, dict]:
    """({"elr-member-dropped": n, "election-outside-elr": n} found, the same names
    -> pairs judged). faults: the reference's Fault objects; observes: (position,
    line) in history order."""
    happened = [f for f in faults if f.status in ("ok", "info")]
    elr_on = (test or {}).get("elr_enabled", True) is not False
    topics = (test or {}).get("topics") or {}

    def unclean_election(topic: str) -> bool:
        return (topics.get(topic) or {}).get("unclean_leader_election") is True

    def in_force(f) -> tuple[int, float]:
        return f.begin, (f.position if f.completed else float("inf"))

    spans = [in_force(f) for f in happened if f.fault in ADMIN]
    # per broker: its shutdowns at the positions they sit at
    downs: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for f in happened:
        if f.fault in SHUTDOWNS:
            for node in f.nodes:
                b = broker_of(node)
                if b is not None:
                    downs[b].append((f.position, f.fault))

    def last_shutdown_unclean(b: int, position: int) -> bool:
        before = [(at, kind) for at, kind in downs.get(b, []) if at < position]
        return bool(before) and max(before)[1] in UNCLEAN_SHUTDOWNS

    def low(obs: dict) -> int:
        own = obs.get("min_isr")
        return min_isr_of(obs["topic"]) if own is None else own

    def on(obs: dict) -> bool:
        level = obs.get("elr_feature")
        return elr_on if level is None else level >= 1

    found = {"elr-member-dropped": 0, "election-outside-elr": 0}
    judged = dict.fromkeys(found, 0)
    last: dict[tuple[str, int], tuple[int, dict]] = {}
    for position, o in observes:
        key = (o["topic"], o["partition"])
        previous, last[key] = last.get(key), (position, o)
        if previous is None:
            continue
        at, p = previous
        if not (on(p) and on(o) and low(p) == low(o)):
            continue
        if p.get("replicas") is not None and o.get("replicas") is not None \
                and set(p["replicas"]) != set(o["replicas"]):
            continue
        if unclean_election(o["topic"]):
            continue
        if any(begin < position and end > at for begin, end in spans):
            continue
        lists = (p.get("isr"), p.get("elr"), o.get("isr"), o.get("elr"))
        if all(x is not None for x in lists):
            judged["elr-member-dropped"] += 1
            now = set(o["isr"]) | set(o["elr"])
            if len(now) < low(o):
                for b in (set(p["isr"]) | set(p["elr"])) - now:
                    if not last_shutdown_unclean(b, position):
                        found["elr-member-dropped"] += 1
        if (p["leader"] == -1 and p.get("isr") == [] and p.get("elr")
                and o["leader"] >= 0 and o["leader_epoch"] == p["leader_epoch"] + 1):
            judged["election-outside-elr"] += 1
            if o["leader"] not in p["elr"] and any(
                    not last_shutdown_unclean(m, position) for m in p["elr"]):
                found["election-outside-elr"] += 1
    return found, judged
