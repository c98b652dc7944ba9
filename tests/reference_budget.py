"""The reference checker's fault budget (tests/reference_checker.py), written from
shared/HISTORY.md ("Fault budget" and its precise rules) and docs/CHECKING.md:
one pass over the observations and the nemesis's faults in history order.

No import of the checkers package: it must stay an independent implementation.
"""

from __future__ import annotations

from collections.abc import Callable

TP = tuple[str, int]
ELR_FEATURE = "eligible.leader.replicas.version"


def _min_isr(value) -> int | None:
    """A detail's min ISR: an int (no bool) from 1 to 2^31 - 1, else nothing."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 1 <= value < 2 ** 31
    return value if ok else None


def _level(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _is_loss(fault) -> bool:
    """A page-cache loss, or a disk fault that says it dropped unflushed data."""
    return fault.fault == "page-cache-loss" or (
        fault.fault == "disk-fault" and fault.detail.get("dropped") is True)


def _full(obs: dict, replication_factor: int) -> bool:
    """The observation's ISR is back to full: it holds every replica the observation
    names (a reassignment changes them); without replicas (absent, null, empty),
    replication factor members."""
    isr, replicas = obs.get("isr") or [], obs.get("replicas")
    if replicas:
        return set(replicas) <= set(isr)
    return len(isr) >= replication_factor


def fault_budget(faults: list, observes: list[tuple[int, dict]], judged: set[TP],
                 topic_info: Callable[[str], tuple[int, int]],
                 broker_of: Callable[[str], int | None],
                 has_own_min_isr: Callable[[str], bool] = lambda topic: False
                 ) -> tuple[dict[TP, int], dict[TP, int], dict[TP, int]]:
    """Per judged partition: the losses on its replicas in the window (between
    observations of a full ISR) that came closest to its budget or went furthest
    beyond it, that window's budget (the lowest min ISR in effect in it, minus 1),
    and its losses while the ELR feature was off.

    A fault sits at its completion, or at its invoke when it never completed
    (then it counts as info); one that failed counts as nothing. faults: the
    reference's Fault objects (fault, nodes, position, status, detail);
    topic_info(topic) -> (replication factor, min ISR of test.json);
    has_own_min_isr(topic): test.json gives the topic a min ISR, so the harness
    created it with its own, which Kafka takes before the cluster default."""
    replicas: dict[TP, set[int]] = {}
    for _, obs in observes:
        members = replicas.setdefault((obs["topic"], obs["partition"]), set())
        if obs["leader"] >= 0:
            members.add(obs["leader"])
        for name in ("replicas", "isr", "elr", "last_known_elr"):
            members |= set(obs.get(name) or [])
    lowest = {topic: topic_info(topic)[1] for topic, _ in judged}
    # per partition, its windows as [losses, lowest min ISR]; the last one is open
    windows = {key: [[0, lowest[key[0]]]] for key in judged}
    unprotected = dict.fromkeys(judged, 0)
    elr_off = False
    events = [(position, "observe", obs) for position, obs in observes]
    events += [(f.position, "fault", f) for f in faults if f.status in ("ok", "info")]
    for _, kind, item in sorted(events, key=lambda e: e[0]):
        if kind == "observe":
            key = (item["topic"], item["partition"])
            if key in windows and _full(item, topic_info(key[0])[0]):
                windows[key].append([0, lowest[key[0]]])
        elif item.fault == "min-isr-change":
            named = item.detail.get("topic")
            to, was = _min_isr(item.detail.get("to")), _min_isr(item.detail.get("from"))
            for topic in lowest:
                if isinstance(named, str) and named != topic:
                    continue  # another topic's; a null topic is the cluster default's
                if not isinstance(named, str) and has_own_min_isr(topic):
                    continue  # the topic's own setting wins over the cluster default
                if item.status == "ok" and to is not None:
                    lowest[topic] = to
                elif item.status != "ok":  # may or may not have happened: both count
                    lowest[topic] = min([lowest[topic]] + [v for v in (to, was)
                                                           if v is not None])
                for key in judged:
                    if key[0] == topic:
                        windows[key][-1][1] = min(windows[key][-1][1], lowest[topic])
        elif item.fault == "feature-change" and item.detail.get("feature") == ELR_FEATURE:
            to = _level(item.detail.get("to"))
            if to == 0:
                elr_off = True
            elif to is not None and to >= 1 and item.status == "ok":
                elr_off = False
        elif _is_loss(item):
            hit = [b for b in (broker_of(node) for node in item.nodes) if b is not None]
            for key in judged:
                mine = replicas.get(key)  # None: never observed, every broker is one
                n = sum(1 for b in hit if mine is None or b in mine)
                windows[key][-1][0] += n
                if elr_off:
                    unprotected[key] += n
    worst = {key: max(ws, key=lambda w: (w[0] - (w[1] - 1), w[0]))
             for key, ws in windows.items()}
    return ({key: w[0] for key, w in worst.items()},
            {key: w[1] - 1 for key, w in worst.items()}, unprotected)
