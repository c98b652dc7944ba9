"""The report shows the checker's facts and derives none of its own: a history
with planted losses, checked by the Spark checker, then reported; the banner,
the lost-writes plot and the lost-writes table must give the same numbers.

(The report once recomputed lost writes from the raw history: in a real ELR-off
run its plot showed 248 acks=all losses while its banner showed none.)"""

from __future__ import annotations

import json
import re

import pytest
from checker_fixtures import TEST_CONFIG
from synthetic import Injection, SyntheticSpec, write_run_dir

from elr_harness.checker.check import check_history, write_results
from elr_harness.core.config import ReportConfig
from elr_harness.report.build import build_report

pytestmark = pytest.mark.usefixtures("spark")


def test_banner_plot_and_table_agree_on_the_checkers_lost_writes(tmp_path):
    injections = tuple(Injection("lost-write", at=at, partition=p, acks=acks)
                       for at, p, acks in [(0.2, 0, "all"), (0.4, 1, "all"), (0.5, 2, "1"),
                                           (0.6, 0, "1"), (0.7, 1, "0")])
    write_run_dir(tmp_path, SyntheticSpec(lines=1500, seed=8, injections=injections))
    results = check_history(tmp_path / "history.jsonl",
                            json.loads((tmp_path / "test.json").read_text()), TEST_CONFIG)
    write_results(results, tmp_path)
    lost = results["anomalies"]["lost-write"]
    assert lost["by_acks"] == {"all": 2, "1": 2, "0": 1}
    assert {a: sum(n for _, n in lost["over_time"][a]) for a in lost["over_time"]} == \
        lost["by_acks"]
    assert lost["by_partition"] == {"elr-test-0": {"all": 1, "1": 1, "0": 0},
                                    "elr-test-1": {"all": 1, "1": 0, "0": 1},
                                    "elr-test-2": {"all": 0, "1": 1, "0": 0}}

    page = build_report(tmp_path, ReportConfig()).read_text(encoding="utf-8")
    banner = re.search(r'<div class="banner invalid" id="verdict">(.*?)</div></div>', page, re.S)
    assert banner and "2 acks=all lost-write within the fault budget" in banner.group(1)
    assert 'alt="lost writes plot: acks=all 2, acks=1 2, acks=0 1"' in page
    stats = re.search(r'<section id="stats">(.*?)</section>', page, re.S).group(1)
    for acks, n in lost["by_acks"].items():
        assert re.search(rf"<tr><td>{acks}</td><td>\d+</td><td>{n}</td>", stats), acks
    assert "<tr><td>elr-test-1</td><td>1</td><td>0</td><td>1</td></tr>" in stats
