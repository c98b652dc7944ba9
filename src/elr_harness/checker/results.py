"""From anomaly counts and examples to results.json's verdict, reason and sections.

Pure Python over small inputs (counts per anomaly/acks/partition, <= 20
examples per anomaly, per-partition facts), so the verdict rules of
shared/HISTORY.md are tested without Spark.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from elr_harness.checker.testinfo import RunInfo
from elr_harness.core.anomalies import (
    ALWAYS_BAD,
    BY_ACKS,
    DUPLICATE,
    ELECTION_OUTSIDE_ELR,
    ELR_MEMBER_DROPPED,
    ELR_MEMBER_UNCLEAN,
    LOST_WRITE,
    TXN_ANOMALIES,
    TXN_BUDGETED,
    UNSEEN,
)
from elr_harness.core.history import (
    ACKS_LEVELS,
    COVERAGE_STATES,
    PROTOCOLS,
    TXN_COVERAGE_STATES,
)

#: acks levels as the history spells them (the contract's)
ACKS = ACKS_LEVELS
#: The rules judged over pairs of observations, whose judged pairs results.json
#: counts (`judged`): a rule with nothing to judge found nothing for that reason.
#: elr-member-unclean's `pairs` are the observations it judged (a broker's first
#: unfenced one after its unclean restart).
PAIR_RULES = (ELR_MEMBER_DROPPED, ELECTION_OUTSIDE_ELR, ELR_MEMBER_UNCLEAN)


@dataclass
class PartitionFacts:
    """What the checks found per topic-partition."""

    complete: bool
    last_final_poll: int | None
    #: the losses on its replicas in the full-ISR window its budget is judged by
    page_cache_losses: int = 0
    #: the highest offset among its final records
    final_top: int | None = None
    #: why its final read is incomplete ("" when complete)
    why: str = ""
    #: the lowest min ISR in effect in that window (None: test.json's)
    min_insync_replicas: int | None = None
    #: losses on its replicas while the ELR feature was off
    unprotected_losses: int = 0
    #: contract v4: its read_committed final read is complete (None: none was made),
    #: and the final LSO that read reached
    rc_complete: bool | None = None
    final_lso: int | None = None


@dataclass
class Findings:
    """Everything the verdict needs, all small."""

    counts: Counter  # (name, acks, topic, partition) -> n
    examples: dict[str, list[dict]]
    partitions: dict[tuple[str, int], PartitionFacts]
    ops: dict = field(default_factory=dict)
    faults: dict = field(default_factory=dict)
    history_lines: int = 0
    truncated_lines: int = 0
    any_final_reads: bool = False
    #: what the checks' tables held, counted from them (checker/facts.py)
    checked: dict = field(default_factory=dict)
    #: lost writes per (acks, second of the run)
    lost_over_time: Counter = field(default_factory=Counter)
    #: per (topic, partition): the ISR's (expansions, shrinks, nanoseconds) below
    #: min ISR (observations.isr_churn)
    isr_churn: dict = field(default_factory=dict)
    #: per KIP-966 state reached: (count, first index, first time) (checker/coverage.py)
    coverage: dict = field(default_factory=dict)
    #: per rule over pairs of observations: the pairs it judged (checker/transitions.py)
    judged: dict = field(default_factory=dict)
    #: contract v4: the transactions' anomalies by (name, topic, partition, protocol,
    #: scope: the JSON list of partitions that must all be excused, or None for its own)
    txn_counts: Counter = field(default_factory=Counter)
    #: the transactions by client and protocol: committed, aborted on purpose, failed,
    #: unknown (checker/transactions.tally)
    transactions: list = field(default_factory=list)


def tp_key(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def guarantee(findings: Findings, info: RunInfo) -> dict[str, dict]:
    """Per partition: did it stay within KIP-966's fault budget, and what was lost."""
    lost_all = Counter()
    for (name, acks, topic, part), n in findings.counts.items():
        if name == LOST_WRITE and acks == "all":
            lost_all[(topic, part)] += n
    out = {}
    for (topic, part), facts in sorted(findings.partitions.items()):
        configured = info.topic(topic).min_insync_replicas
        min_isr = configured if facts.min_insync_replicas is None else facts.min_insync_replicas
        budget = min_isr - 1
        losses, off = facts.page_cache_losses, facts.unprotected_losses
        within = losses <= budget and not off
        lost = lost_all[(topic, part)]
        lowered = (f" (min ISR {min_isr} in effect at its lowest, not {configured})"
                   if min_isr != configured else "")
        if off:
            reason = (f"{off} loss(es) on its replicas while the ELR feature was off: KIP-966's "
                      "protection did not apply, acks=all losses are expected, not violations")
        elif within:
            reason = (f"{losses} page-cache loss(es) on its replicas between full ISRs, within "
                      f"the budget of {budget}{lowered}: acks=all data must survive")
        else:
            reason = (f"{losses} page-cache losses on its replicas between full ISRs exceed "
                      f"the budget of {budget}{lowered}: acks=all losses are expected, not "
                      "violations")
        reason += f"; {lost} acks=all write(s) lost" if lost else ""
        out[tp_key(topic, part)] = {"within_budget": within, "page_cache_losses": losses,
                                    "budget": budget, "min_insync_replicas": min_isr,
                                    "unprotected_losses": off, "acks_all_lost": lost,
                                    "reason": reason}
    return out


def _by_partition(counts: Counter, name: str) -> dict[str, dict[str, int]]:
    """{"topic-partition": {acks: n}} of one by-acks anomaly."""
    out: dict[str, dict[str, int]] = {}
    for (n, acks, topic, part), count in sorted(counts.items(), key=str):
        if n == name and count:
            row = out.setdefault(tp_key(topic, part), dict.fromkeys(ACKS, 0))
            row[acks] = row.get(acks, 0) + count
    return dict(sorted(out.items()))


def isr_churn(churn: dict) -> dict[str, dict]:
    """Per partition that was below min ISR: its ISR's expansions and shrinks
    meanwhile, the seconds below, and both per minute below (null without time)."""
    out = {}
    for (topic, part), (expansions, shrinks, below_ns) in sorted(churn.items()):
        seconds = round(below_ns / 1e9, 3)
        minutes = seconds / 60

        def rate(n: int, minutes: float = minutes) -> float | None:
            return round(n / minutes, 2) if minutes > 0 else None

        out[tp_key(topic, part)] = {
            "expansions": expansions, "shrinks": shrinks, "seconds_below": seconds,
            "expansions_per_minute": rate(expansions), "shrinks_per_minute": rate(shrinks)}
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def coverage(reached: dict, transactions: bool = False) -> dict[str, dict]:
    """results.json's `coverage`: every state of the contract's list, in its order,
    with its count, first time and example (a state not reached: 0, null, null);
    with transactions, the transaction states after them."""
    out = {}
    for state in (*COVERAGE_STATES, *(TXN_COVERAGE_STATES if transactions else ())):
        n, index, time = reached.get(state, (0, None, None))
        out[state] = {"count": n, "first_time": time, "example": index}
    return out


def txn_bad(findings: Findings, info: RunInfo, guar: dict[str, dict]) -> dict[str, int]:
    """Of the transactions' anomalies that are bad within the fault budget (HISTORY.md
    v4), how many count as bad: those with a partition they need (their own, or for
    txn-torn every partition lacking a value) that stayed within the budget and has
    unclean leader election off. A finding is excused when any of them is not."""
    def excused(name: str) -> bool:
        topic = name.rsplit("-", 1)[0]
        kept = guar.get(name, {}).get("within_budget", True)
        return not kept or info.topic(topic).unclean_leader_election

    bad: Counter = Counter()
    for (name, topic, part, _protocol, scope), n in findings.txn_counts.items():
        if name not in TXN_BUDGETED:
            continue
        needs = json.loads(scope) if scope else [tp_key(topic, part)]
        if not any(excused(key) for key in needs):
            bad[name] += n
    return bad


def assemble(findings: Findings, info: RunInfo, checker_seconds: float) -> dict:
    """The results.json dict: verdict, reason, anomalies, stats, guarantee, test."""
    totals: Counter = Counter()
    by_acks: dict[str, Counter] = {n: Counter() for n in BY_ACKS}
    for (name, acks, _topic, _part), n in findings.counts.items():
        totals[name] += n
        if name in by_acks:
            by_acks[name][acks] += n
    guar = guarantee(findings, info)
    bad: list[str] = []
    lost_in_budget = sum(g["acks_all_lost"] for g in guar.values() if g["within_budget"])
    if lost_in_budget:
        bad.append(LOST_WRITE)
    if totals[DUPLICATE] and info.idempotent:
        bad.append(DUPLICATE)
    bad += [n for n in ALWAYS_BAD if totals[n]]
    txn_bad_counts = txn_bad(findings, info, guar)
    bad += [n for n in TXN_BUDGETED if txn_bad_counts[n]]
    bad.sort()

    bad_counts = Counter({name: totals[name] for name in ALWAYS_BAD})
    bad_counts[LOST_WRITE] = lost_in_budget
    bad_counts[DUPLICATE] = totals[DUPLICATE] if info.idempotent else 0
    bad_counts.update(txn_bad_counts)
    anomalies = {}
    for name in sorted(n for n in totals if totals[n]):
        entry: dict = {"count": totals[name], "bad": bad_counts[name]}
        if name in by_acks:
            entry["by_acks"] = {a: by_acks[name][a] for a in ACKS}
            entry["by_partition"] = _by_partition(findings.counts, name)
        if name == LOST_WRITE:
            # the report's timeline: [second of the run, lost writes], by acks level
            entry["over_time"] = {a: sorted([s, n] for (acks, s), n in
                                            findings.lost_over_time.items() if acks == a)
                                  for a in ACKS}
        if name in TXN_ANOMALIES:
            entry["by_protocol"] = {proto: sum(n for (nm, _t, _p, pr, _s), n
                                               in findings.txn_counts.items()
                                               if nm == name and pr == proto)
                                    for proto in PROTOCOLS}
        entry["examples"] = findings.examples.get(name, [])
        anomalies[name] = entry

    incomplete = sorted(tp_key(t, p) for (t, p), f in findings.partitions.items()
                        if not f.complete)
    rc_incomplete = sorted(tp_key(t, p) for (t, p), f in findings.partitions.items()
                           if f.rc_complete is False)
    complete = bool(findings.partitions) and not incomplete and findings.any_final_reads
    sends_ok = {a: findings.ops.get("send", {}).get("ok", {}).get(a, 0) for a in ACKS}
    loss_rates = {a: (by_acks[LOST_WRITE][a] / sends_ok[a] if sends_ok[a] else 0.0)
                  for a in ACKS}
    valid, reason = _verdict(findings, totals, by_acks, bad, guar, incomplete, lost_in_budget,
                             rc_incomplete, bad_counts)
    final_lso = {tp_key(t, p): f.final_lso for (t, p), f in sorted(findings.partitions.items())
                 if f.final_lso is not None}
    # contract v4: the read_committed final reads that did not reach the LSO, and each
    # partition's final LSO (where its read_committed read is complete); with the
    # transactions' tally only in a history that has transactions or read_committed
    # reads, so that a v3 history's results.json is what it always was
    v4_stats = ({"read_committed_incomplete": rc_incomplete, "final_lso": final_lso}
                if findings.transactions or rc_incomplete or final_lso else {})
    return {
        "valid": valid,
        "reason": reason,
        "anomaly_types": sorted(anomalies),
        "bad_anomaly_types": bad,
        "anomalies": anomalies,
        "checked": findings.checked,
        "stats": {
            "ops": findings.ops,
            "loss_rates": loss_rates,
            "sends_ok": sends_ok,
            "final_reads_complete": complete,
            "incomplete_partitions": incomplete,
            "incomplete_why": {tp_key(t, p): f.why for (t, p), f in
                               sorted(findings.partitions.items()) if not f.complete},
            "truncated_lines": findings.truncated_lines,
            "history_lines": findings.history_lines,
            "faults": findings.faults,
            "isr_churn_below_min_isr": isr_churn(findings.isr_churn),
            "checker_seconds": round(checker_seconds, 3),
            **v4_stats,
        },
        **({"transactions": findings.transactions} if v4_stats else {}),
        "guarantee": guar,
        "coverage": coverage(findings.coverage, bool(findings.transactions)),
        "judged": {name: {"pairs": findings.judged.get(name, 0), "found": totals[name]}
                   for name in PAIR_RULES},
        "test": {"elr_enabled": info.elr_enabled, "kafka_version": info.kafka_version,
                 "seed": info.seed},
    }


def _verdict(findings: Findings, totals: Counter, by_acks: dict[str, Counter], bad: list[str],
             guar: dict, incomplete: list[str], lost_in_budget: int,
             rc_incomplete: list[str] | None = None, bad_counts: Counter | None = None) -> tuple:
    """(valid, reason) by HISTORY.md: false if anything bad, else unknown, else true."""
    if bad:
        parts = []
        for name in bad:
            if name == LOST_WRITE:
                parts.append(f"{lost_in_budget} acks=all lost-write within the fault budget")
            elif name in TXN_BUDGETED and bad_counts is not None:
                parts.append(f"{bad_counts[name]} {name} within the fault budget")
            else:
                parts.append(f"{totals[name]} {name}")
        return False, "invalid: " + ", ".join(parts)
    if findings.history_lines - findings.truncated_lines <= 0:
        return "unknown", "the history is empty: nothing was recorded, nothing can be said"
    unknown = []
    if not findings.any_final_reads:
        unknown.append("the history has no final reads")
    elif incomplete:
        shown = ", ".join(incomplete[:5]) + (" ..." if len(incomplete) > 5 else "")
        unknown.append(f"final reads incomplete for {shown}")
    if by_acks[UNSEEN]["all"]:
        unknown.append(f"{_plural(by_acks['unseen']['all'], 'acks=all write')} unseen")
    if findings.truncated_lines:
        unknown.append("the history was cut short (last line truncated)")
    if rc_incomplete:
        shown = ", ".join(rc_incomplete[:5]) + (" ..." if len(rc_incomplete) > 5 else "")
        unknown.append(f"read_committed final reads incomplete for {shown} (transactions "
                       "left unjudged)")
    if not findings.partitions and findings.any_final_reads:
        unknown.append("no partition was written or read")
    if unknown:
        return "unknown", "unknown: " + "; ".join(unknown)
    notes = []
    expected_loss = sum(g["acks_all_lost"] for g in guar.values() if not g["within_budget"])
    if expected_loss:
        notes.append(f"{expected_loss} acks=all lost-write beyond the fault budget")
    for acks in ("1", "0"):
        if by_acks[LOST_WRITE][acks]:
            notes.append(f"{by_acks['lost-write'][acks]} acks={acks} lost-write")
    if totals[DUPLICATE]:
        notes.append(f"{_plural(totals['duplicate'], 'duplicate')} (producers not idempotent)")
    for name in TXN_BUDGETED:
        excused = totals[name] - (bad_counts or Counter())[name]
        if excused:
            notes.append(f"{excused} {name} (beyond the fault budget, or unclean leader "
                         "election on)")
    reason = (f"valid: no bad anomaly, final reads complete for "
              f"{_plural(len(findings.partitions), 'partition')}")
    if notes:
        reason += "; reported, not bad: " + ", ".join(notes)
    return True, reason
