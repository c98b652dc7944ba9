"""Bad input gets one clear message and exit 2, and starts nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _harness(*args: str, store: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "elr_harness.cli", *args],
                          capture_output=True, text=True, timeout=300, cwd=store,
                          env={**os.environ, **(env or {})})


#: A 300-character name: longer than any file name may be.
LONG = "y" * 300

#: One row per bad input a new user was seen to try (#9's sweep and more): the
#: arguments and words the one-line message must hold, naming the flag or path.
#: In arguments and messages, {file} is a text file, {dir} an empty folder,
#: {bin} a binary file, {hist_dir} a run folder whose history.jsonl is a folder,
#: {garbage} a run folder whose history is not JSON, {bad8} a name that is not UTF-8;
#: {nodes_*} nodes files (--nodes-file) with the mistake their name says.
BAD_INPUTS = [
    # run: the nemesis and the workload
    (["run", "--nemesis", "bogus"],
     "unknown nemesis 'bogus'; valid: none, guided, unclean-last-replica"),
    (["run", "--nemesis", ""], "--nemesis"),
    (["run", "--nemesis", "kill,bogus"], "unknown nemesis 'bogus'"),
    (["run", "--nemesis", ",,"], "--nemesis"),
    (["run", "--nemesis", "partition+isolate-from-controllers"],
     "--nemesis partition+isolate-from-controllers: overlapping schedules 1 and 2 both act"),
    (["run", "--rounds", "0"], "argument --rounds: 0 is not between 1 and 10000"),
    (["run", "--rounds", "two"], "argument --rounds: invalid int value: 'two'"),
    (["run", "--nemesis", "unclean-last-replica", "--rounds", "2"],
     "--rounds is for --nemesis guided or a random mix; --nemesis unclean-last-replica has "
     "no rounds: a scenario ends when its steps are done"),
    (["run", "--nemesis", "none", "--rounds", "2"],
     "--rounds is for --nemesis guided or a random mix; --nemesis none has no rounds: it "
     "makes no faults"),
    (["run", "--acks", "all,2"], "--acks: '2' is not one of all, 1, 0"),
    (["run", "--acks", ""], "--acks: needs at least 1 item"),
    (["run", "--acks", "all,all"], "acks levels repeat"),
    (["run", "--producers", "0"], "--producers: 0 is not between 1 and"),
    (["run", "--producers", "-1"], "--producers: -1 is not between 1 and"),
    (["run", "--producers", "abc"], "argument --producers: invalid int value"),
    (["run", "--producers", "100000"], "--producers 100000 is more than 256 clients"),
    (["run", "--consumers", "-1"], "--consumers: -1 is not between 0 and"),
    (["run", "--consumers", "1.5"], "argument --consumers: invalid int value"),
    (["run", "--consumers", "1000"], "--consumers 1000 is more than 256 clients"),
    (["run", "--rate", "-1"], "argument --rate: '-1' is not a finite number >= 0"),
    (["run", "--rate", "nan"], "argument --rate: 'nan' is not a finite number"),
    (["run", "--rate", "inf"], "argument --rate: 'inf' is not a finite number"),
    (["run", "--rate", "abc"], "argument --rate: 'abc' is not a number"),
    (["run", "--time-limit", "inf"], "argument --time-limit: 'inf' is not a finite number"),
    (["run", "--time-limit", "-5"], "argument --time-limit: '-5' is not a finite number >= 0"),
    (["run", "--time-limit", "nan"], "argument --time-limit: 'nan' is not a finite number"),
    (["run", "--time-limit", "1e400"], "argument --time-limit: '1e400' is not a finite number"),
    (["run", "--time-limit", "0"], "--time-limit: 0 is not above 0"),
    (["run", "--interval", "nan"], "argument --interval: 'nan' is not a finite number"),
    (["run", "--interval", "-1"], "argument --interval: '-1' is not a finite number >= 0"),
    (["run", "--nemesis", "kill", "--interval", "1e-9"], "--interval must be at least 1 s"),
    (["run", "--nemesis", "kill", "--interval", "0"], "--interval must be at least 1 s"),
    (["run", "--seed", "abc"], "argument --seed: invalid int value"),
    (["run", "--seed", "1.5"], "argument --seed: invalid int value"),
    (["run", "--concurrency", "0"], "--concurrency: 0 is not between 1 and"),
    (["run", "--concurrency", "-3"], "--concurrency: -3 is not between 1 and"),
    (["run", "--client-debug", "bogus"], "--client-debug: 'bogus' is no librdkafka debug"),
    (["run", "--client-debug", "msg,,x"], "--client-debug: 'x' is no librdkafka debug"),
    (["run", "--workload", "eos"], "--workload: 'eos' is not yet built"),
    (["run", "--workload", "plain,bogus"], "--workload: 'bogus' is no workload"),
    (["run", "--txn-client", "go"], "--txn-client: 'go' is not one of java, librdkafka"),
    (["run", "--txn-version", "3"], "--txn-version: 3 is not between 1 and 2"),
    # run: the cluster and the topic
    (["run", "--name", ""], "argument --name: '' is not a cluster name"),
    (["run", "--name=-x"], "argument --name: '-x' is not a cluster name"),
    (["run", "--name", "a b"], "argument --name: 'a b' is not a cluster name"),
    (["run", "--name", LONG], "is not a cluster name"),
    (["run", "--controllers", "0"], "at least 1 controller (--controllers)"),
    (["run", "--controllers", "-1"], "at least 1 controller (--controllers)"),
    (["run", "--controllers", "abc"], "argument --controllers: invalid int value"),
    (["run", "--brokers", "0"], "at least 1 broker (--brokers)"),
    (["run", "--brokers", "-1"], "at least 1 broker (--brokers)"),
    (["run", "--brokers", "500"], "--controllers 3 and --brokers 500 ask for 503"),
    (["run", "--elr", "maybe"], "argument --elr: expected on or off, got 'maybe'"),
    (["run", "--unclean-leader-election", "maybe"], "argument --unclean-leader-election"),
    (["run", "--topic", ""], "argument --topic: '' is not a Kafka topic name"),
    (["run", "--topic", "a/b"], "'a/b' is not a Kafka topic name"),
    (["run", "--topic", "."], "'.' is not a Kafka topic name"),
    (["run", "--topic", ".."], "'..' is not a Kafka topic name"),
    (["run", "--topic", LONG], "is not a Kafka topic name"),
    (["run", "--partitions", "0"], "at least 1 partition (--partitions)"),
    (["run", "--partitions", "abc"], "argument --partitions: invalid int value"),
    (["run", "--partitions", "1000000"], "--partitions 1000000 puts 1000000 replicas on each"),
    (["run", "--replication-factor", "0"], "replication factor must be at least 1"),
    (["run", "--replication-factor", "4"], "replication factor 4 is more than the 3 brokers"),
    (["run", "--min-insync-replicas", "0"], "min.insync.replicas 0 must be between 1"),
    (["run", "--min-insync-replicas", "4"], "min.insync.replicas 4 must be between 1"),
    (["run", "--nemesis", "unclean-last-replica", "--brokers", "2",
      "--replication-factor", "2"], "needs 3 brokers and replication factor 3"),
    (["run", "--subnet", "10.213.77.5/24"], "not an IPv4 subnet like 10.213.77.0/24"),
    (["run", "--subnet", "10.213.77.0/30"], "subnet 10.213.77.0/30 is too small"),
    (["run", "--subnet", "banana"], "argument --subnet: not an IPv4 subnet"),
    (["run", "--subnet", "fd00::/64"], "argument --subnet: not an IPv4 subnet"),
    (["run", "--kafka-version", "9.9.9"], "Kafka 9.9.9 does not resolve from Maven Central"),
    (["run", "--kafka-version", "3.9.0"], "Kafka 3.9.0 is not supported"),
    (["run", "--kafka-version", ""], "--kafka-version: '' is not a Kafka version"),
    (["run", "--kafka-version", "4.1.1; rm -rf /"], "--kafka-version: '4.1.1; rm -rf /' is not"),
    (["run", "--kafka-version", "../../etc"], "--kafka-version: '../../etc' is not"),
    (["run", "--kafka-dist", "/nonexistent/k.tgz"], "--kafka-dist /nonexistent/k.tgz: no such"),
    (["run", "--kafka-dist", LONG], "--kafka-dist yyyyyyyy"),
    (["run", "--kafka-dist", "{file}"], "--kafka-dist {file}: not a readable tarball"),
    (["run", "--kafka-dist", "{dir}"], "--kafka-dist {dir}: expected a Kafka tarball"),
    (["run", "--kafka-dist", "{bad8}"], "--kafka-dist"),
    (["run", "--base-image", ""], "argument --base-image: '' is not a Docker image name"),
    # run: the store
    (["run", "--store", "{file}"], "--store {file}: not a folder"),
    (["run", "--store", "{file}/x"], "--store {file}/x: not a folder ({file} is a file)"),
    (["run", "--store", "/proc/1/x"], "--store /proc/1/x"),
    (["run", "--store", f"{LONG}/x"], ": File name too long"),
    # check
    (["check", "/nonexistent"], "no history at /nonexistent"),
    (["check", LONG], "cannot read yyyy"),
    (["check", "{dir}"], "no history at {dir}"),
    (["check", "{file}"], "{file} is not a history"),
    (["check", "{bin}"], "{bin} is not a history"),
    (["check", "{hist_dir}"], "no history at {hist_dir}"),
    (["check", "{garbage}"], "line 1 is not a valid history line"),
    (["check", "{bad8}"], "no history at"),
    (["check", "{garbage}", "--spark-master", "bogus"],
     "argument --spark-master: 'bogus' is not a Spark master URL"),
    # report
    (["report", "/nonexistent"], "/nonexistent"),
    (["report", LONG], "File name too long"),
    (["report", "{dir}"], "{dir}"),
    (["report", "{file}"], "{file}"),
    (["report", "{garbage}"], "{garbage}"),
    # serve
    (["serve", "--port", "99999"], "argument --port: port 99999 is not between 0 and 65535"),
    (["serve", "--port", "-1"], "argument --port: port -1 is not between 0 and 65535"),
    (["serve", "--port", "abc"], "argument --port: 'abc' is not a port number"),
    (["serve", "--store", "{file}"], "{file} is a file"),
    (["serve", "--store", "/nonexistent"], "/nonexistent does not exist"),
    (["serve", "--store", "{dir}", "--host", "999.1.1.1"], "999.1.1.1"),
    (["serve", "--store", "{dir}", "--host", "no-such-host.invalid"], "no-such-host.invalid"),
    # cluster
    (["cluster", "up", "--topic", "t", "--replication-factor", "5"], "more than the 3 brokers"),
    (["cluster", "up", "--name=-x"], "'-x' is not a cluster name"),
    # soak
    (["soak", "--duration", "0"], "argument --duration: '0' is not between 1 s and 7 days"),
    (["soak", "--duration", "80d"], "argument --duration: '80d' is not between"),
    (["soak", "--duration", "8x"], "argument --duration: '8x' is not a duration"),
    (["soak", "--duration", "nan"], "argument --duration: 'nan' is not a duration"),
    (["soak", "--min-free", "lots"], "argument --min-free: 'lots' is not a size"),
    (["soak", "--keep", "some"], "argument --keep: invalid choice: 'some'"),
    (["soak", "--kafka-version", ","], "--kafka-version: give at least one release"),
    (["soak", "--kafka-version", "4.1.1,x;y"], "--kafka-version: 'x;y' is not"),
    (["soak", "--plan", "{file}"], "--plan {file}: not TOML"),
    (["soak", "--plan", "{dir}"], "--plan {dir}: is a folder"),
    (["soak", "--plan", "{dir}/none.toml"], "--plan {dir}/none.toml: no such file"),
    (["soak", "--resume", "{dir}"], "--resume {dir}: not a soak directory"),
    (["soak", "--resume", "{file}"], "--resume {file}: not a soak directory"),
    (["soak", "--store", "{file}"], "--store {file}: not a folder"),
    (["cluster", "down", "--name", ""], "argument --name: '' is not a cluster name"),
    (["cluster", "status", "--name", "elr-nothing-here"], "'elr-nothing-here' is not up"),
    (["cluster", "logs", "--name", "elr-nothing-here"], "'elr-nothing-here' is not up"),
    (["cluster", "bogus"], "invalid choice: 'bogus'"),
    # the nodes file of the SSH backend (run, cluster up|status|down|logs)
    (["run", "--nodes-file", "/nonexistent/hosts.yaml"],
     "--nodes-file /nonexistent/hosts.yaml: no such file"),
    (["run", "--nodes-file", "{dir}"], "--nodes-file {dir}: cannot read it"),
    (["run", "--nodes-file", "{bin}"], "--nodes-file {bin}: not UTF-8 text (byte 128)"),
    (["run", "--nodes-file", "{nodes_not_yaml}"], "--nodes-file {nodes_not_yaml}: not YAML at "
                                                  "line 2 (mapping values are not allowed"),
    (["run", "--nodes-file", "{file}"], "--nodes-file {file}: expected a mapping with a list "
                                        "of nodes under 'nodes:'"),
    (["run", "--nodes-file", "{nodes_bad_role}"],
     "--nodes-file {nodes_bad_role}: node 'c1': role 'leader' is not controller or broker"),
    (["run", "--nodes-file", "{nodes_twice}"], "--nodes-file {nodes_twice}: name 'c1' appears "
                                               "twice"),
    (["run", "--nodes-file", "{nodes_no_controller}"],
     "--nodes-file {nodes_no_controller}: no controller"),
    (["cluster", "up", "--nodes-file", "{nodes_twice}"], "name 'c1' appears twice"),
    (["cluster", "status", "--nodes-file", "{nodes_bad_role}"], "role 'leader' is not"),
    (["cluster", "down", "--nodes-file", "/nonexistent/hosts.yaml"], "no such file"),
    (["cluster", "logs", "--nodes-file", "{nodes_no_controller}"], "no controller"),
    # the command itself
    (["bogus"], "invalid choice: 'bogus'"),
    ([], "the following arguments are required: command"),
]


def _materialize(tmp_path: Path) -> dict[str, str]:
    """The files and folders BAD_INPUTS refers to, made in tmp_path."""
    files = {"{file}": tmp_path / "a-file.txt", "{bin}": tmp_path / "a-binary.dat",
             "{dir}": tmp_path / "an-empty-folder", "{hist_dir}": tmp_path / "hist-dir",
             "{garbage}": tmp_path / "garbage"}
    files["{file}"].write_text("hello\n")
    files["{bin}"].write_bytes(bytes(range(256)) * 4)
    files["{dir}"].mkdir()
    (files["{hist_dir}"] / "history.jsonl").mkdir(parents=True)
    files["{garbage}"].mkdir()
    (files["{garbage}"] / "history.jsonl").write_text("not json\nnot json either\n")
    node = "{{name: {}, role: {}, address: {}, agent: true}}"
    nodes_files = {
        "{nodes_not_yaml}": "nodes:\n  - name: c1: controller\n",
        "{nodes_bad_role}": f"nodes: [{node.format('c1', 'leader', 'h1')}]\n",
        "{nodes_twice}": f"nodes: [{node.format('c1', 'controller', 'h1')}, "
                         f"{node.format('c1', 'broker', 'h2')}]\n",
        "{nodes_no_controller}": f"nodes: [{node.format('b1', 'broker', 'h1')}]\n"}
    for key, text in nodes_files.items():
        files[key] = tmp_path / f"{key.strip('{}')}.yaml"
        files[key].write_text(text)
    return {key: str(path) for key, path in files.items()}


def _filled(text: str, places: dict[str, str]) -> str:
    for key, value in places.items():
        text = text.replace(key, value)
    return text


@pytest.mark.parametrize("args, message", BAD_INPUTS,
                         ids=[" ".join(a)[:60] or "(none)" for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    places = _materialize(tmp_path)
    bad8 = os.fsencode(tmp_path) + b"/\xff\xfe"
    argv = [bad8 if a == "{bad8}" else _filled(a, places) for a in args]
    work = tmp_path / "cwd"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-m", "elr_harness.cli", *argv], capture_output=True,
                          timeout=300, cwd=work)
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    assert proc.returncode == 2, out + err
    assert _filled(message, places) in " ".join(err.split()), err
    assert "Traceback" not in out + err
    assert list(work.iterdir()) == [], "nothing is made for refused input"
    assert not any(Path(p).with_name("results.json").exists() for p in places.values())


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
    assert "--store" in proc.stderr and "not a folder" in proc.stderr
    assert "Traceback" not in proc.stderr
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
    """A terminal's Ctrl-C reaches the whole process group: the JVM dies under
    py4j while it converts or checks; the user still reads one line."""
    import signal

    from synthetic import SyntheticSpec, write_run_dir

    run = tmp_path / "run"
    # converting: a history whose conversion outlasts the wait into it; checking: the
    # checks come after the conversion whatever the size (the load, a plan of every
    # check and their jobs take seconds even for a small history), so a smaller one
    # spares the conversion's CPU before the moment the test is about
    write_run_dir(run, SyntheticSpec(lines=400_000 if moment == "converting" else 50_000))
    proc = subprocess.Popen([sys.executable, "-m", "elr_harness.cli", "check", str(run)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.monotonic() + 120

    def seen() -> bool:
        if moment == "converting":
            return any(run.glob("history.parquet.tmp-*"))
        return (run / "history.parquet").is_dir()

    while not seen() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    # into the conversion's jobs; into the checks' first jobs
    time.sleep(0.3 if moment == "converting" else 2)
    assert proc.poll() is None, "the check ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, out + err
    assert err.strip() == "harness: interrupted", err
    assert not any(run.glob("history.parquet.tmp-*")), "a half-written table was left"
    assert not (run / "results.json").exists()
