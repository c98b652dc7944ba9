"""`harness run --config FILE`: defaults, then the file, then the flags typed."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from elr_harness.cli.main import build_parser, main
from elr_harness.nemesis.registry import parse_nemesis
from elr_harness.run.config import run_configs
from elr_harness.run.flags import given_flags
from elr_harness.run.spec import RunSpec, started_test_json


def _configs(*argv: str):
    args = build_parser().parse_args(["run", *argv])
    args.given = given_flags(build_parser(), ["run", *argv])
    return run_configs(args)


TOML = """
[cluster]
brokers = 5
kafka_version = "4.0.1"
[cluster.timings]
broker_session_timeout_ms = 9000
[cluster.timeouts]
format_s = 200
[topic]
partitions = 7
[workload]
acks = ["all"]
rate = 50
[run]
nemesis = "kill,pause"
interval_s = 4
seed = 11
[run.scenario]
step_timeout_s = 90
[checker]
driver_memory = "3g"
"""


def test_the_file_sets_every_section_and_a_typed_flag_wins(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(TOML)
    cluster, topic, workload, run, checker = _configs("--config", str(path), "--brokers", "4")
    assert cluster.brokers == 4, "the flag typed wins over the file"
    assert cluster.kafka_version == "4.0.1" and cluster.timings.broker_session_timeout_ms == 9000
    assert cluster.timings.replica_lag_time_max_ms == 5000, "unnamed settings keep defaults"
    assert topic.partitions == 7 and workload.acks == ("all",) and workload.rate == 50.0
    assert (run.nemesis, run.interval_s, run.seed, workload.seed) == ("kill,pause", 4.0, 11, 11)
    assert run.time_limit_s == workload.time_limit_s == 60.0
    assert checker.driver_memory == "3g"
    assert cluster.timeouts.format_s == 200.0 and run.scenario.step_timeout_s == 90.0


def test_no_file_and_no_flags_is_the_defaults():
    cluster, topic, workload, run, checker = _configs()
    from elr_harness.core.config import (
        CheckerConfig,
        ClusterConfig,
        RunConfig,
        TopicConfig,
        WorkloadConfig,
    )
    assert (cluster, topic, workload, checker) == (
        ClusterConfig(), TopicConfig(), WorkloadConfig(), CheckerConfig())
    assert run == RunConfig()


def test_a_scenario_is_capped_at_300_s_unless_told():
    assert _configs("--nemesis", "unclean-last-replica")[3].time_limit_s == 300.0
    assert _configs("--nemesis", "unclean-last-replica",
                    "--time-limit", "30")[3].time_limit_s == 30.0


def test_a_run_replays_from_its_test_json(tmp_path):
    """test.json's "config" holds every setting: read back, it gives the same run."""
    configs = _configs("--brokers", "4", "--acks", "all,1", "--seed", "7", "--nemesis", "kill",
                       "--subnet", "10.213.90.0/24", "--partitions", "5")
    cluster, topic, workload, run, checker = configs
    spec = RunSpec(cluster=cluster, topics=[topic], workload=workload, run=run, checker=checker)
    test = started_test_json(spec, parse_nemesis(run.nemesis), datetime.now(UTC))
    (tmp_path / "test.json").write_text(json.dumps(test))
    replayed = _configs("--config", str(tmp_path / "test.json"))
    assert [asdict(c) for c in replayed] == [asdict(c) for c in configs]


@pytest.mark.parametrize("text, message", [
    ("[clutser]\nbrokers = 5\n", "no section [clutser]"),
    ("[cluster]\nbrokerz = 5\n", "[cluster] has no setting 'brokerz'"),
    ("[cluster]\nbrokers = \"five\"\n", "[cluster] brokers: 'five' is not int"),
    ("[cluster]\nelr = 1\n", "[cluster] elr: 1 is not bool"),
    ("[cluster.timings]\nnope = 1\n", "[cluster.timings] has no setting 'nope'"),
    ("[workload]\nacks = \"all\"\n", "[workload] acks: 'all' is not a list"),
    ("[run]\nnemesis = \"bogus\"\n", "unknown nemesis 'bogus'"),
    ("[topic]\npartitions = 0\n", "at least 1 partition"),
    ("cluster = [\n", "not TOML"),
])
def test_a_bad_file_is_one_line_naming_the_setting(tmp_path, capsys, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    assert main(["run", "--config", str(path), "--store", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "store").exists()


def test_a_missing_file_is_one_line(tmp_path, capsys):
    assert main(["run", "--config", str(tmp_path / "nope.toml")]) == 2
    assert "--config" in capsys.readouterr().err


@pytest.mark.parametrize("typed, expected", [
    (["run", "--nemesis", "unclean-last-replica"],
     "harness run --nemesis unclean-last-replica --kafka-version 4.4.0"),
    (["run", "--kafka-version", "latest", "--seed", "3"],
     "harness run --seed 3 --kafka-version 4.4.0"),
    (["run", "--kafka-version=latest"], "harness run --kafka-version 4.4.0"),
    (["run", "--kafka-version", "4.4.0"], "harness run --kafka-version 4.4.0"),
])
def test_the_reproduce_command_pins_the_release_that_ran(typed, expected):
    """A run of `latest` repeated later may get another release: the report's
    reproduce command names the one that ran."""
    from elr_harness.run.spec import reproduce_command

    assert reproduce_command(typed, "4.4.0", None) == expected
    assert reproduce_command(typed, None, None) == "harness " + " ".join(typed)


def test_a_soak_runs_reproduce_command_gives_a_verdict():
    """The soak adds --no-check and its marker to each run: neither is in the
    command a person repeats (a run of their own typed with --no-check keeps it)."""
    from elr_harness.run.spec import reproduce_command

    soak_run = ["run", "--nemesis", "guided", "--seed", "2", "--no-check",
                "--record-run-dir", "/s/runs/0001.run-dir"]
    assert reproduce_command(soak_run, "4.4.0", None) == \
        "harness run --nemesis guided --seed 2 --kafka-version 4.4.0"
    assert reproduce_command(["run", "--no-check"], "4.4.0", None) == \
        "harness run --no-check --kafka-version 4.4.0"


def test_a_users_distribution_is_reproduced_as_typed():
    from elr_harness.run.spec import reproduce_command

    assert reproduce_command(["run", "--kafka-dist", "k.tgz"], "4.2.0-SNAPSHOT",
                             Path("k.tgz")) == "harness run --kafka-dist k.tgz"
