"""Bad input gets one clear message and exit 2, and starts nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _harness(*args: str, store: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args],
                          capture_output=True, text=True, timeout=300, cwd=store,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("args, message", [
    (["run", "--nemesis", "bogus"], "unknown nemesis 'bogus'; valid: none, unclean-last-replica"),
    (["run", "--acks", "all,2"], "unknown acks level '2'"),
    (["run", "--producers", "0"], "--producers must be at least 1"),
    (["run", "--replication-factor", "4"], "replication factor 4 is more than the 3 brokers"),
    (["run", "--min-insync-replicas", "4"], "min.insync.replicas 4 must be between 1"),
    (["run", "--controllers", "0"], "at least 1 controller"),
    (["run", "--nemesis", "unclean-last-replica", "--brokers", "2",
      "--replication-factor", "2"], "needs 3 brokers and replication factor 3"),
    (["run", "--kafka-version", "9.9.9"], "Kafka 9.9.9 does not resolve from Maven Central"),
    (["run", "--kafka-version", "3.9.0"], "Kafka 3.9.0 is not supported"),
    (["cluster", "up", "--topic", "t", "--replication-factor", "5"], "more than the 3 brokers"),
    (["run", "--subnet", "10.213.77.5/24"], "not an IPv4 subnet like 10.213.77.0/24"),
    (["run", "--subnet", "10.213.77.0/30"], "subnet 10.213.77.0/30 is too small"),
    (["run", "--topic", ""], "argument --topic: '' is not a Kafka topic name"),
    (["run", "--topic", "a/b"], "'a/b' is not a Kafka topic name"),
    (["run", "--topic", "x" * 300], "is not a Kafka topic name"),
    (["run", "--time-limit", "inf"], "argument --time-limit: 'inf' is not a finite number"),
    (["run", "--time-limit", "-5"], "argument --time-limit: '-5' is not a finite number >= 0"),
    (["run", "--rate", "nan"], "argument --rate: 'nan' is not a finite number"),
    (["run", "--interval", "nan"], "argument --interval: 'nan' is not a finite number"),
    (["serve", "--port", "99999"], "argument --port: port 99999 is not between 0 and 65535"),
    (["serve", "--port", "-1"], "argument --port: port -1 is not between 0 and 65535"),
    (["report", "y" * 300], "File name too long"),
    (["check", "y" * 300], "cannot read"),
    (["run", "--nemesis", "kill", "--interval", "1e-9"], "--interval must be at least 1 s"),
    (["run", "--client-debug", "bogus"], "--client-debug: 'bogus' is no librdkafka debug"),
    (["run", "--concurrency", "0"], "--concurrency must be a number >= 1, got 0"),
    (["run", "--name", ""], "argument --name: '' is not a cluster name"),
    (["cluster", "up", "--name=-x"], "'-x' is not a cluster name"),
    (["cluster", "status", "--name", "elr-nothing-here"], "is not up"),
    (["cluster", "logs", "--name", "elr-nothing-here"], "is not up"),
])
def test_bad_input_is_refused_before_anything_starts(tmp_path, args, message):
    proc = _harness(*args, store=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in " ".join(proc.stderr.split()), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "store").exists(), "no run directory for refused input"


def test_no_docker_engine_says_how_to_start_one(tmp_path):
    proc = _harness("cluster", "status", store=tmp_path,
                    env={"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"})
    assert proc.returncode == 2
    assert "no Docker engine answers" in proc.stderr and "scripts/setup.sh" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_store_that_is_a_file_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "store").write_text("not a folder")
    proc = _harness("run", "--nemesis", "none", "--store", "store", store=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Not a directory" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_run_with_no_docker_engine_leaves_no_run_directory(tmp_path):
    """A failed start must not move store/latest away from the last real run."""
    proc = _harness("run", "--nemesis", "none", store=tmp_path,
                    env={"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no Docker engine answers" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "store").exists()


def test_an_unreachable_spark_master_is_one_line_within_seconds(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").write_text(
        '{"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "poll", "topic": "t"}\n')
    started = time.monotonic()
    proc = _harness("check", str(run), "--spark-master", "spark://127.0.0.1:1", store=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == ("harness: Spark master spark://127.0.0.1:1 does not answer "
                                   "(no connection within 5 s); is it running?")
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("moment", ["converting", "checking"])
def test_ctrl_c_during_a_check_is_one_line_and_leaves_no_partial_table(tmp_path, moment):
    """A terminal's Ctrl-C reaches the whole process group: DuckDB raises "Query
    interrupted" and the JVM dies under py4j; the user still reads one line."""
    import signal

    from checkers.synthetic import SyntheticSpec, write_run_dir

    run = tmp_path / "run"
    write_run_dir(run, SyntheticSpec(lines=400_000))
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "check", str(run)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.monotonic() + 120

    def seen() -> bool:
        if moment == "converting":
            return any(run.glob("history.parquet.tmp-*"))
        return (run / "history.parquet").is_dir()

    while not seen() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    # into DuckDB's query; into the JVM's start or its first jobs
    time.sleep(0.3 if moment == "converting" else 2)
    assert proc.poll() is None, "the check ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, out + err
    assert err.strip() == "harness: interrupted", err
    assert not any(run.glob("history.parquet.tmp-*")), "a half-written table was left"
    assert not (run / "results.json").exists()
