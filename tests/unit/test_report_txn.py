"""The report's Transactions section (contract v4): outcomes by client, anomalies by
protocol, each partition's LSO against its high watermark, hanging transactions.

The run folder is synthetic: two transactional producers write to two partitions
of elr-test, one transaction is aborted on purpose, one fails, one ends unknown,
and the last one's commit marker on elr-test-1 never lands, so that partition's
LSO stays at the transaction's first offset while its high watermark moves on.
The real checker checks it (its Parquet cache is what the plot draws, and it finds
the hanging transaction); a hand-written results.json then covers both protocols.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from report_fixtures import CHECKER_CONFIG

from elr_harness.checker.check import check_history
from elr_harness.core.config import ReportConfig
from elr_harness.report.build import build_report
from elr_harness.report.lso import LsoSeries, LsoTables, read_lso
from elr_harness.report.lso_plot import lso_figure, lso_lines, thinned

CONFIG = ReportConfig()
TOPIC = "elr-test"
PARTITIONS = (0, 1)
#: The hanging transaction's producer: its id must reach the page.
HANGING_ID = "elr-txn-java-1"
FIRST_TXN_VALUE = 1_000_000_000_000_000
END_S = 11.0


class Lines:
    """History lines collected out of order, written in time order with indices."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, int, dict[str, Any]]] = []

    def add(self, time_s: float, process: int, typ: str, f: str, **fields: Any) -> None:
        self.lines.append((time_s, len(self.lines), {"process": process, "type": typ,
                                                     "f": f, **fields}))

    def write(self, path: Path) -> list[dict[str, Any]]:
        out = []
        for index, (time_s, _seq, fields) in enumerate(sorted(self.lines)):
            out.append({"index": index, "time": int(time_s * 1e9), **fields})
        path.write_text("".join(json.dumps(line) + "\n" for line in out))
        return out


class Log:
    """One partition's log: each offset's append time, value (None: a marker) and
    transaction, and each transaction's open interval on it."""

    def __init__(self) -> None:
        self.entries: list[tuple[float, int | None, int]] = []
        self.open: dict[int, tuple[float, int, float | None]] = {}  # txn -> start, first, end

    def append(self, time_s: float, value: int, txn: int) -> int:
        if txn not in self.open:
            self.open[txn] = (time_s, len(self.entries), None)
        self.entries.append((time_s, value, txn))
        return len(self.entries) - 1

    def marker(self, time_s: float, txn: int) -> None:
        start, first, _ = self.open[txn]
        self.open[txn] = (start, first, time_s)
        self.entries.append((time_s, None, txn))

    def at(self, now: float) -> tuple[int, int, list[int]]:
        """(high watermark, LSO, open transactions' first offsets) at now."""
        hwm = sum(1 for t, _v, _x in self.entries if t <= now)
        opened = sorted(first for start, first, end in self.open.values()
                        if start <= now and (end is None or end > now))
        return hwm, opened[0] if opened else hwm, opened


def generate(run_dir: Path) -> dict[str, Any]:
    """Write history.jsonl; return what the tests compare the page against."""
    lines, logs = Lines(), {p: Log() for p in PARTITIONS}
    outcomes: dict[int, str] = {}  # txn -> committed | aborted | failed | unknown
    value = FIRST_TXN_VALUE
    process, txn_id = 10, "elr-txn-java-0"
    lines.add(3.0, -1, "invoke", "fault", fault="partition", nodes=["broker-2"],
              detail={"step": "p1"})
    lines.add(3.05, -1, "ok", "fault", fault="partition", nodes=["broker-2"],
              detail={"step": "p1"})
    everyone = ["broker-1", "broker-2", "broker-3"]
    lines.add(4.0, -1, "invoke", "fault", fault="heal", nodes=everyone,
              detail={"step": "final-heal"})
    lines.add(4.05, -1, "ok", "fault", fault="heal", nodes=everyone,
              detail={"step": "final-heal"})
    # kinds of the ten regular transactions, then the hanging one
    kinds = ["ok", "ok", "ok", "abort", "ok", "fail", "ok", "info", "ok", "ok"]
    for k, kind in enumerate([*kinds, "hang"]):
        t = 1.0 + 0.5 * k
        if kind == "hang":
            process, txn_id = 12, HANGING_ID
        parts = [1, 1] if kind == "hang" else [k % 2, (k + 1) % 2]
        sends = [[TOPIC, p, value + i] for i, p in enumerate(parts)]
        value += len(sends)
        extra = {"abort": True} if kind == "abort" else {}
        lines.add(t, process, "invoke", "txn", txn_id=txn_id, sends=sends, client="java",
                  **extra)
        offsets = [logs[p].append(t + 0.05, v, k) for _topic, p, v in sends]
        for p in sorted(set(parts)):
            if not (kind == "hang" and p == 1):  # the marker that never lands
                logs[p].marker(t + 0.2, k)
        done = {"txn_id": txn_id, "end_time": int((t + 0.15) * 1e9)}
        if kind in ("ok", "abort", "hang"):
            lines.add(t + 0.25, process, "ok", "txn", offsets=offsets, **done)
        else:
            error = "PRODUCER_FENCED" if kind == "fail" else "REQUEST_TIMED_OUT"
            lines.add(t + 0.25, process, kind, "txn", error=error, **done)
        if kind == "info":
            process += 1  # a process never issues another op after info
        outcomes[k] = {"ok": "committed", "hang": "committed", "abort": "aborted",
                       "fail": "failed", "info": "unknown"}[kind]
    # a read_committed consumer that polls (nothing) now and then: the latency plot
    for n in range(12):
        t = 1.1 + 0.4 * n
        lines.add(t, 20, "invoke", "poll", topic=TOPIC, isolation="read_committed")
        lines.add(t + 0.01, 20, "ok", "poll", topic=TOPIC, records=[])
    t = 0.3
    while t <= END_S:
        lines.add(t, -2, "ok", "observe", topic="__consumer_offsets", partition=0, leader=1,
                  leader_epoch=0, isr=[1, 2, 3], elr=[], last_known_elr=[], high_watermark=0)
        for p in PARTITIONS:
            hwm, lso, opened = logs[p].at(t)
            lines.add(t, -2, "ok", "observe", topic=TOPIC, partition=p, leader=1,
                      leader_epoch=0, isr=[1, 2, 3], elr=[], last_known_elr=[],
                      high_watermark=hwm, fenced=[], min_isr=2, replicas=[1, 2, 3],
                      elr_feature=1, last_stable_offset=lso, open_txn_offsets=opened)
        t = round(t + 0.25, 6)
    t = END_S + 0.2
    for p in PARTITIONS:
        hwm, lso, _opened = logs[p].at(END_S)
        entries = logs[p].entries
        records = [[p, off, v] for off, (_t, v, _x) in enumerate(entries) if v is not None]
        committed = [r for r in records if outcomes[entries[r[1]][2]] == "committed"
                     and r[1] < lso]
        for isolation, got, position, reader in (("read_uncommitted", records, hwm, 30),
                                                 ("read_committed", committed, lso, 40)):
            fields = {"isolation": isolation} if isolation == "read_committed" else {}
            lines.add(t, reader + p, "invoke", "poll", topic=TOPIC, final=True,
                      seek={str(p): 0}, **fields)
            done: dict[str, Any] = {"position": {str(p): position}}
            if isolation == "read_committed":
                done["last_stable_offset"] = {str(p): lso}
            else:
                done["high_watermark"] = {str(p): hwm}
            lines.add(t + 0.05, reader + p, "ok", "poll", topic=TOPIC, final=True,
                      records=got, **done)
            t += 0.1
    written = lines.write(run_dir / "history.jsonl")
    hanging_first = logs[1].open[len(kinds)][1]
    return {"outcomes": outcomes, "hanging_first": hanging_first,
            "lines": len(written), "end": t}


def make_test_json(transactions: dict[str, Any] | None) -> dict[str, Any]:
    nodes = {f"broker-{b}": {"role": "broker", "id": b, "address": f"10.9.0.{b}"}
             for b in (1, 2, 3)}
    test = {
        "format": 2, "test": "txn-report", "nemesis": "none", "seed": 3,
        "kafka_version": "4.4.0", "kafka_dist": "maven:4.4.0", "elr_enabled": True,
        "idempotent_producers": False,
        "topics": {TOPIC: {"partitions": 2, "replication_factor": 3,
                           "min_insync_replicas": 2, "unclean_leader_election": False}},
        "nodes": nodes, "command": "harness run --workload plain,txn",
        "started_at": "2026-12-06T10:44:04+00:00", "duration_s": 12.0,
        "fault_colours": {"partition": "#e6550d", "heal": "#31a354"},
        "phases": [{"name": "setup", "start_s": 0.0, "duration_s": 1.0},
                   {"name": "workload + nemesis", "start_s": 1.0, "duration_s": 5.5}],
    }
    if transactions is not None:
        test["transactions"] = transactions
    return test


TRANSACTIONS = {"enabled": True, "client": "java", "transaction_version": 2,
                "transaction_timeout_ms": 1000, "abort_check_interval_ms": 100,
                "hang_margin_ms": 100, "producers": 2, "read_committed_consumers": 1}

#: A hand-written results.json's transactions: two clients, both protocols.
HAND_TRANSACTIONS = [
    {"client": "java", "transaction_version": 2, "protocol": "kip-890", "committed": 4321,
     "aborted_on_purpose": 55, "failed": 6, "unknown": 7},
    {"client": "librdkafka", "transaction_version": 2, "protocol": "pre-kip-890",
     "committed": 987, "aborted_on_purpose": 11, "failed": 12, "unknown": 13},
]
HAND_ANOMALIES = {
    "txn-aborted-read": {"count": 17, "bad": 17,
                         "by_protocol": {"kip-890": 0, "pre-kip-890": 17}, "examples": []},
    "txn-lost-write": {"count": 29, "bad": 23,
                       "by_protocol": {"kip-890": 6, "pre-kip-890": 23}, "examples": []},
}


def _section(page: str, anchor: str) -> str:
    match = re.search(rf'<section id="{anchor}">(.*?)</section>', page, re.S)
    assert match, f"no section {anchor}"
    return match.group(1)


def _nav(page: str) -> str:
    match = re.search(r"<nav>(.*?)</nav>", page, re.S)
    assert match
    return match.group(1)


def _rows(html: str) -> list[list[str]]:
    """Each <tr>'s cells as text (tags dropped)."""
    return [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr)]
            for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", html, re.S)]


@pytest.fixture(scope="module")
def txn_run(tmp_path_factory: pytest.TempPathFactory, spark) -> dict[str, Any]:
    """The run checked by the real checker, and its pages: as checked, with a
    hand-written results.json, without transactions and with them disabled."""
    run_dir = tmp_path_factory.mktemp("txn-store") / "txn-report" / "20261206T104404"
    run_dir.mkdir(parents=True)
    info = generate(run_dir)
    test_json = run_dir / "test.json"
    test_json.write_text(json.dumps(make_test_json(TRANSACTIONS)))
    checked = check_history(run_dir / "history.jsonl", json.loads(test_json.read_text()),
                            CHECKER_CONFIG)
    results = run_dir / "results.json"
    results.write_text(json.dumps(checked))
    pages = {"checked": build_report(run_dir, CONFIG).read_text(encoding="utf-8")}
    hand = {**checked, "transactions": HAND_TRANSACTIONS,
            "anomalies": {**checked["anomalies"], **HAND_ANOMALIES}}
    results.write_text(json.dumps(hand))
    pages["hand"] = build_report(run_dir, CONFIG).read_text(encoding="utf-8")
    results.write_text(json.dumps(checked))
    for name, block in (("absent", None), ("disabled", {**TRANSACTIONS, "enabled": False})):
        test_json.write_text(json.dumps(make_test_json(block)))
        pages[name] = build_report(run_dir, CONFIG).read_text(encoding="utf-8")
    test_json.write_text(json.dumps(make_test_json(TRANSACTIONS)))
    return {"dir": run_dir, "info": info, "results": checked, "pages": pages}


def test_the_checker_found_the_hanging_transaction_the_run_was_built_with(txn_run) -> None:
    """The fixture's premise: otherwise the hanging tests below test nothing."""
    hanging = txn_run["results"]["anomalies"]["hanging-txn"]["examples"]
    assert [(e["partition"], e["first_offset"], e["txn_id"]) for e in hanging] == \
        [(1, txn_run["info"]["hanging_first"], HANGING_ID)]


def test_a_run_with_transactions_has_the_section_after_the_plots(txn_run) -> None:
    page = txn_run["pages"]["checked"]
    section = _section(page, "transactions")
    assert '<a href="#transactions">Transactions</a>' in _nav(page)
    assert page.index('<section id="plots">') < page.index('<section id="transactions">') \
        < page.index('<section id="partitions">')
    assert "transaction.version 2" in section and "transaction timeout 1000 ms" in section


def test_outcomes_table_holds_the_checkers_counts(txn_run) -> None:
    outcomes = txn_run["info"]["outcomes"]
    expected = ["java", "2", "kip-890", *(str(sum(1 for o in outcomes.values() if o == name))
                                          for name in ("committed", "aborted", "failed",
                                                       "unknown"))]
    assert expected == ["java", "2", "kip-890", "8", "1", "1", "1"]
    rows = _rows(_section(txn_run["pages"]["checked"], "transactions"))
    assert ["client", "transaction version", "protocol", "committed", "aborted on purpose",
            "failed", "unknown"] in rows
    assert expected in rows


def test_hand_written_results_show_each_client_and_protocol(txn_run) -> None:
    section = _section(txn_run["pages"]["hand"], "transactions")
    rows = _rows(section)
    assert ["java", "2", "kip-890", "4321", "55", "6", "7"] in rows
    assert ["librdkafka", "2", "pre-kip-890", "987", "11", "12", "13"] in rows
    by_protocol = {r[0]: r[1:5] for r in rows if r and r[0].startswith(("txn-", "hanging"))}
    assert by_protocol["txn-aborted-read"] == ["0", "17", "17", "17"]
    assert by_protocol["txn-lost-write"] == ["6", "23", "29", "23"]
    assert by_protocol["hanging-txn"] == ["1", "0", "1", "1"]
    assert "KAFKA-17754 is a known hole" in section and "pre-kip-890: the older" in section


def test_the_lso_plot_draws_one_series_per_data_partition(txn_run) -> None:
    run_dir = txn_run["dir"]
    hanging = txn_run["results"]["anomalies"]["hanging-txn"]["examples"]
    ops = {i for e in hanging for i in e["ops"]}
    lso = read_lso((run_dir / "history.jsonl").resolve(), [TOPIC], ops)
    assert not lso.problem and sorted(lso.series) == [(TOPIC, 0), (TOPIC, 1)]
    assert set(lso.times) == ops  # the hanging row's observations, for its mark
    stuck = lso.series[(TOPIC, 1)]
    assert stuck.lso[-1] == txn_run["info"]["hanging_first"] < stuck.hwm[-1]
    assert lso.series[(TOPIC, 0)].gap[-1] == 0
    fig = lso_figure(lso, hanging, [], END_S, CONFIG.max_plot_points, 8, 1.0)
    assert fig is not None
    assert [line.get_label() for line in lso_lines(fig)] == ["elr-test-0", "elr-test-1"]
    assert fig.axes[1].get_xlim()[0] == 1.0  # the latency plot's clock: from the workload
    section = _section(txn_run["pages"]["checked"], "transactions")
    assert 'alt="LSO plot: elr-test-0, elr-test-1"' in section
    assert "__consumer_offsets" not in section


def test_a_partition_left_below_its_hwm_is_highlighted(txn_run) -> None:
    section = _section(txn_run["pages"]["checked"], "transactions")
    stuck = re.search(r'<tr class="unreached">(.*?)</tr>', section, re.S)
    assert stuck and "<td>elr-test-1</td>" in stuck.group(1)
    assert section.count('<tr class="unreached">') == 1


def test_the_hanging_transaction_shows_partition_offset_and_id(txn_run) -> None:
    section = _section(txn_run["pages"]["checked"], "transactions")
    hanging = section[section.index('id="hanging-txns"'):]
    row = next(r for r in _rows(hanging) if r[0] == "elr-test-1")
    assert row[1] == str(txn_run["info"]["hanging_first"])
    assert row[2] == HANGING_ID


def test_a_run_without_transactions_has_no_such_section(txn_run) -> None:
    for name in ("absent", "disabled"):
        page = txn_run["pages"][name]
        assert 'id="transactions"' not in page and "#transactions" not in _nav(page)
        assert "LSO plot" not in page and 'id="hanging-txns"' not in page


def test_a_run_not_checked_says_why_in_the_section(txn_run, tmp_path: Path) -> None:
    run_dir = tmp_path / "txn-report" / "20261206T120000"
    run_dir.mkdir(parents=True)
    (run_dir / "history.jsonl").write_text(
        (txn_run["dir"] / "history.jsonl").read_text())
    (run_dir / "test.json").write_text(json.dumps(make_test_json(TRANSACTIONS)))
    section = _section(build_report(run_dir, CONFIG).read_text(encoding="utf-8"),
                       "transactions")
    assert "Transactions by client: not available." in section
    assert "LSO plot: not available." in section


def test_thinning_keeps_both_offsets_aligned_and_the_largest_gap() -> None:
    n = 5000
    x = np.arange(n) / 10.0
    hwm = np.arange(n) * 3
    lso = hwm.copy()
    lso[1234] -= 77  # one spike of a gap
    series = LsoSeries(x, lso, hwm, n)
    thin = thinned(series, 200)
    assert len(thin.x) <= 200 and thin.gap.max() == 77
    assert np.allclose(thin.hwm, thin.x * 30)  # the same rows of each column


def test_time_below_the_hwm_counts_each_state_until_the_next() -> None:
    series = LsoSeries(np.array([0.0, 1.0, 3.0, 3.5]), np.array([0, 2, 5, 5]),
                       np.array([0, 5, 5, 9]), 9)
    assert series.seconds_below() == 2.0
    assert lso_figure(LsoTables(), [], [], 10.0, 100, 8) is None
