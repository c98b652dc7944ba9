"""The KIP-966 states section: which states the run drove a partition into, as
the checker counted them (results.json's `coverage`), each first example linked
to its row in the timeline. A state not reached is highlighted: the run never
tested what KIP-966 does there, whatever its verdict."""

from __future__ import annotations

from typing import Any

from elr_harness.core.history import listed_states
from elr_harness.report.checked_tables import NS
from elr_harness.report.html import Safe, h, join, not_available, table, tag
from elr_harness.report.report_inputs import ReportInputs
from elr_harness.report.timeline import op_anchor, shown_observations

#: What each state means, for a reader (docs/CHECKING.md has the exact rules).
STATE_TEXT = {
    "isr-below-min-isr": "ISR below min ISR",
    "elr-not-empty": "ELR not empty",
    "leaderless-with-elr": "no leader, ELR not empty",
    "elected-from-elr": "a leader elected from the ELR (the ISR was empty)",
    "last-known-elr-not-empty": "LastKnownELR not empty",
    "unclean-shutdown-of-elr-member": "an unclean shutdown (kill -9, power loss) of an ELR "
                                      "member",
    "leaderless-with-unclean-replica-unfenced": "no leader while a replica that restarted "
                                                "uncleanly is unfenced and every other ELR "
                                                "member is away: KIP-966 must not elect it",
    "min-isr-change-with-elr": "a min ISR change to at most the ISR's size while ELR is "
                               "not empty",
    "controller-failover-with-elr": "a controller failover while ELR is not empty",
    "reassign-while-below-min-isr": "a reassignment while the ISR is below min ISR",
    "disk-fault-of-isr-or-elr-member": "a disk fault of an ISR or ELR member",
    "elr-feature-change-with-elr": "the ELR feature changed while ELR is not empty",
    "elr-feature-change-while-leaderless": "the ELR feature changed while a partition had "
                                           "no leader",
    "txn-coordinator-failover-with-open-txn": "a transaction coordinator moved while a "
                                              "transaction was open",
    "leader-change-between-commit-and-marker": "a partition's leader changed between a "
                                               "commit call and its marker",
    "internal-topic-with-elr": "ELR not empty on __transaction_state or __consumer_offsets",
    "lso-below-hwm-beyond-txn-timeout": "an LSO held below the high watermark past the "
                                        "transaction timeout",
}


def coverage_states(coverage: dict[str, Any]) -> list[str]:
    """The contract's states in its order (core.history.listed_states)."""
    return listed_states(coverage)


def _link(example: Any, inputs: ReportInputs, shown: set[int]) -> object:
    """The example's index, linked to its row where the timeline shows one."""
    if type(example) is not int:
        return ""
    target = None
    if example in shown:
        target = example
    else:
        for band in inputs.bands:
            if example in (band.start_index, band.end_index):
                target = band.start_index
                break
    if target is None:
        return str(example)
    return Safe(f'<a href="#{h(op_anchor(target))}">op {example}</a>')


def coverage_section(inputs: ReportInputs) -> Safe:
    results = inputs.run.results
    if results is None:
        return not_available("KIP-966 states", inputs.run.results_problem or "no results.json")
    coverage = results.get("coverage")
    if not isinstance(coverage, dict):
        return not_available("KIP-966 states", "results.json has no coverage (an older "
                             "checker wrote it: run `harness check` on the run again).")
    shown = shown_observations(inputs)
    aims = aimed_rounds(inputs)
    rows, classes = [], []
    for state in coverage_states(coverage):
        entry = coverage.get(state)
        entry = entry if isinstance(entry, dict) else {}
        count, first = entry.get("count"), entry.get("first_time")
        row = [state, STATE_TEXT.get(state, ""), "?" if count is None else count,
               f"{first / NS:.3f}" if isinstance(first, int) else "",
               _link(entry.get("example"), inputs, shown)]
        rows.append([*row, len(aims.get(state, ()))] if aims else row)
        classes.append("unreached" if count == 0 else None)
    reached = sum(1 for c in classes if c is None)
    intro = tag("p", f"{reached} of {len(rows)} KIP-966 states reached, as the checker "
                     "judged them from the observe and fault lines (docs/CHECKING.md, "
                     "KIP-966 state coverage). A highlighted state was never reached: this "
                     "run tested nothing of what KIP-966 does there."
                + (" A guided run's faults say which state each round aimed at (their "
                   "detail's aim): a state aimed at and not reached is a round that did "
                   "not get there." if aims else ""), class_="muted")
    headers = ["state", "what", "count", "first (s)", "example"]
    return join([intro, table([*headers, "rounds aimed at it"] if aims else headers, rows,
                              row_classes=classes), judged_table(results.get("judged"))])


#: What each rule over pairs of observations judged, for a reader.
PAIR_TEXT = {
    "elr-member-dropped": ("pairs of consecutive observations judged (ELR on, same min ISR "
                           "and replicas, no admin change between)"),
    "election-outside-elr": "elections out of a leaderless partition with ELR members judged",
}


def judged_table(judged: Any) -> Safe:
    """How much the rules over pairs of observations had to judge (results.json's
    `judged`): a rule that judged nothing found nothing for that reason. An older
    checker's results have no such section."""
    if not isinstance(judged, dict) or not judged:
        return Safe("")
    rows, classes = [], []
    for name in sorted(judged):
        entry = judged[name] if isinstance(judged[name], dict) else {}
        pairs, found = entry.get("pairs"), entry.get("found")
        rows.append([name, PAIR_TEXT.get(name, ""), "?" if pairs is None else pairs,
                     "?" if found is None else found])
        classes.append("unreached" if pairs == 0 else None)
    intro = tag("p", "KIP-966's rules over two consecutive observations of a partition "
                     "(docs/CHECKING.md, pairs of observations): how many they judged. A "
                     "highlighted rule had nothing to judge in this run.", class_="muted")
    return join([intro, table(["rule", "what it judged", "judged", "found"], rows,
                              row_classes=classes)])


def aimed_rounds(inputs: ReportInputs) -> dict[str, set[Any]]:
    """Per state, the guided rounds whose faults name it as their aim (as recorded)."""
    aims: dict[str, set[Any]] = {}
    for event in inputs.tables.fault_events:
        aim, round_number = event.detail.get("aim"), event.detail.get("guided")
        if isinstance(aim, str) and isinstance(round_number, int):
            aims.setdefault(aim, set()).add(round_number)
    return aims
