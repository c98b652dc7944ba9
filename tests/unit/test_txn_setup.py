"""`harness run --workload/--txn-client/--txn-version`: the flags into the typed
config, the checks that need the Kafka under test (before any container), test.json's
`transactions`, and the Workload driving both workloads together (scripted clients
stand in for librdkafka; Kafka itself: a real run)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from run_flags import run_configs_of
from test_workloads_consumers import FakeMessage, ScriptedConsumer
from test_workloads_producers import ScriptedProducer as PlainProducer
from test_workloads_producers import check_process_discipline
from test_workloads_txn import ScriptedProducer as TxnProducer

from elr_harness.cluster.distribution import KafkaDistribution
from elr_harness.core.config import ClusterConfig, TopicConfig, WorkloadConfig
from elr_harness.core.errors import BadInput
from elr_harness.run.transactions import (
    check_transactions,
    transaction_version_of,
    transactions_json,
)
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.workload import Workload


def fake_dist(tmp_path: Path, version: str, feature: bool = False) -> KafkaDistribution:
    libs = tmp_path / f"kafka-{version}" / "libs"
    libs.mkdir(parents=True)
    with zipfile.ZipFile(libs / f"kafka-clients-{version}.jar", "w") as jar:
        jar.writestr("kafka/kafka-version.properties", f"version={version}\n")
    if feature:
        with zipfile.ZipFile(libs / f"kafka-server-common-{version}.jar", "w") as jar:
            jar.writestr("org/apache/kafka/server/common/TransactionVersion.class", b"")
    return KafkaDistribution(libs.parent, version, str(libs.parent))


# -- flags --------------------------------------------------------------------------


def test_a_plain_run_is_configured_as_before(tmp_path: Path) -> None:
    cluster, _, workload, _, _ = run_configs_of(tmp_path, "none")
    assert workload.workloads == ("plain",) and workload.txn_client == "java"
    assert cluster.transaction_version is None and cluster.guard_internal_topics is False


def test_the_txn_flags_set_the_workload_and_the_cluster(tmp_path: Path) -> None:
    cluster, _, workload, _, _ = run_configs_of(
        tmp_path, "none", "--workload", "plain,txn", "--txn-client", "librdkafka",
        "--txn-version", "1")
    assert workload.workloads == ("plain", "txn") and workload.txn_client == "librdkafka"
    assert cluster.transaction_version == 1 and cluster.guard_internal_topics is True
    cluster, _, workload, _, _ = run_configs_of(tmp_path, "none", "--workload", "txn")
    assert workload.workloads == ("txn",) and cluster.guard_internal_topics is True


def test_a_config_file_sets_them_too_and_a_flag_wins(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[workload]\nworkloads = ["txn"]\ntxn_producers = 4\n'
                      '[cluster]\ntransaction_version = 2\n')
    cluster, _, workload, _, _ = run_configs_of(tmp_path, "none", "--config", str(config))
    assert workload.workloads == ("txn",) and workload.txn_producers == 4
    assert cluster.transaction_version == 2 and cluster.guard_internal_topics
    cluster, _, workload, _, _ = run_configs_of(tmp_path, "none", "--config", str(config),
                                                "--workload", "plain", "--txn-version", "1")
    assert workload.workloads == ("plain",) and cluster.transaction_version == 1


@pytest.mark.parametrize("flags, words", [
    (["--workload", "eos"], "--workload: 'eos' is not yet built"),
    (["--workload", "plain,eos"], "--workload: 'eos' is not yet built"),
    (["--workload", "txn,txn"], "--workload: workloads repeat"),
    (["--txn-client", "kafka-python"], "--txn-client: 'kafka-python' is not one of java, "
                                       "librdkafka"),
    (["--txn-version", "0"], "--txn-version: 0 is not between 1 and 2"),
])
def test_bad_txn_flags_are_refused_by_name(tmp_path: Path, flags, words) -> None:
    with pytest.raises(BadInput, match=words):
        run_configs_of(tmp_path, "none", *flags)


# -- checks against the Kafka under test -----------------------------------------


def test_a_release_without_transaction_version_refuses_it(tmp_path: Path) -> None:
    old = fake_dist(tmp_path, "3.9.0")
    asked = replace(ClusterConfig(), transaction_version=2)
    with pytest.raises(BadInput, match=r"--txn-version 2: Kafka 3\.9\.0 cannot finalize "
                                       r"transaction\.version \(the feature exists from "
                                       r"Kafka 4\.0\)"):
        check_transactions(asked, WorkloadConfig(), old, print)
    check_transactions(ClusterConfig(), WorkloadConfig(), old, print)  # not asked: fine
    for version in ("4.0.0", "4.4.0"):
        check_transactions(asked, WorkloadConfig(), fake_dist(tmp_path, version), print)
    # a build whose version says nothing: its jars say whether it has the feature
    with pytest.raises(BadInput, match="Kafka unknown cannot finalize"):
        check_transactions(asked, WorkloadConfig(), fake_dist(tmp_path / "a", "unknown"), print)
    check_transactions(asked, WorkloadConfig(),
                       fake_dist(tmp_path / "b", "unknown", feature=True), print)


def test_the_java_client_needs_a_jar_and_a_jdk_only_with_txn(tmp_path: Path,
                                                             monkeypatch) -> None:
    from elr_harness.workloads import txn_jvm

    dist = fake_dist(tmp_path, "4.4.0")
    (dist.libs / "kafka-clients-4.4.0.jar").unlink()
    txn = WorkloadConfig(workloads=("plain", "txn"))
    with pytest.raises(BadInput, match="holds no kafka-clients"):
        check_transactions(ClusterConfig(), txn, dist, print)
    check_transactions(ClusterConfig(), replace(txn, txn_client="librdkafka"), dist, print)
    check_transactions(ClusterConfig(), WorkloadConfig(), dist, print)  # plain: nothing
    monkeypatch.setattr(txn_jvm.shutil, "which", lambda tool: None)
    with pytest.raises(BadInput, match="javac is not on PATH"):
        check_transactions(ClusterConfig(), txn, fake_dist(tmp_path / "x", "4.4.0"), print)


def harness(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    work = tmp_path / "cwd"
    work.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "elr_harness.cli", "run", *args],
                          capture_output=True, text=True, timeout=300, cwd=work,
                          env={**os.environ, "ELR_HARNESS_CACHE": str(tmp_path / "cache"),
                               **(env or {})})


@pytest.mark.parametrize("case", ["old-release", "no-jdk"])
def test_refused_before_any_container_in_one_line(tmp_path: Path, case: str) -> None:
    """Judged on the distribution before the engine is even asked for: no Docker engine
    answers here, and the refusal is still the settings' own line."""
    if case == "old-release":
        dist = fake_dist(tmp_path, "3.9.0")
        args, env, words = ["--txn-version", "2"], {}, "Kafka 3.9.0 cannot finalize"
    else:
        dist = fake_dist(tmp_path, "4.4.0")
        (tmp_path / "bin").mkdir()
        args, env, words = [], {"PATH": str(tmp_path / "bin")}, "javac is not on PATH"
    proc = harness(tmp_path, "--workload", "plain,txn", "--kafka-dist", str(dist.home),
                   *args, env={"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock", **env})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and words in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "Docker" not in proc.stderr
    assert list((tmp_path / "cwd").iterdir()) == []  # no store, no run directory


# -- test.json ---------------------------------------------------------------------


def test_test_json_says_the_transactions_of_a_txn_run_only() -> None:
    txn = WorkloadConfig(workloads=("plain", "txn"), txn_client="librdkafka",
                         txn_producers=3, txn_timeout_ms=9000, txn_hang_margin_ms=7000)
    assert transactions_json(ClusterConfig(), WorkloadConfig(), "4.4.0") is None
    assert transactions_json(ClusterConfig(), txn, "4.4.0") == {
        "enabled": True, "client": "librdkafka", "transaction_version": 2,
        "transaction_version_requested": None, "transaction_timeout_ms": 9000,
        "abort_check_interval_ms": ClusterConfig().timings.transaction_abort_check_interval_ms,
        "hang_margin_ms": 7000, "producers": 3, "read_committed_consumers": 1}
    asked = replace(ClusterConfig(), transaction_version=1)
    assert transactions_json(asked, txn, "4.4.0")["transaction_version"] == 1
    assert transaction_version_of(ClusterConfig(), "3.9.0") is None
    assert transaction_version_of(ClusterConfig(), "4.0.2") == 2


# -- the workload drives both --------------------------------------------------------


def run_workload(tmp_path: Path, config: WorkloadConfig) -> list[dict]:
    workload = Workload(
        producer_factory=lambda conf: PlainProducer(itertools.cycle(["ok"])),
        consumer_factory=lambda conf: ScriptedConsumer([[FakeMessage(0, 0, b"0")]],
                                                       {0: (0, 5), 1: (0, 5)}),
        txn_producer_factory=lambda conf: TxnProducer())
    path = tmp_path / "history.jsonl"
    with HistoryRecorder(path) as recorder:
        workload.start(["127.0.0.1:9"], [TopicConfig(name="t", partitions=2)], recorder,
                       replace(config, observe=False))
        assert workload.wait(10)
        workload.stop()
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_workload_runs_plain_and_txn_clients_with_unique_values(tmp_path: Path) -> None:
    config = WorkloadConfig(producers=2, acks=("all", "1"), processes_per_client=1, rate=200,
                            time_limit_s=0.6, poll_timeout_s=0.05, stop_timeout_s=0.5,
                            workloads=("plain", "txn"), txn_client="librdkafka",
                            txn_producers=2, txn_rate=100, read_committed_consumers=1)
    started = time.monotonic()
    ops = run_workload(tmp_path, config)
    assert time.monotonic() - started < 10
    sends = [op for op in ops if op["f"] == "send"]
    txns = [op for op in ops if op["f"] == "txn"]
    check_process_discipline(sends)
    assert sends and txns
    invokes = [op for op in txns if op["type"] == "invoke"]
    assert {op["txn_id"] for op in invokes} == {"elr-txn-librdkafka-0", "elr-txn-librdkafka-1"}
    assert all(op["client"] == "librdkafka" for op in invokes)
    assert len({op["process"] for op in invokes}) == 2
    assert 0.3 * 100 * 0.6 < len(invokes) <= 100 * 0.6 + 10  # paced by txn_rate
    values = [op["value"] for op in sends if op["type"] == "invoke"] + \
        [v for op in invokes for _, _, v in op["sends"]]
    assert len(values) == len(set(values))  # one counter for plain sends and txns
    assert all(op["type"] == "ok" for op in txns if op["type"] != "invoke")
    assert len(invokes) == len(txns) - len(invokes)  # every transaction completed
    polls = [op for op in ops if op["f"] == "poll" and op["type"] == "invoke"]
    assert {op.get("isolation") for op in polls} == {None, "read_committed"}


def test_a_txn_only_workload_starts_no_plain_client(tmp_path: Path) -> None:
    config = WorkloadConfig(time_limit_s=0.3, poll_timeout_s=0.05, stop_timeout_s=0.5,
                            workloads=("txn",), txn_client="librdkafka", txn_producers=1,
                            read_committed_consumers=0)
    ops = run_workload(tmp_path, config)
    assert ops and {op["f"] for op in ops} == {"txn"}
