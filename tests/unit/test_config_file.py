"""`harness run --config FILE`: defaults, then the file, then the flags typed."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
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
    from elr_harness.run.config import default_faults
    assert (cluster, topic, workload, checker) == (
        ClusterConfig(), TopicConfig(), WorkloadConfig(), CheckerConfig())
    # every fault kind's settings are filled in, at its defaults (RunConfig's own
    # default holds none: core knows no kind)
    assert run == replace(RunConfig(), faults=default_faults())
    assert set(run.faults) == {"bounce-leader", "disk-fault", "slow-network"}


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


# -- each fault kind's own settings: [run.faults.<kind>] ---------------------------------


def test_a_kinds_settings_come_from_its_own_table(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[run.faults.disk-fault]\nerrnos = ["EIO"]\nmin_hold_s = 7.5\n'
                    '[run.faults.slow-network]\naway_rate_kbit = 48\n')
    run = _configs("--config", str(path))[3]
    assert run.faults["disk-fault"].errnos == ("EIO",)
    assert run.faults["disk-fault"].min_hold_s == 7.5
    assert run.faults["disk-fault"].max_hold_s == 12.0, "the rest keep the kind's defaults"
    assert run.faults["slow-network"].away_rate_kbit == 48


@pytest.mark.parametrize("text, message", [
    ('[run.faults.disk-fault]\nerrnos = ["EBADF"]\n',
     "[run.faults.disk-fault] errnos: 'EBADF' is not one of EIO, ENOSPC"),
    ('[run.faults.disk-fault]\noperations = ["fsync+fsync"]\n',
     "[run.faults.disk-fault] operations: 'fsync+fsync' is not operations"),
    ('[run.faults.slow-network]\nloss_probabilities = [1.5]\n',
     "[run.faults.slow-network] loss_probabilities: "),
    ("[run.faults.nope]\nx = 1\n", "[run.faults] has no fault kind 'nope'"),
    ("[run.faults.kill]\nx = 1\n", "[run.faults] has no fault kind 'kill' with settings"),
    ("[run.faults.bounce-leader]\nhold = 1\n",
     "[run.faults.bounce-leader] has no setting 'hold'"),
    ('[run]\nfaults = "x"\n', "[run.faults] must be a table of fault kinds"),
])
def test_a_bad_kind_setting_is_one_line_naming_it(tmp_path, capsys, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    assert main(["run", "--config", str(path), "--store", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


# -- a recorded run replays, whatever format its test.json has --------------------------

FORMATS = Path(__file__).parent / "fixtures" / "test-json"


@pytest.mark.parametrize("path", sorted(FORMATS.glob("*.json")), ids=lambda p: p.stem)
def test_a_test_json_of_every_earlier_format_replays(tmp_path, capsys, path):
    """fixtures/test-json holds a test.json of each earlier format, as that release
    wrote it (2026-11-25: [run.scenario] warmup_s and the [checker] convert_*
    settings, retired since; 2026-11-28: each kind's settings in [run], before
    [run.faults.<kind>]): the run it describes is read, each retired setting said
    in one line and ignored, or read where it went."""
    recorded = json.loads(path.read_text())
    assert "format" not in recorded  # format 1
    cluster, topic, workload, run, checker = _configs("--config", str(path), "--store",
                                                      str(tmp_path / "store"))
    said = capsys.readouterr().err.splitlines()
    assert said and all(line.startswith(f"harness: --config {path}: [") and "retired" in line
                        for line in said), said
    assert run.nemesis == recorded["config"]["run"]["nemesis"]
    assert topic.name == recorded["config"]["topics"][0]["name"]
    assert set(run.faults) == {"bounce-leader", "disk-fault", "slow-network"}


def test_a_retired_setting_is_read_where_it_went(tmp_path, capsys):
    """[run] disk_fault and slow_network went to [run.faults.<kind>], bounce_* to
    [run.faults.bounce-leader], [run.guided] slow_* to slow-network's away_*;
    a value already in the new place wins."""
    path = tmp_path / "test.json"
    config = {"run": {"disk_fault": {"min_hold_s": 9.5}, "bounce_hold_margin_s": 4.0,
                      "guided": {"slow_rate_kbit": 40},
                      "slow_network": {"max_hold_s": 20.0},
                      "faults": {"slow-network": {"max_hold_s": 25.0}}}}
    path.write_text(json.dumps({"config": config}))
    run = _configs("--config", str(path))[3]
    assert run.faults["disk-fault"].min_hold_s == 9.5
    assert run.faults["bounce-leader"].hold_margin_s == 4.0
    assert run.faults["slow-network"].away_rate_kbit == 40
    assert run.faults["slow-network"].max_hold_s == 25.0
    err = capsys.readouterr().err
    assert "[run] disk_fault is retired; read as [run.faults] disk-fault" in err


def test_a_test_json_says_its_format_and_the_kinds_colours(tmp_path):
    from elr_harness.core.config_file import TEST_JSON_FORMAT
    from elr_harness.nemesis.faults import PACKAGES

    cluster, topic, workload, run, checker = _configs("--store", str(tmp_path))
    spec = RunSpec(cluster, [topic], workload, run, checker)
    written = started_test_json(spec, parse_nemesis("none"), datetime.now(UTC))
    assert written["format"] == TEST_JSON_FORMAT == 2
    assert written["fault_colours"] == {str(p.recorded): p.colour for p in PACKAGES.values()}
    assert written["config"]["run"]["faults"]["disk-fault"]["log_dirs"] == 2


def test_a_guided_run_gets_a_broker_that_is_no_replica_unless_brokers_are_chosen(tmp_path):
    """Three brokers that are all replicas leave guided's leaderless spells unobserved
    (docs/MUTANTS.md): guided asks for one more, unless the user chose."""
    cluster, topic, *_ = _configs("--nemesis", "guided")
    assert (cluster.brokers, topic.replication_factor) == (4, 3)
    cluster, *_ = _configs("--nemesis", "guided", "--brokers", "3")
    assert cluster.brokers == 3
    (tmp_path / "c.toml").write_text("[cluster]\nbrokers = 5\n")
    cluster, *_ = _configs("--nemesis", "guided", "--config", str(tmp_path / "c.toml"))
    assert cluster.brokers == 5
    cluster, *_ = _configs("--nemesis", "kill")
    assert cluster.brokers == 3
