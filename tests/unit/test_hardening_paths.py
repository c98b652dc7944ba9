"""The checker and `harness serve` act only on their own (#31, paths part).

ROWS are bad inputs of `harness check`, `report` and `serve` (one line, exit 2,
no traceback); the other tests show effects: a user's X.parquet and index.html
survive, a history at a path full of glob characters is read alone, and serve
answers only to its own name and never prints a traceback.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from checker_fixtures import TEST_CONFIG
from cli_rows import IN_A_DELETED_FOLDER, digests, run_row
from synthetic import Injection, SyntheticSpec, synthetic_test_json, write_history

from elr_harness.checker.lines import describe
from elr_harness.checker.parquet_cache import parquet_location
from elr_harness.core.config import CheckerConfig
from elr_harness.core.errors import HarnessError
from elr_harness.core.validate import printable

REPO = Path(__file__).resolve().parents[2]

#: {store} an empty store; {deep_line} a history whose line 6 nests 100000 deep;
#: {deep_test} a run folder whose test.json nests 100000 deep; {fifo_test} a run
#: folder whose test.json is a FIFO; {big_test} a run folder whose test.json holds
#: 10**400; {loop} a symlink in a loop; {dangling} a symlink to nothing; {not_utf8} a
#: history whose line 4 holds a byte that is not UTF-8; {ctl} a folder whose name
#: holds an escape sequence and a newline ({ctl_shown}: as a message shows it).
ROWS = [
    (["serve", "--store", "{store}", "--host", ""], "--host '' is not an IP address"),
    (["serve", "--store", "{store}", "--host", "0"], "--host '0' is not an IP address"),
    (["serve", "--store", "{store}", "--host", "127.1"], "--host '127.1' is not an IP address"),
    (["serve", "--store", "{store}", "--host", "example.com"],
     "--host 'example.com' is not an IP address"),
    (["check", "{deep_line}"],
     "line 6 is not a valid history line: JSON nested deeper than 64 levels"),
    (["check", "{deep_test}"], "test.json is not readable JSON: JSON nested deeper than 64"),
    (["check", "{fifo_test}"], "test.json is not readable JSON: not a regular file"),
    (["report", "{deep_test}"], "test.json cannot be read as JSON: JSON nested deeper than 64"),
    # #52: an integer beyond 64 bits (a float of it overflows), a link that loops or
    # leads nowhere, a line that is not UTF-8, a name that would drive the terminal
    (["report", "{big_test}"], "{big_test}/test.json cannot be read as JSON: the integer "
                               "100000000000...(401 digits) is wider than 64 bits"),
    (["check", "{big_test}"], "{big_test}/test.json is not readable JSON: the integer "
                              "100000000000...(401 digits) is wider than 64 bits"),
    (["check", "{loop}"], "cannot read {loop}: a symlink loop: too many levels of symbolic"),
    (["check", "{loop}/history.jsonl"], "cannot read {loop}/history.jsonl: a symlink loop"),
    (["report", "{loop}"], "{loop}: a symlink loop: too many levels of symbolic links"),
    (["serve", "--store", "{loop}"], "store {loop}: a symlink loop"),
    (["run", "--store", "{loop}"], "--store {loop}: a symlink loop"),
    (["soak", "--store", "{loop}"], "--store {loop}: a symlink loop"),
    (["soak", "--resume", "{loop}"], "--resume {loop}: a symlink loop"),
    (["run", "--kafka-dist", "{loop}"], "--kafka-dist {loop}: a symlink loop"),
    (["run", "--nodes-file", "{loop}"],
     "--nodes-file {loop}: cannot read it (a symlink loop: too many levels of symbolic links)"),
    (["check", "{dangling}"], "cannot read {dangling}: a symlink to '/nonexistent/elr-52', "
                              "which does not exist"),
    (["report", "{dangling}"], "{dangling}: a symlink to '/nonexistent/elr-52', which does"),
    (["run", "--store", "{dangling}"], "--store {dangling}: a symlink to '/nonexistent/elr-52'"),
    (["check", "{not_utf8}"], "line 4 is not a valid history line: not UTF-8 text (byte 0xff "
                              "at character"),
    # #52: a deleted working folder (the default store is a relative path)
    *[([IN_A_DELETED_FOLDER, *args], "harness: the current working folder no longer exists "
       "(deleted or moved away); cd to a folder that exists and try again")
      for args in (["run", "--nemesis", "none"], ["check", "store/latest"],
                   ["report", "store/latest"], ["serve"], ["soak", "--duration", "1h"],
                   ["cluster", "status"])],
    (["check", "{ctl}"], "no history at {ctl_shown} (give a run directory"),
    (["check", "{nul}"], "{nul}/history.jsonl: line 1 is longer than 67108864 bytes "
                         "(checker.max_line_bytes)"),
    (["report", "{ctl}"], "harness: {ctl_shown} is not a run directory: it has no test.json"),
]

DEEP = "[" * 100_000 + "]" * 100_000


def materialize(tmp_path: Path) -> dict[str, str]:
    """The files ROWS name, under tmp_path."""
    (tmp_path / "store").mkdir(exist_ok=True)
    deep_line = tmp_path / "deep-line"
    deep_line.mkdir(exist_ok=True)
    write_history(deep_line / "history.jsonl", SyntheticSpec(lines=100, seed=1))
    lines = (deep_line / "history.jsonl").read_text().splitlines(keepends=True)
    (deep_line / "history.jsonl").write_text("".join([*lines[:5], DEEP + "\n", *lines[5:]]))
    deep_test = tmp_path / "deep-test"
    deep_test.mkdir(exist_ok=True)
    (deep_test / "history.jsonl").write_text("".join(lines))
    (deep_test / "test.json").write_text('{"topics": ' + DEEP + "}")
    fifo_test = tmp_path / "fifo-test"
    fifo_test.mkdir(exist_ok=True)
    (fifo_test / "history.jsonl").write_text("".join(lines))
    if not (fifo_test / "test.json").exists():
        os.mkfifo(fifo_test / "test.json")
    big_test = tmp_path / "big-test"
    big_test.mkdir(exist_ok=True)
    (big_test / "history.jsonl").write_text("".join(lines))
    (big_test / "test.json").write_text('{"phases": [{"name": "setup", "start_s": '
                                        + str(10**400) + ', "duration_s": 1}]}')
    loop = tmp_path / "loop-a"
    if not os.path.lexists(loop):
        loop.symlink_to(tmp_path / "loop-b")
        (tmp_path / "loop-b").symlink_to(loop)
    dangling = tmp_path / "dangling"
    if not os.path.lexists(dangling):
        dangling.symlink_to("/nonexistent/elr-52")
    not_utf8 = tmp_path / "not-utf8"
    not_utf8.mkdir(exist_ok=True)
    lines_b = [line.encode() for line in lines]
    lines_b[3] = lines_b[3].replace(b'"type"', b'"ty\xffpe"')
    (not_utf8 / "history.jsonl").write_bytes(b"".join(lines_b))
    ctl = tmp_path / "run\x1b[31m\nX"
    ctl.mkdir(exist_ok=True)
    nul = tmp_path / "nul"  # a history of NUL bytes, one line past the bound (sparse)
    nul.mkdir(exist_ok=True)
    with (nul / "history.jsonl").open("wb") as sparse:
        sparse.truncate(CheckerConfig().max_line_bytes + 1)
    return {"{store}": str(tmp_path / "store"), "{deep_line}": str(deep_line),
            "{deep_test}": str(deep_test), "{fifo_test}": str(fifo_test),
            "{big_test}": str(big_test), "{loop}": str(loop), "{dangling}": str(dangling),
            "{not_utf8}": str(not_utf8), "{ctl_shown}": printable(ctl), "{ctl}": str(ctl),
            "{nul}": str(nul)}


@pytest.mark.parametrize(("args", "message"), ROWS, ids=[" ".join(a) for a, _ in ROWS])
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    run_row(tmp_path, args, message, materialize(tmp_path))


# -- the checker: nothing of the user's is removed, and a path is never a pattern --


def test_a_deep_last_line_is_malformed_not_cut_short_and_never_recursion() -> None:
    reason, is_json = describe(DEEP)
    assert reason == "JSON nested deeper than 64 levels" and is_json
    reason, is_json = describe("[" * 100_000)  # cut short, and deep: still malformed
    assert "nested deeper" in reason and is_json


def test_a_users_parquet_file_or_folder_sends_the_cache_elsewhere(spark, tmp_path,  # noqa: F811
                                                                 monkeypatch):
    """The conversion (Spark's): the cache goes to the cache folder, and a folder
    that appears at the path meanwhile is never replaced."""
    from elr_harness.checker.load import load_history, release

    monkeypatch.setenv("ELR_HARNESS_CACHE", str(tmp_path / "cache"))
    for kind in ("file", "folder"):
        run = tmp_path / kind
        run.mkdir()
        write_history(run / "h.jsonl", SyntheticSpec(lines=100, seed=1))
        users = run / "h.parquet"
        if kind == "file":
            users.write_bytes(b"PAR1 a user's own parquet file")
        else:
            users.mkdir()
            (users / "part-0.parquet").write_bytes(b"PAR1 the user's")
        before = digests(run)
        release(spark, load_history(spark, run / "h.jsonl", TEST_CONFIG))
        after = digests(run)
        assert after == before, "nothing beside the history was made, changed or removed"
        cache = parquet_location(run / "h.jsonl")
        assert cache.is_relative_to(tmp_path / "cache") and (cache / "events").is_dir()
    from elr_harness.checker.parquet_cache import install, is_ours

    assert not is_ours(users) and is_ours(cache)
    tmp, foreign = tmp_path / "tmp", tmp_path / "appeared.parquet"
    tmp.mkdir()
    foreign.mkdir()
    (foreign / "mine").write_text("a user's")
    with pytest.raises(HarnessError, match="is not the harness's Parquet cache"):
        install(tmp, foreign, {"version": 1})
    assert (foreign / "mine").read_text() == "a user's" and not tmp.exists()


def _check(path: bytes, cwd: Path, here: bool = False) -> tuple[dict, int]:
    """One real `harness check PATH` from cwd, the planted lost write found; its
    results.json, less timings, and the pid that checked. here: by the program's
    main() in this process, in the tests' one Spark session (a fresh Spark JVM per
    check cost 10 s each); else the program in a subprocess of its own."""
    from elr_harness.core.config import cache_dir

    if here:
        from elr_harness.cli.main import main

        out, err = io.StringIO(), io.StringIO()
        previous = os.getcwd()
        os.chdir(cwd)
        try:
            with redirect_stdout(out), redirect_stderr(err):
                code = main(["check", os.fsdecode(path)])
        finally:
            os.chdir(previous)
        pid, text = os.getpid(), out.getvalue() + err.getvalue()
    else:
        proc = subprocess.Popen([sys.executable, "-m", "elr_harness.cli", "check", path],
                                cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = proc.communicate(timeout=300)
        code, pid, text = proc.returncode, proc.pid, (stdout + stderr).decode(errors="replace")
    assert code == 1, text  # the planted lost write: invalid
    assert "Traceback" not in text
    for base in (cache_dir() / "staging", Path(tempfile.gettempdir())):
        assert list(base.glob(f"elr-check-{pid}-*")) == [], "staging removed"
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    results = json.loads(Path(os.fsdecode(os.path.join(folder, b"results.json"))).read_text())
    results["stats"].pop("checker_seconds")
    return results, pid


def _history(folder: Path, name: str, seed: int, cut: bool = False) -> None:
    """A small history with a lost write in it (seed 1, with test.json) or a clean
    other one (a decoy); cut: a cut-short last line (so Spark's converter reads it)."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = SyntheticSpec(lines=300, seed=seed, injections=(
        (Injection("lost-write"),) if seed == 1 else ()))
    write_history(folder / name, spec)
    if cut:
        with open(folder / name, "a") as f:
            f.write('{"index": 99999, "ti')
    if seed == 1:
        (folder / "test.json").write_text(json.dumps(synthetic_test_json(spec)))


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """The reference: the history at a plain path, with a user's own
    history.parquet folder beside it (a real check; its cache goes elsewhere)."""
    base = tmp_path_factory.mktemp("plain")
    _history(base / "run", "history.jsonl", 1)
    users = base / "run" / "history.parquet"
    users.mkdir()
    (users / "data.parquet").write_bytes(b"PAR1 not the harness's")
    (users / "notes").mkdir()
    (users / "notes" / "n.txt").write_text("keep me")
    cache = parquet_location(base / "run" / "history.jsonl")
    before = digests(users)
    results, _ = _check(os.fsencode(base / "run"), base)
    yield base, results, before
    if not cache.is_relative_to(base):  # the cache folder's, made for this history
        shutil.rmtree(cache.parent, ignore_errors=True)


def test_a_users_parquet_folder_beside_the_history_survives_a_check(plain) -> None:
    base, results, before = plain
    assert digests(base / "run" / "history.parquet") == before
    assert results["valid"] is False and "lost-write" in results["anomalies"]


NASTY = b"run* ?[ab]{c,d},:\xc3\xa9\xff"
#: Names the glob would match, braces taken literally and braces expanded (Hadoop's).
DECOYS = (b"runZ Za{c,d},:\xc3\xa9\xff", b"runZ Zac,:\xc3\xa9\xff")


def test_a_history_at_a_path_of_glob_characters_is_checked_alone(plain, tmp_path, spark) -> None:
    """The issue's done-when: a history at a path holding * ? [ ] { } , a space, a
    ':', non-ASCII and a byte that is not UTF-8 gives the plain path's results.json,
    while histories the path would match as a pattern lie beside it. Once whole,
    once with a cut-short last line."""
    base, reference, _ = plain
    root = os.fsencode(tmp_path)
    nasty = Path(os.fsdecode(os.path.join(root, NASTY)))
    _history(nasty, os.fsdecode(b"h[12] *.jsonl"), 1)
    _history(nasty, os.fsdecode(b"h1 Z.jsonl"), 2)  # matched by h[12] *.jsonl
    for decoy in DECOYS:
        _history(Path(os.fsdecode(os.path.join(root, decoy))), os.fsdecode(b"h1 Z.jsonl"), 2)
    decoys = {d: digests(Path(os.fsdecode(os.path.join(root, d)))) for d in DECOYS}
    results, _ = _check(os.path.join(root, NASTY, b"h[12] *.jsonl"), tmp_path, here=True)
    assert results == reference
    for decoy, before in decoys.items():
        assert digests(Path(os.fsdecode(os.path.join(root, decoy)))) == before

    # the same history cut short, at a plain and at a nasty path
    _history(base / "cut", "history.jsonl", 1, cut=True)
    cut_reference, _ = _check(os.fsencode(base / "cut"), base, here=True)
    assert cut_reference["stats"]["truncated_lines"] == 1
    cut = os.path.join(root, b"cut" + NASTY)
    _history(Path(os.fsdecode(cut)), "history.jsonl", 1, cut=True)
    for decoy in DECOYS:
        _history(Path(os.fsdecode(os.path.join(root, b"cut" + decoy))), "history.jsonl", 2)
    results, _ = _check(cut, tmp_path, here=True)
    assert results == cut_reference
    for decoy in DECOYS:
        assert not os.path.exists(os.path.join(root, b"cut" + decoy, b"results.json"))


def test_a_history_that_links_elsewhere_is_cached_in_the_run_dir_given(plain, tmp_path, spark):
    """#52: results.json and the Parquet cache go in the run directory named (the
    folder of the link), never beside the link's target, which stays as it was."""
    base, reference, _ = plain
    elsewhere, run = tmp_path / "elsewhere", tmp_path / "run"
    _history(elsewhere, "h.jsonl", 1)
    run.mkdir()
    (elsewhere / "test.json").rename(run / "test.json")
    (run / "history.jsonl").symlink_to(elsewhere / "h.jsonl")
    before = digests(elsewhere)
    results, _ = _check(os.fsencode(run), tmp_path, here=True)
    assert results == reference
    assert digests(elsewhere) == before, "nothing made or changed beside the target"
    assert (run / "results.json").is_file() and (run / "history.parquet" / "events").is_dir()
    assert parquet_location(run / "history.jsonl") == run / "history.parquet"
    # named as a file, the link gives the same
    (run / "results.json").unlink()
    results, _ = _check(os.fsencode(run / "history.jsonl"), tmp_path, here=True)
    assert results == reference and digests(elsewhere) == before


def test_success_lines_escape_control_characters_in_a_run_dirs_name(tmp_path) -> None:
    """#52: `harness check` and `harness report` print where they wrote on one line
    each, an escape sequence or a newline in the name shown as \\xNN."""
    run = tmp_path / "run\x1b[31mred\x07\nX"
    _history(run, "history.jsonl", 1)
    lines = []
    for command in ("check", "report"):
        proc = subprocess.run([sys.executable, "-m", "elr_harness.cli", command, str(run)],
                              capture_output=True, timeout=300, cwd=tmp_path)
        assert proc.returncode == (1 if command == "check" else 0), proc.stderr
        out = proc.stdout.decode()
        assert "\x1b" not in out and "\x07" not in out, out
        lines.append(out.splitlines()[-1])
    shown = printable(run)
    assert shown.endswith("run\\x1b[31mred\\x07\\x0aX")
    assert lines == [f"results: {shown}/results.json", f"report: {shown}/report.html"]
    assert (run / "report.html").is_file()


def test_a_run_dir_whose_name_is_not_utf8_gets_its_plots(tmp_path) -> None:
    """#52: the report reads the checker's tables through a plain link (pyarrow
    encodes a path as UTF-8 and failed on the name): the page is drawn whole."""
    from report_fixtures import RunSpec, make_run

    from elr_harness.core.config import ReportConfig
    from elr_harness.report.build import build_report

    run = make_run(tmp_path / "store", RunSpec(ops=120, test_name=os.fsdecode(b"kill\xff"),
                                               run_name="20261121T160000"))
    page = build_report(run, ReportConfig()).read_text(encoding="utf-8")
    assert page.count("<img") >= 2, "the plots are drawn"
    assert "kill\N{REPLACEMENT CHARACTER}" in page
    assert "missing or older than the history" not in page


def test_results_json_with_an_integer_beyond_64_bits_is_named_in_the_report(tmp_path) -> None:
    """#52: 10**400 as a coverage state's first_time (a float of it overflows) makes
    results.json unreadable, said in one line naming it; since #63 the report written
    before is left as it was rather than replaced by a page that cannot read it."""
    from report_fixtures import RunSpec, make_run

    from elr_harness.core.config import ReportConfig
    from elr_harness.report.build import build_report

    run = make_run(tmp_path / "store", RunSpec(ops=120, run_name="20261121T170000"))
    results = json.loads((run / "results.json").read_text())
    results["coverage"] = {"elr-not-empty": {"count": 1, "first_time": 10**400,
                                             "example": 5}}
    (run / "results.json").write_text(json.dumps(results))
    import re

    from elr_harness.core.errors import BadInput

    with pytest.raises(BadInput, match=re.escape(
            "results.json cannot be read: the integer 100000000000...(401 digits) is wider "
            "than 64 bits; report.html is left as it was")):
        build_report(run, ReportConfig())


# -- serve --


def test_host_must_be_an_address_and_the_host_header_the_servers() -> None:
    from elr_harness.report.serve import bind_address, host_allowed

    loopback, every = bind_address("127.0.0.1"), bind_address("0.0.0.0")
    assert str(bind_address("localhost")) == "127.0.0.1"
    for name in ("localhost:8080", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST:8080"):
        assert host_allowed(name, loopback, 8080), name
    for name in ("evil.example:8080", "localhost:9999", "localhost", "", None,
                 "127.0.0.1.evil.example:8080", "10.0.0.5:8080"):
        assert not host_allowed(name, loopback, 8080), name
    assert host_allowed("localhost", loopback, 80)
    # bound to every interface: any IP literal (a rebinding page sends a name)
    assert host_allowed("192.168.1.5:8080", every, 8080)
    assert host_allowed("[fe80::1]:8080", every, 8080)
    assert not host_allowed("evil.example:8080", every, 8080)
    assert host_allowed("192.168.1.5:8080", bind_address("192.168.1.5"), 8080)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(port: int, path: str, host: str | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", host or f"127.0.0.1:{port}")
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _serving(store: Path, *extra: str) -> tuple[subprocess.Popen, int]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "elr_harness.cli", "serve", "--store", store, "--port", str(port),
         *extra], cwd=store.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError(proc.communicate()[1].decode(errors="replace"))


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=15)
    return err.decode(errors="replace")


def test_serve_never_overwrites_a_users_index_html(tmp_path: Path) -> None:
    store = tmp_path / "site"
    store.mkdir()
    (store / "index.html").write_text("<html>my own page, not the harness's</html>")
    before = digests(store)
    proc, port = _serving(store)
    try:
        status, page = _request(port, "/")
        assert status == 200 and b"elr-harness runs (0)" in page  # from memory
        status, page = _request(port, "/index.html")  # the harness's, not the user's
        assert status == 200 and b"elr-harness runs (0)" in page
        assert b"my own page" not in page
    finally:
        err = _stop(proc)
    assert digests(store) == before and "Traceback" not in err


def _run(store: Path, test: str, when: str | bytes) -> Path:
    run = Path(os.fsdecode(os.path.join(os.fsencode(store / test), os.fsencode(when))))
    run.mkdir(parents=True)
    (run / "test.json").write_text(json.dumps({"test": test, "nemesis": "kill"}))
    return run


def _harness_report(run: Path) -> Path:
    """A report.html as the harness marks its own (build_report's marker)."""
    from elr_harness.report.atomic import REPORT_GENERATOR

    (run / "report.html").write_text(f"<!DOCTYPE html>\n<html><head>{REPORT_GENERATOR}"
                                     "</head><body>the harness's report</body></html>\n")
    return run / "report.html"


def test_serve_answers_only_to_its_name_and_never_prints_a_traceback(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _harness_report(_run(store, "kill", "20261120T090000"))
    _run(store, "kill", "20261399T999999")  # digits, but no time
    (_run(store, "kill", "20261121T090000") / "results.json").write_text(DEEP)
    (_run(store, os.fsdecode(b"kill\xff"), "20261122T090000") / "report.html").write_text("r")
    proc, port = _serving(store)
    try:
        status, page = _request(port, "/")
        assert status == 200, page
        text = page.decode()
        assert "elr-harness runs (4)" in text and "20261399T999999" in text
        assert "unreadable: results.json cannot be read: JSON nested deeper" in text
        assert "kill\N{REPLACEMENT CHARACTER}" in text and "kill%FF/20261122T090000" in text
        assert _request(port, "/%00")[0] == 404
        assert _request(port, "/kill/%00/test.json")[0] == 404
        for host in ("evil.example", f"evil.example:{port}", f"localhost:{port + 1}"):
            assert _request(port, "/", host)[0] == 421, host
            assert _request(port, "/kill/20261120T090000/report.html", host)[0] == 421, host
        assert _request(port, "/kill/20261120T090000/report.html",
                        f"localhost:{port}")[0] == 200
    finally:
        err = _stop(proc)
    assert "Traceback" not in err, err
    assert not (store / "index.html").exists(), "serve writes nothing"


def test_serve_answers_only_what_the_harness_wrote(tmp_path: Path) -> None:
    """#52: the reports, the index, a soak's index and the run logs it links to;
    no dotfile, no listing, no file of anyone else's, whatever its name."""
    store = tmp_path / "store"
    run = _run(store, "kill", "20261120T090000")
    _harness_report(run)
    (run / "history.jsonl").write_text("{}\n")
    users = _run(store, "kill", "20261121T090000")
    (users / "report.html").write_text("<html>a user's page named report.html</html>")
    hidden = _run(store, ".hidden", "20261122T090000")
    _harness_report(hidden)
    (store / ".secret").write_text("a secret")
    (run / ".secret").write_text("a secret")
    (store / "latest").symlink_to("kill/20261120T090000")
    soak = store / "soak" / "20261125T100000"
    (soak / "runs").mkdir(parents=True)
    (soak / "soak.json").write_text("{}")
    (soak / "index.html").write_text("<!DOCTYPE html><html>the soak's index</html>")
    (soak / "junit.xml").write_text("<testsuites/>")
    (soak / "runs" / "0000.log").write_text("the run's log")
    (soak / "runs" / "notes.txt").write_text("a note")
    not_a_soak = store / "elsewhere"
    (not_a_soak / "runs").mkdir(parents=True)
    (not_a_soak / "index.html").write_text("<html>someone's</html>")
    (not_a_soak / "runs" / "0000.log").write_text("someone's log")
    served = {
        "/": 200, "/index.html": 200,
        "/kill/20261120T090000/report.html": 200, "/latest/report.html": 200,
        "/soak/20261125T100000/index.html": 200, "/soak/20261125T100000/runs/0000.log": 200,
        # the user's, a dotfile, a listing, what the harness keeps but does not link
        "/kill/20261121T090000/report.html": 404, "/.hidden/20261122T090000/report.html": 404,
        "/.secret": 404, "/kill/20261120T090000/.secret": 404, "/%2Esecret": 404,
        "/kill/": 404, "/kill/20261120T090000/": 404, "/soak/": 404,
        "/kill/20261120T090000/test.json": 404, "/kill/20261120T090000/history.jsonl": 404,
        "/soak/20261125T100000/soak.json": 404, "/soak/20261125T100000/junit.xml": 404,
        "/soak/20261125T100000/runs/notes.txt": 404,
        "/elsewhere/index.html": 404, "/elsewhere/runs/0000.log": 404,
    }
    proc, port = _serving(store)
    try:
        got = {path: _request(port, path)[0] for path in served}
        status, page = _request(port, "/kill/20261120T090000/report.html")
        assert b"the harness's report" in page
    finally:
        err = _stop(proc)
    assert got == served
    assert "Traceback" not in err, err


def test_serve_on_every_interface_says_so_in_one_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    proc, port = _serving(store, "--host", "0.0.0.0")
    try:
        assert _request(port, "/")[0] == 200
    finally:
        err = _stop(proc)
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "0.0.0.0" in warnings[0] and "beyond this machine" in warnings[0]


def test_a_killed_checks_staging_folder_is_swept_and_nothing_else(tmp_path, monkeypatch):
    """kill -9 skips a check's cleanup: the next check removes the staging folders
    of dead checks that carry the checker's marker, and only those."""
    from elr_harness.checker import staging

    monkeypatch.setenv("ELR_HARNESS_CACHE", str(tmp_path / "cache"))
    base = staging.staging_base()
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = base / f"elr-check-{dead.pid}-abc"
    left.mkdir()
    (left / staging.MARKER).touch()
    (left / "link-0").symlink_to(tmp_path)
    unmarked = base / f"elr-check-{dead.pid}-def"  # named like ours, not marked: kept
    unmarked.mkdir()
    alive = base / f"elr-check-{os.getpid()}-ghi"  # a check still running: kept
    alive.mkdir()
    (alive / staging.MARKER).touch()
    with staging.Staging() as stage:
        assert (stage.root / staging.MARKER).is_file()
        assert not left.exists() and unmarked.is_dir() and alive.is_dir()
    assert tmp_path.is_dir(), "the swept folder's link was not followed"
    assert not stage.root.exists()
