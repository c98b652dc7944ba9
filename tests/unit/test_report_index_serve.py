"""store/index.html, `harness serve` and the terminal summary."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.report.atomic import REPORT_GENERATOR
from elr_harness.report.index import write_index
from elr_harness.report.serve import make_server
from elr_harness.report.summary import print_summary

REPO = Path(__file__).resolve().parents[2]


def _run(store: Path, test: str, when: str, valid: object | None, elr: bool = True,
         report: bool = True, anomalies: dict | None = None) -> Path:
    run_dir = store / test / when
    run_dir.mkdir(parents=True)
    (run_dir / "test.json").write_text(json.dumps(
        {"test": test, "nemesis": f"{test}-nemesis", "elr_enabled": elr, "seed": 3,
         "kafka_version": "4.1.1"}))
    if valid is not None:
        (run_dir / "results.json").write_text(json.dumps(
            {"valid": valid, "reason": "r", "bad_anomaly_types": ["lost-write"],
             "anomalies": anomalies or {}}))
    if report:
        (run_dir / "report.html").write_text(
            f"<!DOCTYPE html>\n<html><head>{REPORT_GENERATOR}</head>report of {when}</html>")
    return run_dir


@pytest.fixture
def store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    store.mkdir()
    _run(store, "kill", "20261120T090000", True)
    _run(store, "unclean-last-replica", "20261121T100000", False, elr=False,
         anomalies={"lost-write": {"count": 12}, "duplicate": {"count": 2}})
    newest = _run(store, "pause", "20261122T080000", "unknown", report=False)
    _run(store, "kill", "20261122T070000", None)
    (store / "latest").symlink_to(newest.relative_to(store))
    (store / "notes.txt").write_text("not a run")
    return store


def test_index_lists_runs_newest_first_with_verdicts(store: Path) -> None:
    page = write_index(store).read_text()
    rows = re.findall(r"<tr><td>(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", page)
    assert rows == ["2026-11-22 08:00:00", "2026-11-22 07:00:00", "2026-11-21 10:00:00",
                    "2026-11-20 09:00:00"]
    assert [c for c in re.findall(r'class="pill (\w+)"', page)] == [
        "unknown", "unchecked", "invalid", "valid"]
    assert "2026-11-22 08:00:00<strong> (latest)</strong>" in page
    assert '<a href="unclean-last-replica/20261121T100000/report.html">report</a>' in page
    assert "<strong>lost-write ×12</strong>, duplicate ×2" in page
    assert "no report yet" in page  # the pause run has no report.html
    assert "<td>off</td>" in page and "elr-harness runs (4)" in page


def test_index_of_a_missing_store_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="not a store directory"):
        write_index(tmp_path / "nope")


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""


def test_serve_regenerates_the_index_and_serves_reports(store: Path) -> None:
    server = make_server(store, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        base = f"http://{host}:{port}"
        status, page = _get(base + "/")
        assert status == 200 and "elr-harness runs (4)" in page
        _run(store, "partition", "20261123T000000", True)  # a run that arrives later
        status, page = _get(base + "/")
        assert "elr-harness runs (5)" in page and "2026-11-23 00:00:00" in page
        status, report = _get(base + "/kill/20261120T090000/report.html")
        assert status == 200 and "report of 20261120T090000" in report
        # what the harness did not write there is not served (test.json, a listing)
        assert _get(base + "/latest/test.json")[0] == 404
        assert _get(base + "/kill/")[0] == 404
        status, _ = _get(base + "/../../etc/passwd")
        assert status == 404
        # a symlink out of the store is not followed; one inside it (latest) is
        (store / "etc-link").symlink_to("/etc")
        status, _ = _get(base + "/etc-link/passwd")
        assert status == 404
        status, _ = _get(base + "/etc-link/")
        assert status == 404
    finally:
        server.shutdown()
        server.server_close()


def test_serve_refuses_a_missing_store_and_a_busy_port(store: Path, tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="does not exist"):
        make_server(tmp_path / "nowhere", "127.0.0.1", 0)
    (tmp_path / "a-file").write_text("")
    with pytest.raises(BadInput, match="is a file, not a folder of runs"):
        make_server(tmp_path / "a-file", "127.0.0.1", 0)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(HarnessError, match="cannot listen on 127.0.0.1"):
            make_server(store, "127.0.0.1", busy.getsockname()[1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_harness_serve_stops_cleanly_on_ctrl_c(store: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "elr_harness.cli", "serve", "--store", str(store), "--port",
         str(port)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 30
        status = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                status, page = _get(f"http://127.0.0.1:{port}/")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        assert status == 200 and "elr-harness runs" in page
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert f"http://127.0.0.1:{port}/" in out
    assert "Traceback" not in err


def test_summary_prints_verdict_reason_anomalies_and_report(capsys) -> None:
    results = {"valid": False, "reason": "3 acks=all writes lost",
               "bad_anomaly_types": ["lost-write"],
               "anomalies": {"lost-write": {"count": 3}, "duplicate": {"count": 1}}}
    print_summary(results, Path("store/x/20261121T100000/report.html"))
    out = capsys.readouterr().out
    assert "INVALID" in out and "3 acks=all writes lost" in out
    assert re.search(r"lost-write\s*│\s*3 \(bad\)", out)
    assert re.search(r"duplicate\s*│\s*1 \(reported\)", out)
    assert out.index("lost-write") < out.index("duplicate")
    assert "store/x/20261121T100000/report.html" in out
    print_summary({"valid": True, "reason": "fine", "anomalies": {}}, None)
    out = capsys.readouterr().out
    assert "VALID" in out and "none" in out and "not written" in out


def test_an_index_the_harness_wrote_before_its_marker_is_still_refreshed(tmp_path: Path) -> None:
    """The page as the harness wrote it before the generator marker (its head, as
    a527c2e's report/index.py wrote it) is the harness's own: refreshed, while a
    user's page with the same title elsewhere is not."""
    store = tmp_path / "store"
    store.mkdir()
    legacy = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
              '<link rel="icon" href="data:,"><title>elr-harness runs</title><style></style>'
              "</head><body><main><h1>elr-harness runs (0)</h1></main></body></html>\n")
    (store / "index.html").write_text(legacy)
    assert write_index(store) == store / "index.html"
    assert 'content="elr-harness index"' in (store / "index.html").read_text()
    mine = "<html><head><title>elr-harness runs</title></head><body>my notes</body></html>\n"
    (store / "index.html").write_text(mine)
    assert write_index(store) is None
    assert (store / "index.html").read_text() == mine


def test_soak_index_table_shows_each_runs_lost_writes(tmp_path):
    """A checked run's lost writes by acks, a never-checked run's '-', from soak.json."""
    from elr_harness.report.soak_index import render_soak_index, runs_frame

    base = {"entry": "mix", "seed": 1, "kafka_version_requested": "4.1.1",
            "duration_s": 61.0, "reproduce": "harness run --seed 1"}
    runs = [{**base, "index": 0, "status": "invalid", "anomalies": {"lost-write": 3},
             "lost_write_by_acks": {"all": 2, "0": 1}, "bad_anomalies": {"lost-write": 2},
             "disk_bytes": 2_500_000},
            {**base, "index": 1, "status": "error", "error": "setup failed"}]
    frame = runs_frame(runs)
    lost = frame[["lost_all", "lost_1", "lost_0"]]
    assert lost.iloc[0].tolist() == [2, 0, 1] and lost.iloc[1].isna().all()
    page = render_soak_index({"runs": runs, "started_at": "now", "used_s": 120,
                              "command": "harness soak"}, tmp_path)
    assert "<td>2 / 0 / 1</td>" in page and "<td>- / - / -</td>" in page
    assert "1 invalid, 1 error" in page and "<td>2.5 MB</td>" in page
    assert "lost-write ×2" in page and "setup failed" in page
