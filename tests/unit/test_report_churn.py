"""The statistics section's table of the ISR's churn below min ISR: results.json's
stats.isr_churn_below_min_isr as the checker counted it, one row a partition,
nothing recomputed and nothing of a damaged entry trusted."""

from __future__ import annotations

import re

from elr_harness.report.stats import _churn_table


def _rows(html: str) -> list[list[str]]:
    return [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", html)
            if "<td>" in row]


def test_each_partition_is_a_row_of_the_checkers_numbers():
    html = str(_churn_table({
        "t-1": {"expansions": 0, "shrinks": 1, "seconds_below": 0.0,
                "expansions_per_minute": None, "shrinks_per_minute": None},
        "t-0": {"expansions": 3, "shrinks": 4, "seconds_below": 60.5,
                "expansions_per_minute": 2.98, "shrinks_per_minute": 3.97}}))
    assert "joined the ISR" in html and "seconds below min ISR" in html
    assert _rows(html) == [["t-0", "3", "4", "60.5", "2.98", "3.97"],
                           ["t-1", "0", "1", "0.0", "", ""]]


def test_a_damaged_entry_shows_nothing_and_markup_is_escaped():
    html = str(_churn_table({"<b>t-0</b>": "not an object"}))
    assert "<b>" not in html and "&lt;b&gt;" in html
    assert _rows(html) == [["&lt;b&gt;t-0&lt;/b&gt;", "", "", "", "", ""]]
