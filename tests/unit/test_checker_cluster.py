"""The same check on a real Spark standalone cluster (master + one worker from
pyspark's own classes, on loopback) gives the same results.json as local mode."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from checker_fixtures import TEST_CONFIG
from synthetic import Injection, SyntheticSpec, synthetic_test_json, write_run_dir

from elr_harness.checker.check import check_history

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _wait(condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
            return int(json.load(r).get("aliveworkers", 0))
    except (OSError, ValueError):  # not listening yet, or an empty page while it starts
        return 0


@pytest.fixture
def standalone_cluster(tmp_path):
    """A master and a 1-core worker; yields the master URL, stops both after."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    logs = tmp_path / "cluster-logs"
    logs.mkdir()
    procs = []
    try:
        procs.append(subprocess.Popen(
            [str(_spark_class()), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(ui)],
            env=env, stdout=open(logs / "master.log", "wb"), stderr=subprocess.STDOUT))
        procs.append(subprocess.Popen(
            [str(_spark_class()), "org.apache.spark.deploy.worker.Worker",
             f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", "1",
             "--memory", "1g", "--webui-port", str(worker_ui),
             "--work-dir", str(tmp_path / "work")],
            env=env, stdout=open(logs / "worker.log", "wb"), stderr=subprocess.STDOUT))
        _wait(lambda: _alive_workers(ui) >= 1, "the worker to register with the master")
        yield f"spark://127.0.0.1:{port}"
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _without_timing(results: dict) -> dict:
    results = json.loads(json.dumps(results))
    results["stats"].pop("checker_seconds")
    return results


@pytest.mark.usefixtures("spark")
def test_standalone_cluster_gives_the_same_results_as_local(tmp_path, standalone_cluster):
    spec = SyntheticSpec(lines=1000, seed=21, injections=(
        Injection("lost-write", at=0.3, partition=0),
        Injection("poll-skip", at=0.5, partition=1),
        Injection("duplicate", at=0.7, partition=2)))
    write_run_dir(tmp_path / "cluster", spec)
    remote = subprocess.run(
        [sys.executable, "-m", "elr_harness.cli", "check", "--spark-master", standalone_cluster,
         str(tmp_path / "cluster")], cwd=ROOT, env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        capture_output=True, text=True, timeout=600)
    assert remote.returncode == 1, remote.stderr
    remote_results = json.loads((tmp_path / "cluster" / "results.json").read_text())
    # the same history checked by the test session's local[*] Spark
    write_run_dir(tmp_path / "local", spec)
    local_results = check_history(tmp_path / "local" / "history.jsonl", synthetic_test_json(spec),
                                  TEST_CONFIG)
    assert _without_timing(local_results) == _without_timing(remote_results)
    assert set(local_results["anomaly_types"]) == {"lost-write", "poll-skip", "duplicate"}
