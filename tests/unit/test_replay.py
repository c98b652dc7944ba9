"""`harness replay` (#55): which flags of the run a replay keeps and which it sets,
and the run directories it refuses (exit 2, one line) before any cluster starts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from elr_harness.core.errors import BadInput
from elr_harness.hunt.replay import read_run, replay_args


def test_a_replay_keeps_the_runs_flags_and_sets_its_schedule_release_and_store():
    typed = ["run", "--schedule", "/old/s.toml", "--elr", "off", "--seed", "4",
             "--store=/old/store", "--record-run-dir", "/m", "--no-check",
             "--kafka-version", "latest", "--name", "x"]
    args = replay_args(typed, Path("/new/schedule.toml"), {"kafka_version": "4.4.0",
                                                           "kafka_dist": "maven:4.4.0"})
    assert args == ["--elr", "off", "--seed", "4", "--name", "x",
                    "--schedule", "/new/schedule.toml", "--kafka-version", "4.4.0"]
    mutant = replay_args(["run", "--nemesis", "guided", "--kafka-dist", "/d"],
                         Path("/s.toml"), {"kafka_version": "4.4.0", "kafka_dist": "/m/d"})
    assert mutant == ["--schedule", "/s.toml", "--kafka-dist", "/m/d"]


def _run_dir(tmp_path: Path, schedule: bool = True, results: bool = True) -> Path:
    run = tmp_path / "run"
    run.mkdir(parents=True)
    (run / "test.json").write_text(json.dumps({"cli_args": ["run"], "kafka_version": "4.4.0"}))
    if schedule:
        (run / "schedule.toml").write_text('[[step]]\nuntil = "no leader"\nwithin_s = 1\n')
    if results:
        (run / "results.json").write_text(json.dumps({"valid": True}))
    return run


def test_a_run_without_a_schedule_or_unchecked_is_refused(tmp_path):
    with pytest.raises(BadInput, match="has no schedule.toml"):
        read_run(_run_dir(tmp_path / "a", schedule=False))
    with pytest.raises(BadInput, match="was not checked"):
        read_run(_run_dir(tmp_path / "b", results=False))
    schedule, test, results = read_run(_run_dir(tmp_path / "c"))
    assert schedule.name == "schedule.toml" and results["valid"] is True


@pytest.mark.parametrize("argv", [["replay", "nowhere"], ["replay", ".", "-n", "0"],
                                  ["replay", ".", "-n", "x"], ["replay", "."]])
def test_bad_replay_input_is_one_line_and_exit_2(tmp_path, argv):
    proc = subprocess.run([sys.executable, "-m", "elr_harness.cli", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    # one line of harness's own, or argparse's usage and then its one error line
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(("harness: ", "harness replay: error: ")), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "store").exists()


def test_a_replay_pins_the_runs_cluster_over_its_typed_config(tmp_path):
    """A guided run had a fourth broker and the default Kafka timings; played from a
    schedule file, a run would shorten the timings: the replay pins the run's own,
    and keeps the typed --config file's other tables."""
    import tomllib

    from run_flags import run_configs_of

    from elr_harness.nemesis.registry import parse_nemesis

    typed_config = tmp_path / "mine.toml"
    typed_config.write_text('[workload]\nacks = ["all"]\n[cluster.timings]\n'
                            'replica_lag_time_max_ms = 9999\n'
                            '[run]\nrounds = 3\nreached = ["elr-not-empty"]\n'
                            'interval_s = 7.0\n')
    timings = {"broker_session_timeout_ms": 6000, "replica_lag_time_max_ms": 5000}
    test = {"kafka_version": "4.4.0", "kafka_dist": "maven:4.4.0",
            "config": {"cluster": {"brokers": 4, "log_dirs": 1, "timings": timings,
                                   "subnet": "10.9.9.0/24"}}}
    schedule = tmp_path / "replay" / "schedule.toml"
    schedule.parent.mkdir()
    args = replay_args(["run", "--nemesis", "guided", "--config", str(typed_config)],
                       schedule, test)
    pinned = tmp_path / "replay" / "run-config.toml"
    assert args[-2:] == ["--config", str(pinned)] and args.count("--config") == 1
    written = tomllib.loads(pinned.read_text())
    # a guided run's rounds and reached states are not a schedule file's
    assert written == {"workload": {"acks": ["all"]}, "run": {"interval_s": 7.0},
                       "cluster": {"timings": timings, "brokers": 4, "log_dirs": 1}}
    # the replay's run: the run's brokers and Kafka timings, not the schedule's own
    plan = parse_nemesis("none", "unclean-last-replica")
    assert any(s.path == "cluster.timings.broker_session_timeout_ms"
               for s in plan.cluster_settings)
    played = ["--schedule", "unclean-last-replica", *args[2:]]
    cluster, *_ = run_configs_of(tmp_path / "store", "none", *played)
    assert cluster.brokers == 4 and cluster.timings.broker_session_timeout_ms == 6000
    assert cluster.timings.replica_lag_time_max_ms == 5000
    # a run that typed no --config: only its cluster is pinned
    args = replay_args(["run", "--nemesis", "guided"], schedule, test)
    assert tomllib.loads(pinned.read_text()) == {
        "cluster": {"timings": timings, "brokers": 4, "log_dirs": 1}}


def _broken(run: Path, how: str) -> None:
    test = json.loads((run / "test.json").read_text())
    if how == "schedule not toml":
        (run / "schedule.toml").write_text("[[step]\n")
    elif how == "schedule linked to /etc/passwd":
        (run / "schedule.toml").unlink()
        (run / "schedule.toml").symlink_to("/etc/passwd")
    elif how == "schedule a fifo":
        (run / "schedule.toml").unlink()
        os.mkfifo(run / "schedule.toml")
    elif how == "cli_args with null and object":
        (run / "test.json").write_text(json.dumps({**test, "cli_args": ["run", None, {}]}))
    elif how == "no release":
        (run / "test.json").write_text(json.dumps({"cli_args": ["run"]}))
    elif how == "bad types a string":
        (run / "results.json").write_text(json.dumps({"valid": False,
                                                      "bad_anomaly_types": "lost-write"}))


@pytest.mark.parametrize(("how", "said"), [
    ("schedule not toml", "run/schedule.toml: not TOML"),
    ("schedule linked to /etc/passwd", "run/schedule.toml: not TOML"),
    ("schedule a fifo", "run/schedule.toml: not a regular file"),
    ("cli_args with null and object", "run/test.json: `cli_args` is not the list of words"),
    ("no release", "run/test.json: neither `kafka_dist` (a local build) nor `kafka_version`"),
    ("bad types a string", "run/results.json: `bad_anomaly_types` is not a list"),
])
def test_a_run_a_replay_or_shrink_cannot_read_is_refused_naming_the_field(tmp_path, how, said):
    """Each of these made a store/replay folder and printed "error, 0 s  differs" per
    replay, the reason only in a log (a shrink of a string of bad types shrank for
    '-'): now one input error before anything is made."""
    run = _run_dir(tmp_path)
    _broken(run, how)
    for command in ("replay", "shrink"):
        with pytest.raises(BadInput, match=f"^{command}: .*" + re.escape(said)):
            read_run(run, command)


def test_the_runs_recorded_config_is_read_with_the_guards_and_named(tmp_path, capsys):
    """The --config path test.json recorded is read now: a FIFO there hung for good and
    /dev/zero gave a MemoryError; each is said, naming the recorded field, and the
    replays pin only the run's cluster."""
    import tomllib

    test = {"kafka_version": "4.4.0", "config": {"cluster": {"brokers": 3}}}
    fifo, zero = tmp_path / "fifo.toml", tmp_path / "zero.toml"
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    for typed in (fifo, zero):
        args = replay_args(["run", "--config", str(typed)], tmp_path / "s.toml", test)
        out = capsys.readouterr().out
        assert f"test.json's cli_args: --config {typed}: not a regular file" in \
            out.replace("\n", "")
        assert tomllib.loads((tmp_path / "run-config.toml").read_text()) == {
            "cluster": {"brokers": 3}}
        assert args[-2:] == ["--config", str(tmp_path / "run-config.toml")]
