"""`harness check` on awkward input: exit codes, messages, results.json, and the
history left byte-for-byte as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from checker_fixtures import run_python
from synthetic import Injection, SyntheticSpec, synthetic_test_json, write_run_dir

from elr_harness.cli.main import main

pytestmark = pytest.mark.usefixtures("spark")


def _check(target: Path) -> tuple[int, dict | None]:
    code = main(["check", str(target)])
    results_path = (target if target.is_dir() else target.parent) / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else None
    return code, results


def _lines(*ops: dict) -> str:
    return "".join(json.dumps({"index": i, "time": 1000 * (i + 1), **op}) + "\n"
                   for i, op in enumerate(ops))


def test_valid_and_invalid_runs_exit_0_and_1(tmp_path, capsys):
    write_run_dir(tmp_path / "ok", SyntheticSpec(lines=400, seed=1))
    assert _check(tmp_path / "ok")[0] == 0
    out = capsys.readouterr().out
    assert "results" in out and str(tmp_path / "ok" / "results.json") in out
    write_run_dir(tmp_path / "bad", SyntheticSpec(lines=400, seed=1, injections=(
        Injection("aborted-read", at=0.5),)))
    code, results = _check(tmp_path / "bad" / "history.jsonl")
    assert code == 1 and results["bad_anomaly_types"] == ["aborted-read"]
    assert "aborted-read" in capsys.readouterr().out


def test_cut_short_last_line_is_ignored_counted_and_unknown(tmp_path):
    generated = write_run_dir(tmp_path, SyntheticSpec(lines=400, seed=2))
    history = tmp_path / "history.jsonl"
    with history.open("a") as f:
        f.write('{"index": ' + str(generated.lines) + ', "time": 99999999, "process": 3, "ty')
    before = history.read_bytes()
    code, results = _check(tmp_path)
    assert code == 2
    assert results["valid"] == "unknown" and "cut short" in results["reason"]
    assert results["stats"]["truncated_lines"] == 1
    assert results["stats"]["history_lines"] == generated.lines + 1
    assert results["anomalies"] == {}
    assert history.read_bytes() == before  # evidence is never rewritten


def test_malformed_line_in_the_middle_names_its_line_number(tmp_path, capsys):
    write_run_dir(tmp_path, SyntheticSpec(lines=400, seed=3))
    history = tmp_path / "history.jsonl"
    lines = history.read_text().splitlines(keepends=True)
    middle = len(lines) // 2
    lines[middle] = '{"index": ' + str(middle) + ', "time": oops}\n'
    history.write_text("".join(lines))
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"line {middle + 1} " in err and "Traceback" not in err
    assert not (tmp_path / "results.json").exists()


def test_a_line_missing_required_fields_is_malformed(tmp_path, capsys):
    history = tmp_path / "history.jsonl"
    send = {"process": 0, "f": "send", "topic": "t", "partition": 0, "acks": "1", "value": 1}
    history.write_text(_lines({**send, "type": "invoke"}, send,
                              {**send, "type": "ok", "offset": 0}))
    assert main(["check", str(history)]) == 2
    assert "line 2 is not a valid history line: required field 'type' is missing" in \
        " ".join(capsys.readouterr().err.split())


def test_a_line_missing_a_field_its_kind_requires_is_malformed(tmp_path, capsys):
    """HISTORY.md's tables: an ok send (acks 1) has an offset; docs/CHECKING.md."""
    history = tmp_path / "history.jsonl"
    send = {"process": 0, "f": "send", "topic": "t", "partition": 0, "acks": "1", "value": 1}
    history.write_text(_lines({**send, "type": "invoke"}, {**send, "type": "ok"}))
    assert main(["check", str(history)]) == 2
    assert "line 2 is not a valid history line: field 'offset' is required on ok send lines" in \
        " ".join(capsys.readouterr().err.split())


def test_empty_history_is_unknown_with_a_reason(tmp_path):
    (tmp_path / "history.jsonl").write_text("")
    code, results = _check(tmp_path)
    assert code == 2 and results["valid"] == "unknown"
    assert "empty" in results["reason"]


def test_missing_history_and_bad_test_json_are_clear_errors(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nowhere")]) == 2
    assert "no history" in capsys.readouterr().err
    write_run_dir(tmp_path, SyntheticSpec(lines=100, seed=4))
    (tmp_path / "test.json").write_text("{not json")
    assert main(["check", str(tmp_path)]) == 2
    assert "test.json" in capsys.readouterr().err


def test_hand_written_edge_cases_are_not_anomalies(tmp_path):
    """An info send that shows up, one that never does, an acks=0 ok without an
    offset, a poll after a backwards seek, unknown extra fields, no test.json."""
    t = {"topic": "t", "partition": 0}
    history = tmp_path / "history.jsonl"
    history.write_text(_lines(
        {"process": 0, "type": "invoke", "f": "send", **t, "acks": "all", "value": 1},
        # an unknown extra field (`client` is a txn field of the contract since v4)
        {"process": 0, "type": "ok", "f": "send", **t, "acks": "all", "value": 1, "offset": 0,
         "client_stats": {"retries": 2}},
        {"process": 1, "type": "invoke", "f": "send", **t, "acks": "1", "value": 2},
        {"process": 1, "type": "info", "f": "send", **t, "acks": "1", "value": 2,
         "error": "REQUEST_TIMED_OUT"},
        {"process": 2, "type": "invoke", "f": "send", **t, "acks": "1", "value": 3},
        {"process": 2, "type": "info", "f": "send", **t, "acks": "1", "value": 3,
         "error": "NOT_ENOUGH_REPLICAS_AFTER_APPEND"},
        {"process": 4, "type": "invoke", "f": "send", **t, "acks": "0", "value": 4},
        {"process": 4, "type": "ok", "f": "send", **t, "acks": "0", "value": 4,
         "offset": None},
        {"process": 5, "type": "invoke", "f": "poll", "topic": "t"},
        {"process": 5, "type": "ok", "f": "poll", "topic": "t",
         "records": [[0, 0, 1], [0, 1, 2], [0, 2, 4]], "high_watermark": {"0": 3}},
        {"process": 5, "type": "invoke", "f": "poll", "topic": "t", "seek": {"0": 1}},
        {"process": 5, "type": "ok", "f": "poll", "topic": "t", "records": [[0, 1, 2]]},
        {"process": -2, "type": "ok", "f": "observe", **t, "leader": 1, "leader_epoch": 3,
         "isr": [1], "elr": [2, 3], "last_known_elr": [], "high_watermark": 3},
        {"process": -2, "type": "ok", "f": "observe", **t, "leader": 1, "leader_epoch": 3,
         "isr": [1, 2, 3], "elr": None, "last_known_elr": None},
        {"process": 6, "type": "invoke", "f": "poll", "topic": "t", "final": True,
         "partitions": [0], "seek": {"0": 0}},
        {"process": 6, "type": "ok", "f": "poll", "topic": "t", "final": True,
         "partitions": [0], "records": [[0, 0, 1], [0, 1, 2], [0, 2, 4]]},
        {"process": 7, "type": "invoke", "f": "send", **t, "acks": "all", "value": 5},
    ))
    code, results = _check(tmp_path)
    assert results["anomalies"] == {}, results["anomalies"]
    assert code == 0 and results["valid"] is True
    assert results["stats"]["sends_ok"] == {"all": 1, "1": 0, "0": 1}
    assert results["stats"]["ops"]["send"]["invoke"] == {"0": 1, "1": 2, "all": 2}


def test_history_without_final_reads_is_unknown(tmp_path):
    history = tmp_path / "history.jsonl"
    history.write_text(_lines(
        {"process": 0, "type": "invoke", "f": "send", "topic": "t", "partition": 0,
         "acks": "all", "value": 1},
        {"process": 0, "type": "ok", "f": "send", "topic": "t", "partition": 0,
         "acks": "all", "value": 1, "offset": 0}))
    code, results = _check(tmp_path)
    assert code == 2 and results["valid"] == "unknown"
    assert "no final reads" in results["reason"]
    assert results["anomalies"]["unseen"]["by_acks"] == {"all": 1, "1": 0, "0": 0}


def test_a_check_stops_the_spark_it_started(tmp_path):
    """check_path starts Spark in a helper thread; it must still stop it (a run
    builds its report after the check, without the JVM's heap held)."""
    write_run_dir(tmp_path / "run", SyntheticSpec(lines=400, seed=3))
    run = run_python(f"""
        from pyspark.sql import SparkSession
        from elr_harness.checker.check import check_path
        from elr_harness.core.config import CheckerConfig
        results, _ = check_path({str(tmp_path / 'run')!r}, CheckerConfig())
        print('valid', results['valid'], 'spark left running:',
              SparkSession.getActiveSession() is not None)
        """)
    assert "valid True spark left running: False" in run.stdout, run.stdout + run.stderr


def test_a_run_checks_in_the_session_it_started_early_and_stops_it(tmp_path):
    """`harness run` starts Spark while collect runs (EarlyStart); the check then
    uses that very session, and stops it when done. A start no check follows
    ends with its JVM gone."""
    write_run_dir(tmp_path / "run", SyntheticSpec(lines=400, seed=3))
    history = tmp_path / "run" / "history.jsonl"
    run = run_python(f"""
        from pathlib import Path
        from pyspark.sql import SparkSession
        from elr_harness.checker import spark
        from elr_harness.checker.check import check_in_own_session
        from elr_harness.core.config import CheckerConfig
        config = CheckerConfig()
        early = spark.EarlyStart(config, 1000)
        early.wait()
        started = spark.running_session().sparkContext.applicationId
        seen = []
        checked = spark.get_spark
        spark.get_spark = lambda *a, **k: seen.append(
            checked(*a, **k).sparkContext.applicationId) or checked(*a, **k)
        # the check's time counts from when the run began waiting for the session
        import time
        results = check_in_own_session(Path({str(history)!r}), None, config,
                                       time.monotonic() - 30)
        print('valid', results['valid'], 'same session', seen == [started],
              'left running', SparkSession.getActiveSession() is not None,
              'counted the wait', results['stats']['checker_seconds'] >= 30)
        again = spark.EarlyStart(config, 1000)
        again.wait()
        proc = spark._gateway.proc
        again.cancel(30)
        print('cancelled: jvm exited', proc.poll() is not None,
              'session', spark.running_session())
        """)
    assert "valid True same session True left running False counted the wait True" \
        in run.stdout, \
        run.stdout + run.stderr
    assert "cancelled: jvm exited True session None" in run.stdout, run.stdout + run.stderr


def test_the_soaks_checker_ends_its_jvm_and_what_a_ctrl_c_left(tmp_path):
    """SoakChecker.close() (the soak's end, a Ctrl-C's too): the JVM is gone, and
    a conversion folder a cut-short check gave up on is removed after it."""
    write_run_dir(tmp_path / "run", SyntheticSpec(lines=400, seed=3))
    left = tmp_path / "run" / "abandoned-conversion"
    run = run_python(f"""
        from pathlib import Path
        from elr_harness.checker import load, spark
        from elr_harness.soak.check import SoakChecker
        checker = SoakChecker()
        code = checker.check(Path({str(tmp_path / 'run')!r}), Path({str(tmp_path / 'log')!r}),
                             None)
        proc = spark._gateway.proc
        Path({str(left)!r}).mkdir()
        load._abandoned.append(Path({str(left)!r}))
        checker.close()
        print('code', code, 'jvm exited', proc.poll() is not None,
              'folder left', Path({str(left)!r}).exists())
        """)
    assert "code 0 jvm exited True folder left False" in run.stdout, run.stdout + run.stderr


def test_a_session_on_another_master_is_replaced_from_any_thread():
    """get_spark runs in check_history's helper thread: it must still see the
    running context, reuse it for the same master and replace it for another."""
    run = run_python("""
        from concurrent.futures import ThreadPoolExecutor
        from elr_harness.checker.spark import get_spark
        from elr_harness.core.config import CheckerConfig
        def master(m):
            with ThreadPoolExecutor(1) as pool:
                session = pool.submit(get_spark, CheckerConfig(spark_master=m)).result()
            return session.sparkContext.master, id(session.sparkContext)
        first, again, other = master('local[2]'), master('local[2]'), master('local[1]')
        print('same', first == again, 'other', other[0])
        """)
    assert "same True other local[1]" in run.stdout, run.stdout + run.stderr


def test_a_setting_for_the_checks_gives_back_the_one_before(spark):  # noqa: F811
    """The checks plan with their own SQL setting; a user's (spark_conf) comes back."""
    from elr_harness.checker.spark import session_conf

    key = "spark.sql.execution.bypassPartialAggregation"
    spark.conf.set(key, "false")
    with session_conf(spark, key, "true"):
        assert spark.conf.get(key) == "true"
    assert spark.conf.get(key) == "false"
    spark.conf.unset(key)
    with session_conf(spark, key, "true"):
        pass
    assert spark.conf.get(key, None) is None  # not set by anyone again: Spark's default


def test_the_program_returns_once_its_spark_jvm_has_exited(tmp_path):
    """Run as a program, `harness check` ends the JVM it launched and waits for it:
    nothing of its process group outlives it, and Spark's scratch folders are gone
    (a JVM left to exit after Python kept them when its group was killed)."""
    write_run_dir(tmp_path / "run", SyntheticSpec(lines=400, seed=4))
    scratch = tmp_path / "spark-scratch"
    scratch.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "elr_harness.cli", "check",
                             str(tmp_path / "run")],
                            cwd=Path(__file__).resolve().parents[2],
                            env={**os.environ, "SPARK_LOCAL_DIRS": str(scratch)},
                            start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, output
    assert _living(proc.pid) == [], "left running in its process group"
    assert list(scratch.iterdir()) == []


def _living(group: int) -> list[str]:
    """The processes of a process group (its own session: the group's id is its
    first process's pid) that are not zombies. spark-class's process substitution
    leaves a zombie bash whose parent is the JVM; when the JVM exits it is handed
    to init, which reaps it at once on an idle machine and a moment later on a
    loaded one: a zombie runs nothing and holds no folder."""
    listed = subprocess.run(["ps", "-o", "pid=,stat=,args=", "-g", str(group)],
                            capture_output=True, text=True).stdout
    return [line.strip() for line in listed.splitlines()
            if line.split() and not line.split()[1].startswith("Z")]


def test_the_installed_command_is_that_program():
    """The `harness` script pip installs calls entry(), not main()."""
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["harness"] == "elr_harness.cli.main:entry"


def _stale_last_known_elr_run(run_dir: Path) -> None:
    """Issue #50's wrong VALID, small: a full ISR [1, 2, 3] observed with
    last_known_elr [2] (HISTORY.md's elr-invariant: "ELR or LastKnownELR not empty
    while the ISR has >= min ISR members"), every write acked and read back."""
    run_dir.mkdir()
    (run_dir / "test.json").write_text(json.dumps(synthetic_test_json(SyntheticSpec(
        topic="t", partitions=1)), indent=2))
    observe = {"process": -2, "type": "ok", "f": "observe", "topic": "t", "partition": 0,
               "leader": 1, "leader_epoch": 3, "isr": [1, 2, 3], "elr": []}
    (run_dir / "history.jsonl").write_text(_lines(
        {"process": 0, "type": "invoke", "f": "send", "topic": "t", "partition": 0,
         "acks": "all", "value": 1},
        {"process": 0, "type": "ok", "f": "send", "topic": "t", "partition": 0,
         "acks": "all", "value": 1, "offset": 0},
        {**observe, "last_known_elr": []},
        {**observe, "last_known_elr": [2]},
        {**observe, "last_known_elr": [2]},
        {"process": 9, "type": "invoke", "f": "poll", "topic": "t", "final": True,
         "seek": {"0": 0}},
        {"process": 9, "type": "ok", "f": "poll", "topic": "t", "final": True,
         "records": [[0, 0, 1]], "high_watermark": {"0": 1}}))


def test_a_full_isr_with_a_last_known_elr_is_invalid(tmp_path, capsys):
    """`harness check` says INVALID, elr-invariant on both observations, and the
    example names the list that broke the invariant."""
    _stale_last_known_elr_run(tmp_path / "run")
    code, results = _check(tmp_path / "run")
    assert code == 1 and results["valid"] is False
    assert results["bad_anomaly_types"] == ["elr-invariant"]
    assert results["anomalies"]["elr-invariant"]["count"] == 2
    said = results["anomalies"]["elr-invariant"]["examples"][0]["description"]
    assert said.startswith("observed LastKnownELR [2] is not empty while ISR [1,2,3]"), said
    assert "elr-invariant" in capsys.readouterr().out


def test_the_soaks_warm_checker_finds_it_too(tmp_path):
    _stale_last_known_elr_run(tmp_path / "run")
    run = run_python(f"""
        import json
        from pathlib import Path
        from elr_harness.soak.check import SoakChecker
        checker = SoakChecker()
        code = checker.check(Path({str(tmp_path / 'run')!r}), Path({str(tmp_path / 'log')!r}),
                             None)
        checker.close()
        results = json.loads(Path({str(tmp_path / 'run' / 'results.json')!r}).read_text())
        print('code', code, 'bad', results['bad_anomaly_types'])
        """)
    assert "code 1 bad ['elr-invariant']" in run.stdout, run.stdout + run.stderr
