"""The Java transactional client's Python side: its build (javac against the Kafka
under test's kafka-clients, cached by hash), its line protocol, and the real
client's JVM started against the cached kafka-clients jar (no broker: what is
checked is the program, its JSON and its clock; Kafka itself: a real run)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from elr_harness.core.config import WorkloadConfig, cache_dir
from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.workloads import txn_jvm
from elr_harness.workloads.txn_jvm import (
    JavaTxnClient,
    JavaTxnProcess,
    build_java_client,
    java_argv,
    outcome_of,
)
from elr_harness.workloads.txn_plan import TxnPlan

#: A kafka-clients jar of a release the harness resolved before, if any.
CACHED_LIBS = sorted(p.parent for p in (cache_dir() / "kafka").glob("*/libs/kafka-clients-*.jar"))
needs_jdk = pytest.mark.skipif(not CACHED_LIBS or shutil.which("javac") is None,
                               reason="needs a cached Kafka distribution and a JDK")
PLAN = TxnPlan((("t", 0, 7), ("u", 2, 8)), abort=False)


def fake_libs(tmp_path: Path, version: str = "4.4.0") -> Path:
    libs = tmp_path / "dist" / "libs"
    libs.mkdir(parents=True)
    with zipfile.ZipFile(libs / f"kafka-clients-{version}.jar", "w") as jar:
        jar.writestr("kafka/kafka-version.properties", f"version={version}\n")
    return libs


# -- the build ---------------------------------------------------------------------


def test_no_kafka_clients_jar_is_bad_input_naming_it(tmp_path: Path) -> None:
    (tmp_path / "libs").mkdir()
    with pytest.raises(BadInput, match="holds no kafka-clients-.*jar.*--txn-client librdkafka"):
        build_java_client(tmp_path / "libs", WorkloadConfig())


def test_no_jdk_is_bad_input_before_anything_compiles(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ELR_HARNESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(txn_jvm.shutil, "which", lambda tool: None)
    monkeypatch.setattr(txn_jvm.subprocess, "run", lambda *a, **k: pytest.fail("compiled"))
    with pytest.raises(BadInput, match=r"needs a JDK \(javac is not on PATH\)"):
        build_java_client(fake_libs(tmp_path), WorkloadConfig())


def test_a_client_that_does_not_compile_is_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ELR_HARNESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(txn_jvm.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(txn_jvm.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a[0], 1, "", "TxnClient.java:60: error: cannot find symbol\n  symbol: class X\n"))
    with pytest.raises(BadInput, match="does not compile against kafka-clients-4.4.0.jar: "
                                       "TxnClient.java:60: error: cannot find symbol$"):
        build_java_client(fake_libs(tmp_path), WorkloadConfig())
    assert not any((tmp_path / "cache" / "txn-client").glob("*/elrharness"))


@needs_jdk
def test_the_client_compiles_once_per_jar(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ELR_HARNESS_CACHE", str(tmp_path / "cache"))
    libs = CACHED_LIBS[-1]
    home = build_java_client(libs, WorkloadConfig())
    assert (home / "elrharness" / "TxnClient.class").is_file()
    assert (home / "log4j2.properties").is_file()
    assert home.parent == tmp_path / "cache" / "txn-client"
    monkeypatch.setattr(txn_jvm.subprocess, "run", lambda *a, **k: pytest.fail("compiled"))
    assert build_java_client(libs, WorkloadConfig()) == home  # cached by the jar's hash


def test_the_jvm_command_line_carries_the_clients_settings(tmp_path: Path) -> None:
    config = WorkloadConfig(txn_producers=3, txn_timeout_ms=9000, txn_max_block_ms=4000,
                            txn_commit_attempts=2)
    argv = java_argv(tmp_path / "classes", tmp_path / "libs", ["a:9092", "b:9092"], config,
                     "elr-txn-java-")
    main = argv.index(txn_jvm.MAIN_CLASS)
    assert argv[argv.index("-cp") + 1] == f"{tmp_path / 'classes'}:{tmp_path / 'libs'}/*"
    assert argv[main + 1:main + 5] == ["3", "2", "elr-txn-java-", "4000"]
    settings = dict(arg.split("=", 1) for arg in argv[main + 5:])
    assert settings["bootstrap.servers"] == "a:9092,b:9092"
    assert settings["transaction.timeout.ms"] == "9000" and settings["max.block.ms"] == "4000"
    assert settings["acks"] == "all" and settings["enable.idempotence"] == "true"


# -- the protocol, with a stand-in JVM -----------------------------------------------

#: A program speaking the client's protocol with scripted answers: slot 0 is ready at
#: once; a txn's answer is the next line of ANSWERS (by its slot); "die" exits.
FAKE_JVM = textwrap.dedent("""
    import json, sys
    answers = json.loads(sys.argv[1])
    print(json.dumps({"event": "started", "producers": 2, "nanos": 5}), flush=True)
    print("kafka-clients says hello on stderr", file=sys.stderr, flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[0] == "quit":
            print(json.dumps({"event": "exit"}), flush=True)
            break
        slot = int(words[1])
        if words[0] == "init":
            print(json.dumps({"event": "ready", "slot": slot}), flush=True)
            continue
        answer = answers.pop(0)
        if answer == "die":
            sys.exit(3)
        if answer == "garbage":
            print("not json", flush=True)
            continue
        answer.setdefault("event", "done")
        answer["slot"] = slot
        answer["echo"] = words
        print(json.dumps(answer), flush=True)
""")


def fake_process(tmp_path: Path, answers: list) -> JavaTxnProcess:
    script = tmp_path / "fake_jvm.py"
    script.write_text(FAKE_JVM)
    process = JavaTxnProcess([sys.executable, str(script), json.dumps(answers)], 2)
    process.start(10)
    return process


def test_done_events_become_outcomes_and_the_command_says_the_plan(tmp_path: Path) -> None:
    process = fake_process(tmp_path, [
        {"type": "ok", "end_time": 123, "offsets": [4, None]},
        {"type": "info", "end_time": 124, "offsets": [5, 6], "error": "REQUEST_TIMED_OUT",
         "detail": "TimeoutException: x", "replaced": True}])
    client = JavaTxnClient(process, 1, "elr-txn-java-1", WorkloadConfig())
    assert process.started_nanos == 5
    assert not client.ready() and client.init() is None and client.ready()
    ok = client.run(PLAN)
    assert (ok.type, ok.offsets, ok.end_ns, ok.error) == ("ok", (4, None), 123, None)
    info = client.run(replace(PLAN, abort=True))
    assert (info.type, info.offsets, info.error, info.replaced) == \
        ("info", (5, 6), "REQUEST_TIMED_OUT", True)
    assert not client.ready()  # a replaced instance is initialized again first
    assert process.close(5) == 0


def test_a_jvm_that_dies_leaves_the_transaction_info_and_the_client_dead(
        tmp_path: Path) -> None:
    process = fake_process(tmp_path, ["die"])
    client = JavaTxnClient(process, 0, "elr-txn-java-0", WorkloadConfig())
    assert client.init() is None
    outcome = client.run(PLAN)
    assert (outcome.type, outcome.error, outcome.replaced) == ("info", "CLIENT_DIED", True)
    assert not client.alive() and not process.alive()
    assert client.init() == "CLIENT_DIED"


def test_a_jvm_that_does_not_start_is_a_harness_error(tmp_path: Path) -> None:
    process = JavaTxnProcess([sys.executable, "-c", "import sys; sys.exit(1)"], 1)
    with pytest.raises(HarnessError, match="exited as it started"):
        process.start(10)


@pytest.mark.parametrize("event", [
    {"type": "committed"}, {"type": "ok", "offsets": [-1]}, {"type": "ok", "offsets": "x"},
    {"type": "ok", "end_time": 1.5}])
def test_a_malformed_answer_is_info_never_a_claim(event: dict) -> None:
    outcome = outcome_of({"event": "done", **event})
    if isinstance(event.get("offsets"), str):  # no list: no offsets, the rest stands
        assert outcome.type == "ok" and outcome.offsets == ()
        return
    assert (outcome.type, outcome.error, outcome.replaced) == ("info", "CLIENT_BAD_ANSWER", True)


# -- the real client's JVM (kafka-clients, no broker) ---------------------------------


@needs_jdk
def test_the_real_client_speaks_json_on_the_shared_monotonic_clock(
        tmp_path: Path, monkeypatch, caplog) -> None:
    """Java's System.nanoTime() is CLOCK_MONOTONIC on Linux, Python's time.monotonic_ns()
    too: the `started` line's reading lies between two Python readings around it, so
    end_time minus the recorder's origin is on the history's clock."""
    monkeypatch.setenv("ELR_HARNESS_CACHE", str(tmp_path / "cache"))
    libs = CACHED_LIBS[-1]
    config = WorkloadConfig(txn_producers=2, txn_max_block_ms=1000, txn_commit_attempts=1)
    classes = build_java_client(libs, config)
    process = JavaTxnProcess(java_argv(classes, libs, ["127.0.0.1:1"], config, "t-"), 2)
    before = time.monotonic_ns()
    process.start(60)
    after = time.monotonic_ns()
    assert before < process.started_nanos < after
    client = JavaTxnClient(process, 1, "t-1", config)
    # no broker answers: a time-out, the instance kept (javadoc: safe to retry)
    assert client.init() == "REQUEST_TIMED_OUT" and not client.ready()
    outcome = client.run(PLAN)  # never initialized: nothing was sent
    assert (outcome.type, outcome.error, outcome.end_ns) == ("fail", "NOT_INITIALIZED", None)
    assert outcome.offsets == ()
    process.send('bogus "quoted\\ command')
    time.sleep(1.0)
    assert process.close(20) == 0
    said = [r.getMessage() for r in caplog.records if "Java client said" in r.getMessage()]
    assert said and json.loads(said[0].split("said: ", 1)[1])["detail"] == \
        'bad command: bogus "quoted\\ command'
