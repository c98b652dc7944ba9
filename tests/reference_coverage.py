"""The reference checker's KIP-966 state coverage (tests/reference_checker.py),
written from docs/CHECKING.md ("KIP-966 state coverage"): one pass over the
observations and the nemesis's faults in history order, per line.

No import of the checkers package: it must stay an independent implementation.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable

TP = tuple[str, int]
ELR_FEATURE = "eligible.leader.replicas.version"
STATES = ("isr-below-min-isr", "elr-not-empty", "leaderless-with-elr", "elected-from-elr",
          "last-known-elr-not-empty", "unclean-shutdown-of-elr-member",
          "leaderless-with-unclean-replica-unfenced", "min-isr-change-with-elr",
          "controller-failover-with-elr", "reassign-while-below-min-isr",
          "disk-fault-of-isr-or-elr-member", "elr-feature-change-with-elr",
          "elr-feature-change-while-leaderless")
UNCLEAN = ("kill", "page-cache-loss")


def _members(value) -> set[int]:
    return set(value or [])


def reference_coverage(faults: list, observes: list[tuple[int, dict]],
                       min_isr_of: Callable[[str], int],
                       broker_of: Callable[[str], int | None]) -> dict[str, dict]:
    """Every state with its count, first time and example (docs/CHECKING.md).

    faults: the reference's Fault objects (fault, nodes, status, detail; begin:
    its invoke's position; position, index, time: the line it sits at, its
    completion's); observes: (position, line); positions are history order."""
    # per state: {position: (index, time)} of the lines that reached it
    hits: dict[str, dict[int, tuple[int, int | None]]] = {s: {} for s in STATES}
    happened = [f for f in faults if f.status in ("ok", "info")]

    def brokers(fault) -> set[int]:
        return {b for b in (broker_of(n) for n in fault.nodes) if b is not None}

    def low(obs: dict) -> int:
        own = obs.get("min_isr")
        return min_isr_of(obs["topic"]) if own is None else own

    def below(obs: dict) -> bool:
        return obs.get("isr") is not None and len(obs["isr"]) < low(obs)

    # per broker: its downs and starts (position, kind)
    events: dict[int, list[tuple[int, str]]] = {}
    for f in sorted(happened, key=lambda f: f.begin):
        if f.fault in (*UNCLEAN, "stop", "start"):
            for b in brokers(f):
                events.setdefault(b, []).append((f.begin, f.fault))

    def restarted_uncleanly(b: int, position: int) -> int | None:
        """The first start of b after its last shutdown before `position`, when that
        shutdown was unclean and the start came before `position`."""
        last_down, start = None, None
        for at, kind in events.get(b, []):
            if at >= position:
                break
            if kind == "start":
                if start is None:
                    start = at
            else:
                last_down, start = kind, None
        return start if last_down in UNCLEAN else None

    previous: dict[TP, dict] = {}
    seen: list[tuple[int, dict]] = []
    #: (broker, partition) -> the position of the last observation whose ISR held it
    last_in_isr: dict[tuple[int, TP], int] = {}
    for position, obs in sorted(observes, key=lambda o: o[0]):
        key = (obs["topic"], obs["partition"])
        elr, leader = _members(obs.get("elr")), obs["leader"]
        at = (obs["index"], obs["time"])
        if below(obs):
            hits["isr-below-min-isr"][position] = at
        if elr:
            hits["elr-not-empty"][position] = at
            if leader == -1:
                hits["leaderless-with-elr"][position] = at
        if obs.get("last_known_elr"):
            hits["last-known-elr-not-empty"][position] = at
        prev = previous.get(key)
        if (prev is not None and leader >= 0 and prev.get("isr") == []
                and leader in _members(prev.get("elr"))):
            hits["elected-from-elr"][position] = at
        fenced = obs.get("fenced")
        if leader == -1 and fenced is not None:
            for b in events:
                start = restarted_uncleanly(b, position)
                if start is None or b in fenced:
                    continue
                if obs.get("replicas") and b not in obs["replicas"]:
                    continue
                if last_in_isr.get((b, key), -1) > start or b in _members(obs.get("isr")):
                    continue
                if all(m == b or m in fenced for m in elr):
                    hits["leaderless-with-unclean-replica-unfenced"][position] = at
                    break
        previous[key] = obs
        seen.append((position, obs))
        for b in _members(obs.get("isr")):
            last_in_isr[(b, key)] = position

    # each partition's last observation before each fault's invoke, in one pass
    states_at: dict[int, dict[TP, dict]] = {}
    last: dict[TP, dict] = {}
    marks = sorted([(p, 0, o) for p, o in seen] + [(f.begin, 1, None) for f in happened],
                   key=lambda m: (m[0], m[1]))
    for p, kind, obs in marks:
        if kind == 0:
            last[(obs["topic"], obs["partition"])] = obs
        else:
            states_at[p] = dict(last)
    positions = [p for p, _ in seen]

    for f in happened:
        states = states_at[f.begin]
        mine = brokers(f)
        state = None
        if f.fault in UNCLEAN and mine:
            state = "unclean-shutdown-of-elr-member"
            reached = any(mine & _members(s.get("elr")) for s in states.values())
            for b in mine:  # or in an ELR observed before the next start of its node
                later = [at for at, kind in events[b] if at > f.begin and kind == "start"]
                until = min(later) if later else None
                after = seen[bisect_right(positions, f.begin):
                             bisect_left(positions, until) if until is not None else len(seen)]
                reached = reached or any(b in _members(o.get("elr")) for _, o in after)
        elif f.fault == "min-isr-change":
            # KIP-966: "if the new min ISR <= current ISR, the ELR will be removed"
            state = "min-isr-change-with-elr"
            named, to = f.detail.get("topic"), f.detail.get("to")
            reached = type(to) is int and any(
                s.get("elr") and s.get("isr") is not None and to <= len(s["isr"])
                for key, s in states.items() if not isinstance(named, str) or key[0] == named)
        elif f.fault in ("controller-kill", "controller-partition"):
            state = "controller-failover-with-elr"
            reached = any(s.get("elr") for s in states.values())
        elif f.fault == "reassign":
            state = "reassign-while-below-min-isr"
            topic, part = f.detail.get("topic"), f.detail.get("partition")
            scoped = isinstance(topic, str) and type(part) is int
            reached = any(below(s) for key, s in states.items()
                          if not scoped or key == (topic, part))
        elif f.fault == "disk-fault" and mine:
            state = "disk-fault-of-isr-or-elr-member"
            reached = any(mine & (_members(s.get("isr")) | _members(s.get("elr")))
                          for s in states.values())
        elif f.fault == "feature-change" and f.detail.get("feature") == ELR_FEATURE:
            state = "elr-feature-change-with-elr"
            reached = any(s.get("elr") for s in states.values())
            if any(s["leader"] == -1 for s in states.values()):
                hits["elr-feature-change-while-leaderless"][f.position] = (f.index, f.time)
        else:
            reached = False
        if state is not None and reached:
            hits[state][f.position] = (f.index, f.time)

    return _listed(hits, STATES)


def _listed(hits: dict[str, dict[int, tuple[int, int | None]]],
            states: tuple[str, ...]) -> dict[str, dict]:
    """Each state with its count and the first line (by position) that reached it."""
    out = {}
    for state in states:
        found = hits[state]
        index, time = found[min(found)] if found else (None, None)
        out[state] = {"count": len(found), "first_time": time, "example": index}
    return out


TXN_STATES = ("txn-coordinator-failover-with-open-txn",
              "leader-change-between-commit-and-marker", "internal-topic-with-elr",
              "lso-below-hwm-beyond-txn-timeout")
INTERNAL = ("__transaction_state", "__consumer_offsets")


def reference_txn_coverage(txns: list, observes: list[tuple[int, dict]],
                           test: dict | None) -> dict[str, dict]:
    """The transaction states (docs/CHECKING.md, "Transaction states"), for a run
    with a txn invoke. txns: the reference's Txn objects (invoke_position,
    completion_position, status, sends, offsets, end_time); observes: (position,
    line) in history order."""
    timeout = ((test or {}).get("transactions") or {}).get("transaction_timeout_ms")
    span = timeout * 1_000_000 if isinstance(timeout, int) and not isinstance(
        timeout, bool) else None
    hits: dict[str, dict[int, tuple[int, int | None]]] = {s: {} for s in TXN_STATES}
    previous: dict[TP, dict] = {}
    #: per partition, the stretch its LSO is held in: [lso, first time, reached]
    held: dict[TP, list] = {}
    for position, obs in sorted(observes, key=lambda o: o[0]):
        key = (obs["topic"], obs["partition"])
        at = (obs["index"], obs["time"])
        prev = previous.get(key)
        changed = prev is not None and prev["leader"] >= 0 and obs["leader"] != prev["leader"]
        if changed and obs["topic"] == "__transaction_state" and any(
                t.invoke_position < position
                and (t.completion_position is None or t.completion_position > position)
                for t in txns):
            hits["txn-coordinator-failover-with-open-txn"][position] = at
        before = prev.get("last_stable_offset") if prev is not None else None
        if changed and before is not None:
            for t in txns:
                if t.status not in ("ok", "info") or t.end_time is None \
                        or t.end_time > obs["time"]:
                    continue
                if any((topic, part) == key and (offset := t.offset_of(i)) is not None
                       and before <= offset for i, (topic, part, _) in enumerate(t.sends)):
                    hits["leader-change-between-commit-and-marker"][position] = at
                    break
        if obs["topic"] in INTERNAL and obs.get("elr"):
            hits["internal-topic-with-elr"][position] = at
        previous[key] = obs
        lso, hwm = obs.get("last_stable_offset"), obs.get("high_watermark")
        if span is not None and lso is not None and hwm is not None:
            stretch = held.get(key)
            if lso >= hwm:
                held.pop(key, None)
            elif stretch is None or stretch[0] != lso:
                held[key] = [lso, obs["time"], False]
            elif not stretch[2] and obs["time"] - stretch[1] > span:
                stretch[2] = True
                hits["lso-below-hwm-beyond-txn-timeout"][position] = at
    return _listed(hits, TXN_STATES)
