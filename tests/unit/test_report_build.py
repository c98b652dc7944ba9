"""report.html of generated runs, checked by the real checker: banner, anomaly evidence,
plots inline, escaping, gaps."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from report_fixtures import (
    HOSTILE_ERROR,
    HOSTILE_TOPIC,
    RunSpec,
    check_into_cache,
    make_run,
)

from elr_harness.checker.check import write_results
from elr_harness.cli.main import main
from elr_harness.core.config import ReportConfig
from elr_harness.core.errors import BadInput
from elr_harness.report.build import build_report

CONFIG = ReportConfig()

pytestmark = pytest.mark.usefixtures("spark")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("store")


def _build(store: Path, spec: RunSpec) -> tuple[Path, str]:
    run_dir = make_run(store, spec)
    path = build_report(run_dir, CONFIG)
    return run_dir, path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def valid(store: Path) -> tuple[Path, str]:
    return _build(store, RunSpec(variant="valid", run_name="20261121T100000"))


@pytest.fixture(scope="module")
def invalid(store: Path) -> tuple[Path, str]:
    return _build(store, RunSpec(variant="invalid", elr=False, run_name="20261121T110000"))


@pytest.fixture(scope="module")
def unknown(store: Path) -> tuple[Path, str]:
    return _build(store, RunSpec(variant="unknown", run_name="20261121T120000"))


def _results(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text())


def _section(page: str, anchor: str) -> str:
    match = re.search(rf'<section id="{anchor}">(.*?)</section>', page, re.S)
    assert match, f"no section {anchor}"
    return match.group(1)


def test_valid_banner_names_the_run_and_how_to_reproduce_it(valid: tuple[Path, str]) -> None:
    _run_dir, page = valid
    banner = re.search(r'<div class="banner (\w+)" id="verdict">(.*?)</div></div>', page, re.S)
    assert banner and banner.group(1) == "valid"
    assert "VALID" in banner.group(2)
    assert "no bad anomaly; acks=1 losses are expected under KIP-966" in banner.group(2)
    assert "ELR on" in banner.group(2)
    for fact in ("<dt>seed</dt><dd>7</dd>", "<dt>Kafka version</dt><dd>4.1.1</dd>",
                 "<dt>ELR</dt><dd>on</dd>", "3 brokers: broker-1 (id 1)", "3 controllers",
                 "harness run --nemesis unclean-last-replica --seed 7",
                 "<td>elr-test</td><td>3</td><td>3</td><td>2</td><td>False</td>"):
        assert fact in page


def test_a_relative_or_symlinked_run_directory_draws_the_checked_tables(
        valid: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`harness report store/latest`, as the README says it: the checker's cache names
    the history by its resolved path, and the report reads the same one."""
    run_dir, _page = valid
    link = run_dir.parent.parent / "latest-valid"
    link.symlink_to(run_dir)
    monkeypatch.chdir(run_dir.parent.parent.parent)
    for given in (Path(run_dir.parent.parent.name) / link.name,
                  Path(run_dir.parent.parent.name) / run_dir.relative_to(run_dir.parent.parent)):
        page = build_report(given, CONFIG).read_text(encoding="utf-8")
        assert "older than the history" not in page, given
        assert page.count('<img class="plot"') >= 4, given


def test_report_is_self_contained(valid: tuple[Path, str]) -> None:
    _run_dir, page = valid
    assert "<script" not in page
    assert re.findall(r"<link[^>]*>", page) == ['<link rel="icon" href="data:,">']
    assert not re.search(r'(src|href)="(https?:)?//', page)
    sources = re.findall(r'<img class="plot" src="([^"]+)"', page)
    # latency, throughput, lost writes, HWM and one timeline per partition
    assert len(sources) == 4 + 3
    for src in sources:
        assert src.startswith("data:image/png;base64,")
        png = base64.b64decode(src.split(",", 1)[1])
        assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_anomaly_examples_show_their_operations(valid: tuple[Path, str]) -> None:
    run_dir, page = valid
    example = _results(run_dir)["anomalies"]["lost-write"]["examples"][0]
    block = _section(page, "anomalies")
    assert 'id="anomaly-lost-write"' in block
    invoke, done, poll, final = example["ops"]
    for index in example["ops"]:
        assert f"<td>{index}</td>" in block
    value = example["value"]
    # the send, the poll that saw the value, and the final read it is missing from
    assert f"acks={example['acks']} value={value}</td>" in block
    assert f"[0, {example['offset']}, {value}]" in block
    assert f"absent: {value}" in block
    history = (run_dir / "history.jsonl").read_text().splitlines()
    send_time = json.loads(history[invoke])["time"] / 1e9
    assert f"<td>{send_time:.3f}</td>" in block


def test_invalid_report_lists_every_anomaly_type(invalid: tuple[Path, str]) -> None:
    run_dir, page = invalid
    assert '<div class="banner invalid" id="verdict">' in page
    results = _results(run_dir)
    block = _section(page, "anomalies")
    for name in ("lost-write", "lost-committed-read", "garbage-read"):
        count = results["anomalies"][name]["count"]
        assert f'id="anomaly-{name}"' in block
        assert f"{name} — {count}" in block
    assert block.count('class="badge bad"') == 3
    assert "[1, 0, null]" in block  # the garbage record itself
    assert "ELR off" in page
    # 20 examples kept by the checker: 3 open, the rest folded away
    assert "17 more example(s)" in block


def test_lost_writes_are_counted_over_the_whole_history(invalid: tuple[Path, str]) -> None:
    run_dir, page = invalid
    by_acks = _results(run_dir)["anomalies"]["lost-write"]["by_acks"]
    stats = _section(page, "stats")
    for acks in ("all", "1", "0"):
        assert re.search(rf"<tr><td>{acks}</td><td>\d+</td><td>{by_acks[acks]}</td>", stats)
    assert sum(by_acks.values()) > 20  # more than the examples results.json keeps


def test_partition_timeline_follows_the_kip_966_steps(valid: tuple[Path, str]) -> None:
    _run_dir, page = valid
    part = _section(page, "partitions")
    for step in ("T0 partition broker-2 begins", "T1 partition broker-3 begins",
                 "T2 page-cache-loss broker-1 begins",
                 "T2 page-cache-loss broker-1 ends (T4 start broker-1)"):
        assert step in part
    # ISR {1} with ELR {3}, then the power loss: ISR {} and ELR {1, 3}, then 3 elected
    assert '<span class="changed">{1}</span>' in part
    assert '<span class="changed">{1, 3}</span>' in part
    assert re.search(r'<span class="changed">3</span>.*?<span class="changed">\{3\}</span>', part)
    assert "fault: " not in part  # legends are inside the PNGs, not text


def test_metadata_log_is_decoded_with_topic_names(valid: tuple[Path, str]) -> None:
    _run_dir, page = valid
    meta = _section(page, "metadata")
    assert "<td>PARTITION_CHANGE_RECORD</td><td>elr-test-0</td>" in meta
    assert "<td>FENCE_BROKER_RECORD</td><td>broker 1</td>" in meta
    assert "fenced (epoch 11)" in meta
    assert "FEATURE_LEVEL_RECORD ×1" in meta
    assert '<td class="changed">{1, 3}</td>' in meta  # ELR after the fence


def test_unknown_report_explains_what_is_missing(unknown: tuple[Path, str]) -> None:
    _run_dir, page = unknown
    assert '<div class="banner unknown" id="verdict">' in page
    assert "final reads of elr-test-2 incomplete" in page
    assert 'id="anomaly-unseen"' in page
    assert "The last line of history.jsonl was cut short" in page
    assert "Final read incomplete (their missing sends are unseen, not lost): elr-test-2" \
        in page


def test_history_text_can_never_inject_markup(store: Path) -> None:
    spec = RunSpec(variant="invalid", error=HOSTILE_ERROR, topic=HOSTILE_TOPIC,
                   test_name="hostile", run_name="20261121T130000")
    _run_dir, page = _build(store, spec)
    assert "<script" not in page
    assert "onerror=" not in page.replace("onerror=&quot;", "")
    assert "<b>topic</b>" not in page
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in page
    assert "evil&lt;b&gt;topic&lt;/b&gt;&amp;&quot;&#x27;$x$-0" in page


def test_missing_results_and_metadata_render_not_available(store: Path) -> None:
    spec = RunSpec(variant="valid", with_results=False, with_metadata=False,
                   test_name="unchecked", run_name="20261121T140000")
    _run_dir, page = _build(store, spec)
    assert '<div class="banner unchecked" id="verdict">' in page
    assert "NOT CHECKED" in page
    assert "the history was not checked (results.json is not there yet" in page
    assert "<img" not in page  # no plot is drawn from anything but the checker's tables
    assert "Operation counts: not available." in _section(page, "stats")
    assert "<strong>Anomalies: not available.</strong>" in _section(page, "anomalies")
    assert "no controller metadata-log.json" in _section(page, "metadata")
    assert "<strong>Fault budget: not available.</strong>" not in page  # needs results at all
    assert "Checker statistics: not available." in _section(page, "stats")


def test_empty_and_absent_history_render(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, RunSpec(ops=300, run_name="20261121T150000"))
    (run_dir / "history.jsonl").write_text("")
    write_results(check_into_cache(run_dir), run_dir)
    page = build_report(run_dir, CONFIG).read_text()
    assert "history.jsonl is empty" in page
    assert "<img" not in page
    (run_dir / "history.jsonl").unlink()
    page = build_report(run_dir, CONFIG).read_text()
    assert "history.jsonl is missing" in page


def test_a_history_changed_after_its_check_is_not_drawn(tmp_path: Path) -> None:
    """The plots and examples come from the checker's cache of the history: once the
    history is newer than the cache, the report says so and draws nothing of it."""
    run_dir = make_run(tmp_path, RunSpec(ops=120, run_name="20261121T150000"))
    with (run_dir / "history.jsonl").open("a") as history:
        history.write("\n")
    page = build_report(run_dir, CONFIG).read_text()
    assert "missing or older than the history" in page
    assert "<img" not in page
    assert "cannot be shown: the checker&#x27;s Parquet cache" in _section(page, "anomalies")


def test_report_never_rewrites_what_the_run_recorded(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, RunSpec(ops=60, run_name="20261121T160000"))
    recorded = ["history.jsonl", "test.json", "results.json",
                "nodes/controller-1/metadata-log.json"]

    def digest() -> dict[str, str]:
        return {n: hashlib.sha256((run_dir / n).read_bytes()).hexdigest() for n in recorded}

    before = digest()
    build_report(run_dir, CONFIG)
    build_report(run_dir, CONFIG)
    assert digest() == before
    assert (tmp_path / "index.html").is_file()  # store/<test>/<time>/: index refreshed
    leftovers = [p.name for p in run_dir.iterdir() if p.name.startswith(".report")]
    assert leftovers == []


def test_bad_input_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(BadInput, match="not a run directory"):
        build_report(tmp_path, CONFIG)
    (tmp_path / "test.json").write_text("{not json")
    with pytest.raises(BadInput, match="cannot be read as JSON"):
        build_report(tmp_path, CONFIG)
    assert main(["report", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" not in err


def test_corrupt_pieces_are_reported_not_fatal(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, RunSpec(ops=120, run_name="20261121T170000"))
    history = run_dir / "history.jsonl"
    lines = history.read_text().splitlines(keepends=True)
    lines.insert(7, "{garbage\n")
    history.write_text("".join(lines))
    (run_dir / "nodes" / "controller-1" / "metadata-log.json").write_text("[{")
    page = build_report(run_dir, CONFIG).read_text()
    # the report never reads the history: what it knows of it is the checker's
    assert "metadata-log.json cannot be read" in _section(page, "metadata")
    assert '<div class="banner valid" id="verdict">' in page


def _bad_results(path: Path, kind: str) -> None:
    results = json.loads(path.read_text())
    if kind == "cut in half":
        text = path.read_text()
        path.write_text(text[:len(text) // 2])
    elif kind == "[]":
        path.write_text("[]")
    elif kind == "30 digits":
        path.write_text(json.dumps({**results, "seed": 10**29}))
    elif kind == "fifo":
        path.unlink()
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.unlink()
        path.symlink_to("/dev/zero")
    elif kind == "nested 70 deep":
        path.write_text(json.dumps({**results, "deep": json.loads("[" * 70 + "]" * 70)}))
    elif kind == "valid maybe":
        path.write_text(json.dumps({**results, "valid": "maybe"}))
    elif kind == "coverage count text":
        results["coverage"] = {"elr-not-empty": {"count": "7"}}
        path.write_text(json.dumps(results))
    elif kind == "anomaly count negative":
        name = next(iter(results["anomalies"]))
        results["anomalies"][name]["count"] = -1
        path.write_text(json.dumps(results))


KINDS = ["cut in half", "[]", "30 digits", "fifo", "dev-zero", "nested 70 deep",
         "valid maybe", "coverage count text", "anomaly count negative"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_results_json_the_report_cannot_read_leaves_the_last_report(
        valid: tuple[Path, str], kind: str) -> None:
    """`harness report` over a results.json that is there but unreadable or not of the
    checker's shape: an input error naming it, and the VALID report.html written
    before is left byte for byte (it was replaced by a NOT CHECKED page, or rendered
    UNKNOWN or VALID from the made-up field)."""
    # a run of its own, 2026-11-21 17:10:0N: a copy of the module's checked VALID run
    # with its report (a check of its own per kind cost 14 s each, #60)
    name = f"20261121T17100{KINDS.index(kind)}"
    run_dir = valid[0].parent / name
    shutil.copytree(valid[0], run_dir, symlinks=True)
    before = (run_dir / "report.html").read_bytes()
    assert b'<div class="banner valid" id="verdict">' in before
    _bad_results(run_dir / "results.json", kind)
    with pytest.raises(BadInput, match=rf"{name}/results.json.*; report.html is left "
                                       r"as it was"):
        build_report(run_dir, CONFIG)
    assert (run_dir / "report.html").read_bytes() == before


def test_banner_says_what_the_checker_read_and_the_table_how_much_is_bad(
        store: Path) -> None:
    run_dir = make_run(store, RunSpec(variant="invalid", elr=False,
                                      run_name="20261121T130000"))
    results = _results(run_dir)
    results["checked"] = {"sends": 1234, "polled_records": 567, "final_records": 890,
                          "observations": 12, "replica_records": 0}
    name = next(iter(results["anomalies"]))
    results["anomalies"][name].update(count=4, bad=2)
    (run_dir / "results.json").write_text(json.dumps(results))
    page = build_report(run_dir, CONFIG).read_text(encoding="utf-8")
    assert "checked 1,234 sends, 567 polled records, 890 final records, 12 observations" in page
    row = re.search(rf'#anomaly-{re.escape(name)}">{re.escape(name)}</a></td><td>(.*?)</tr>',
                    page, re.S)
    assert row and "<td>2 bad</td>" in row.group(1), row and row.group(1)


def _op_rows(page: str) -> dict[tuple[str, str], list[int]]:
    stats = _section(page, "stats")
    block = re.search(r"Operations in the history.*?</table>", stats, re.S).group(0)
    return {(f, acks): [int(n) for n in counts] for f, acks, *counts in
            re.findall(r"<tr><td>(\w+)</td><td>(\w*)</td><td>(\d+)</td><td>(\d+)</td>"
                       r"<td>(\d+)</td><td>(\d+)</td></tr>", block)}


def test_op_counts_are_the_checkers(invalid: tuple[Path, str]) -> None:
    """Every number of the operations table is results.json's stats.ops (as the
    checker counted it): ok, fail, info, and invokes never completed."""
    run_dir, page = invalid
    ops = _results(run_dir)["stats"]["ops"]
    rows = _op_rows(page)
    assert ("send", "all") in rows and ("poll", "") in rows
    for (f, acks), (ok, fail, info, unfinished) in rows.items():
        types = ops[f]
        key = acks or "-"
        assert [ok, fail, info] == [types.get(t, {}).get(key, 0) for t in ("ok", "fail", "info")]
        if f in ("send", "poll"):
            assert unfinished == types.get("invoke", {}).get(key, 0) - ok - fail - info
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    assert rows[("send", "all")][0] == sum(
        1 for op in history if op["f"] == "send" and op["type"] == "ok" and op["acks"] == "all")


def test_fault_steps_and_errors_come_from_the_checkers_report_table(
        valid: tuple[Path, str]) -> None:
    """The fault's step (its detail, kept by checker/report_tables.py) labels the bands
    and the faults table."""
    _run_dir, page = valid
    faults = _section(page, "faults")
    # each row carries the id a KIP-966 state's example links to
    assert re.search(r'<tr id="op-\d+"><td>T2</td><td>page-cache-loss</td><td>broker-1</td>',
                     faults)
    assert "T4 start broker-1" in faults
