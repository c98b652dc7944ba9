"""The one anomaly table (src/elr_harness/core/anomalies.py): the contract's rows, read
by the checker, results.json, the report and the soak, and docs/CHECKING.md held to
it line by line (#51)."""

from __future__ import annotations

from pathlib import Path

import reference_checker

from elr_harness.core.anomalies import ALWAYS_BAD, ANOMALIES, BY_ACKS, NAMES, Bad

CHECKING = Path(__file__).resolve().parents[2] / "docs" / "CHECKING.md"


def test_the_table_is_the_contracts_rows_as_the_independent_oracle_lists_them():
    """tests/reference_checker.py was written from HISTORY.md alone: its names, in
    the contract's order, and which are always bad, must be the table's."""
    assert NAMES == reference_checker.ANOMALIES
    assert set(ALWAYS_BAD) == set(reference_checker.ALWAYS_BAD)
    assert BY_ACKS == ("lost-write", "unseen")
    assert {a.name: a.bad for a in ANOMALIES if a.bad is not Bad.ALWAYS} == {
        "lost-write": Bad.ACKS_ALL_WITHIN_BUDGET, "duplicate": Bad.IDEMPOTENT,
        "unseen": Bad.NEVER, "txn-lost-write": Bad.TXN_WITHIN_BUDGET,
        "txn-torn": Bad.TXN_WITHIN_BUDGET, "hanging-txn": Bad.TXN_WITHIN_BUDGET}


def test_checking_md_lists_every_anomaly_as_the_table_says_it():
    text = CHECKING.read_text()
    for anomaly in ANOMALIES:
        line = (f'- <a id="{anomaly.anchor}"></a>**`{anomaly.name}`** '
                f"(bad: {anomaly.bad.value}): {anomaly.meaning}.")
        assert line in text, f"docs/CHECKING.md lacks, or words otherwise: {line}"
    listed = [row for row in text.splitlines() if row.startswith('- <a id="anomaly-')]
    assert len(listed) == len(ANOMALIES)


def test_every_meaning_is_one_line_a_report_can_show():
    for anomaly in ANOMALIES:
        assert anomaly.meaning and "\n" not in anomaly.meaning and len(anomaly.meaning) < 120
