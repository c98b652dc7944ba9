"""#31, the config part: flags, --config files and replayed test.json meet one
typed boundary (core/validate.py), and every file a user names is read
within bounds.

ROWS are bad-input rows like test_cli_bad_input.py's (exit 2, one line naming the
flag or file and setting, no traceback, nothing made); `materialize` makes the
files they name. benchmarks/bad_input_sweep.py imports both.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_rows import run_row

#: A config file per hostile or impossible value: {cfg_<key>} -> TOML text.
CONFIG_FILES = {
    "rate_nan": "[workload]\nrate = nan\n",
    "time_inf": "[run]\ntime_limit_s = 1e309\n",
    "subnet_banana": '[cluster]\nsubnet = "banana"\n',
    "subnet_public": '[cluster]\nsubnet = "8.8.8.0/24"\n',
    "broker_port": "[cluster]\nbroker_port = 70000\n",
    "topic_slash": '[topic]\nname = "a/b"\n',
    "name_shell": '[cluster]\nname = "a b; rm -rf /"\n',
    "jvm_opts": '[cluster]\njvm_opts = "-Xmx1g; touch /tmp/pwned"\n',
    "heap": '[cluster]\ncontroller_heap = "-Xms128m $(reboot)"\n',
    "metadata_dir": '[cluster]\nmetadata_log_dir = "/data/m /etc"\n',
    "log_dir_newline": '[cluster]\nlog_dir = "/data/kafka\\nprocess.roles=controller"\n',
    "log_dir_dotdot": '[cluster]\nlog_dir = "/data/../etc"\n',
    "packages": '[cluster.image]\npackages = ["procps", "curl; reboot"]\n',
    "mirror": '[cluster.image]\nmirror = "http://deb.debian.org/ $(id)"\n',
    "ssh_dir": '[cluster.ssh]\nkafka_dir = "relative"\n',
    "timing": "[cluster.timings]\nrequest_timeout_ms = -1\n",
    "timeout_huge": "[cluster.timeouts]\nformat_s = 1e308\n",
    "spark_conf": '[checker]\nspark_conf = [["spark.x", "a\\nb"]]\n',
    "spark_key": '[checker]\nspark_conf = [["x; y", "b"]]\n',
    "spark_master": '[checker]\nspark_master = "k8s://x"\n',
    "checker_jvm": '[checker]\njvm_options = "-XX:+UseParallelGC `id`"\n',
    "jvm_on_error": '[cluster]\njvm_opts = "-XX:OnOutOfMemoryError=reboot"\n',
    "jvm_dump_path": '[cluster]\njvm_opts = "-XX:HeapDumpPath=/etc/cron.d/x"\n',
    "spark_java": '[checker]\nspark_conf = [["spark.executor.extraJavaOptions", '
                  '"-XX:OnError=reboot"]]\n',
    "driver_memory": '[checker]\ndriver_memory = "2g -Dx"\n',
    "seed_huge": "[run]\nseed = 99999999999999999999\n",
    "key_newline": '[cluster]\n"a\\nb" = 1\n',
    "table_newline": '["a\\nb"]\nx = 1\n',
    "toml_deep": "a = " + "[" * 5000 + "]" * 5000 + "\n",
    "float_overflow": "[run]\ntime_limit_s = 1" + "0" * 400 + "\n",
    "int_digits": "[run]\nseed = 1" + "0" * 5000 + "\n",
}

#: A run's test.json with one setting changed: {json_<key>} -> (section, key, value).
TEST_JSONS = {
    "jvm_opts": ("cluster", "jvm_opts", "-Xmx1g; touch /tmp/pwned"),
    "log_dir": ("cluster", "log_dir", "/data/kafka\nauto.create.topics.enable=true"),
    "topic": ("topics", "name", "a b"),
}

ROWS = [
    # --config FILE: each value meets the rule of its flag, or the field's own
    *[(["run", "--config", "{cfg_" + key + "}"], words) for key, words in [
        ("rate_nan", "--config {cfg_rate_nan}: [workload] rate: nan is not a finite number"),
        ("time_inf", "--config {cfg_time_inf}: [run] time_limit_s: inf is not a finite"),
        ("subnet_banana", "--config {cfg_subnet_banana}: [cluster] subnet: not an IPv4 subnet"),
        ("subnet_public", "[cluster] subnet: subnet 8.8.8.0/24 is not a private network"),
        ("broker_port", "[cluster] broker_port: 70000 is not between 1 and 65535"),
        ("topic_slash", "--config {cfg_topic_slash}: [topic] name: 'a/b' is not a Kafka topic"),
        ("name_shell", "[cluster] name: 'a b; rm -rf /' is not a cluster name"),
        ("jvm_opts", "--config {cfg_jvm_opts}: [cluster] jvm_opts: '-Xmx1g;' is not a JVM "
                     "option"),
        ("heap", "[cluster] controller_heap: '$(reboot)' is not -Xms, -Xmx or -Xss"),
        ("metadata_dir", "[cluster] metadata_log_dir: '/data/m /etc' is not an absolute path"),
        ("log_dir_newline", "[cluster] log_dir: '/data/kafka\\nprocess.roles=controller' holds "
                            "a newline"),
        ("log_dir_dotdot", "[cluster] log_dir: '/data/../etc' is not an absolute path"),
        ("packages", "[cluster.image] packages: 'curl; reboot' is not a Debian package name"),
        ("mirror", "[cluster.image] mirror: 'http://deb.debian.org/ $(id)' is not an http(s)"),
        ("ssh_dir", "[cluster.ssh] kafka_dir: 'relative' is not an absolute path"),
        ("timing", "[cluster.timings] request_timeout_ms: -1 is not between 1 and"),
        ("timeout_huge", "[cluster.timeouts] format_s: 1e+308 is not above 0 and at most "
                         "604800"),
        ("spark_conf", "[checker] spark_conf: 'a\\nb' holds a newline"),
        ("spark_key", "[checker] spark_conf: 'x; y' is not a Spark setting"),
        ("spark_master", "[checker] spark_master: 'k8s://x' is not a Spark master URL (only "
                         "local[*], local[N] and spark://host:port are supported)"),
        ("checker_jvm", "[checker] jvm_options: '`id`' is not a JVM option"),
        ("jvm_on_error", "[cluster] jvm_opts: '-XX:OnOutOfMemoryError=reboot' is not a JVM"),
        ("jvm_dump_path", "[cluster] jvm_opts: '-XX:HeapDumpPath=/etc/cron.d/x' is not a JVM"),
        ("spark_java", "[checker] spark_conf: '-XX:OnError=reboot' is not a JVM option"),
        ("driver_memory", "[checker] driver_memory: '2g -Dx' is not a JVM memory size"),
        ("seed_huge", "[run] seed: 99999999999999999999 is not between"),
        ("toml_deep", "--config {cfg_toml_deep}: not TOML (nested too deep)"),
        ("key_newline", "--config {cfg_key_newline}: [cluster] has no setting 'a\\nb'"),
        ("table_newline", "--config {cfg_table_newline}: no section [a\\x0ab]"),
        ("float_overflow", "--config {cfg_float_overflow}: [run] time_limit_s: 1000000"),
        ("int_digits", "--config {cfg_int_digits}: not TOML (Exceeds the limit (4300 digits)"),
    ]],
    # a replayed test.json is a --config file like any other
    (["run", "--config", "{json_jvm_opts}"],
     "--config {json_jvm_opts}: [cluster] jvm_opts: '-Xmx1g;' is not a JVM option"),
    (["run", "--config", "{json_log_dir}"], "--config {json_log_dir}: [cluster] log_dir: "
                                            "'/data/kafka\\nauto.create.topics.enable=true' "
                                            "holds a newline"),
    (["run", "--config", "{json_topic}"],
     "--config {json_topic}: [topic] name: 'a b' is not a Kafka topic name"),
    (["run", "--config", "{json_deep}"], "--config {json_deep}: JSON nested deeper than 64"),
    (["run", "--config", "{json_topics_dict}"],
     "--config {json_topics_dict}: [topics] must be a list of tables, got {'name': 'x'}"),
    # a newline in a path is shown escaped (\x0a), as printable() shows it everywhere
    (["run", "--config", "{dir}/a\nb.toml"], "--config {dir}/a\\x0ab.toml: no such file"),
    (["run", "--nodes-file", "{dir}/a\nb.yaml"],
     "--nodes-file {dir}/a\\x0ab.yaml: no such file"),
    # files that are no files: read within bounds, one line
    (["run", "--config", "/dev/zero"], "--config /dev/zero: not a regular file"),
    (["run", "--config", "{fifo}"], "--config {fifo}: not a regular file"),
    (["run", "--nodes-file", "/dev/zero"],
     "--nodes-file /dev/zero: cannot read it (not a regular file)"),
    (["run", "--nodes-file", "{fifo}"], "--nodes-file {fifo}: cannot read it (not a regular"),
    (["cluster", "status", "--nodes-file", "{fifo}"], "--nodes-file {fifo}: cannot read it"),
    (["run", "--nodes-file", "{alias_bomb}"],
     "--nodes-file {alias_bomb}: not YAML at line 7 (aliases (*name) are not accepted in a "
     "nodes file)"),
    (["run", "--nodes-file", "{yaml_deep}"], "--nodes-file {yaml_deep}: not YAML"),
    # the Spark master: local[N] bounded, only local and spark:// supported
    (["run", "--spark-master", "local[99999999]"],
     "argument --spark-master: 'local[99999999]': local[N] takes 1 to 256 cores"),
    (["run", "--spark-master", "local[0]"], "local[N] takes 1 to 256 cores"),
    (["check", "{dir}", "--spark-master", "k8s://x"], "argument --spark-master: 'k8s://x' is "
     "not a Spark master URL (only local[*], local[N] and spark://host:port are supported)"),
    (["check", "{dir}", "--spark-master", "yarn"], "'yarn' is not a Spark master URL"),
    (["run", "--spark-master", "spark://h:99999"], "'spark://h:99999' is not a Spark master"),
    # the subnet: private, /16 to /28
    (["run", "--subnet", "0.0.0.0/0"], "argument --subnet: subnet 0.0.0.0/0 is too large"),
    (["run", "--subnet", "224.0.0.0/24"],
     "argument --subnet: subnet 224.0.0.0/24 is not a private network"),
    (["run", "--subnet", "8.8.8.0/24"], "subnet 8.8.8.0/24 is not a private network"),
    (["run", "--subnet", "10.0.0.0/8"], "subnet 10.0.0.0/8 is too large"),
    (["cluster", "up", "--subnet", "10.1.2.0/29"], "argument --subnet: subnet 10.1.2.0/29 is "
                                                   "too small (a prefix of /16 to /28"),
    # times bounded
    (["run", "--time-limit", "1e308"], "argument --time-limit: '1e308' is more than 7 days"),
    (["run", "--interval", "1e308"], "argument --interval: '1e308' is more than 7 days"),
    # ASCII digits only (int('٣') == 3 in Python)
    (["run", "--producers", "\u0663"], "argument --producers: invalid int value: '\u0663'"),
    (["run", "--seed", "\u0667"], "argument --seed: invalid int value: '\u0667'"),
    (["run", "--partitions", "\u0663"], "argument --partitions: invalid int value"),
    (["cluster", "up", "--brokers", "\u0663"], "argument --brokers: invalid int value"),
    (["run", "--rate", "\u0661\u0660"], "argument --rate: '\u0661\u0660' is not a number"),
    (["run", "--time-limit", "\u0663\u0660"], "argument --time-limit: '\u0663\u0660' is not"),
    (["serve", "--port", "\u0668\u0660\u0668\u0660"], "argument --port: "
     "'\u0668\u0660\u0668\u0660' is not a port number"),
    (["cluster", "logs", "--lines", "\u0663"], "argument --lines: invalid int value"),
    # a path flag's value with a newline
    (["run", "--kafka-dist", "k\nx.tgz"], "--kafka-dist: 'k\\nx.tgz' holds a newline"),
    (["cluster", "up", "--kafka-dist", "k\nx.tgz"], "--kafka-dist: 'k\\nx.tgz' holds a newline"),
    # no abbreviations: --sto is not --store
    (["run", "--sto", "/etc"], "unrecognized arguments: --sto /etc"),
    (["serve", "--po", "1"], "unrecognized arguments: --po 1"),
    (["cluster", "up", "--bro", "4"], "unrecognized arguments: --bro 4"),
    # #52: a byte order mark (TOML's parser said "Invalid statement at line 1")
    *[([*command, "{bom_" + kind + "}"], f"{flag} {{bom_{kind}}}: starts with a UTF-8 byte "
       "order mark (BOM), which a settings file may not hold; save it as UTF-8 without one")
      for command, flag, kind in ((["run", "--config"], "--config", "toml"),
                                  (["run", "--config"], "--config", "json"),
                                  (["cluster", "status", "--nodes-file"], "--nodes-file",
                                   "yaml"),
                                  (["soak", "--plan"], "--plan", "plan"))],
    # #52: the nodes file's key_file or known_hosts a folder (said: "does not exist",
    # or a host key "not in" the folder), two names for one host
    (["cluster", "status", "--nodes-file", "{nodes_key_folder}"],
     "--nodes-file {nodes_key_folder}: node 'c1': key_file {dir} is a folder, not a file"),
    (["cluster", "status", "--nodes-file", "{nodes_known_hosts_folder}"],
     "--nodes-file {nodes_known_hosts_folder}: known_hosts {dir} is a folder, not a file"),
    (["cluster", "status", "--nodes-file", "{nodes_localhost}"],
     "--nodes-file {nodes_localhost}: nodes 'c1' and 'b1' are on one host ('localhost' and "
     "'127.0.0.1' are both 127.0.0.1); each node needs a host of its own"),
    (["run", "--nodes-file", "{nodes_case}"],
     "--nodes-file {nodes_case}: nodes 'c1' and 'b1' are on one host ('Host-1' and 'host-1' "
     "name one host)"),
    (["run", "--nodes-file", "{nodes_ipv6}"],
     "--nodes-file {nodes_ipv6}: nodes 'b1' and 'b2' are on one host ('fd00::1' and "
     "'FD00:0:0::1' are both fd00::1)"),
]

#: Nodes files of #52's rows: {nodes_<key>} -> the addresses and settings of their nodes.
NODES_FILES = {
    "key_folder": ({"c1": "h1", "b1": "h2"}, {"key_file": "{dir}"}, ""),
    "known_hosts_folder": ({"c1": "h1", "b1": "h2"}, {}, "known_hosts: {dir}\n"),
    "localhost": ({"c1": "localhost", "b1": "127.0.0.1"}, {}, ""),
    "case": ({"c1": "Host-1", "b1": "host-1"}, {}, ""),
    "ipv6": ({"c1": "fd00::9", "b1": "fd00::1", "b2": "FD00:0:0::1"}, {}, ""),
}


def _test_json(section: str, key: str, value: str) -> dict:
    """A run's test.json as run/spec.py writes it, one setting changed."""
    from dataclasses import asdict

    from elr_harness.core.config import (
        CheckerConfig,
        ClusterConfig,
        RunConfig,
        TopicConfig,
        WorkloadConfig,
    )

    config = json.loads(json.dumps({
        "cluster": asdict(ClusterConfig()), "topics": [asdict(TopicConfig())],
        "workload": asdict(WorkloadConfig()), "run": asdict(RunConfig()),
        "checker": asdict(CheckerConfig())}, default=str))
    target = config[section][0] if section == "topics" else config[section]
    target[key] = value
    return {"test": "none", "command": "harness run", "config": config}


def materialize(tmp_path: Path) -> dict[str, str]:
    """The files ROWS name, made in tmp_path."""
    places = {}
    for key, text in CONFIG_FILES.items():
        path = tmp_path / f"cfg-{key}.toml"
        path.write_text(text)
        places["{cfg_" + key + "}"] = str(path)
    for key, change in TEST_JSONS.items():
        path = tmp_path / f"json-{key}" / "test.json"
        path.parent.mkdir()
        path.write_text(json.dumps(_test_json(*change)))
        places["{json_" + key + "}"] = str(path)
    deep = tmp_path / "deep" / "test.json"
    deep.parent.mkdir()
    deep.write_text('{"config": ' + "[" * 100_000 + "]" * 100_000 + "}")
    places["{json_deep}"] = str(deep)
    topics_dict = tmp_path / "topics-dict" / "test.json"
    topics_dict.parent.mkdir()
    topics_dict.write_text(json.dumps({"config": {"topics": {"name": "x"}}}))
    places["{json_topics_dict}"] = str(topics_dict)
    fifo = tmp_path / "a-fifo.toml"
    os.mkfifo(fifo)
    places["{fifo}"] = str(fifo)
    # each level nine times the one before: 9**9 items once expanded (str() of it)
    levels = ["      - &a0 [x, x, x, x, x, x, x, x, x]"] + [
        f"      - &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("nodes:\n  - role: controller\n    address: h\n    agent: true\n"
                    "    name:\n" + "\n".join(levels) + "\n")
    places["{alias_bomb}"] = str(bomb)
    yaml_deep = tmp_path / "deep.yaml"
    yaml_deep.write_text("nodes: " + "[" * 20_000 + "]" * 20_000 + "\n")
    places["{yaml_deep}"] = str(yaml_deep)
    folder = tmp_path / "an-empty-folder"
    folder.mkdir()
    places["{dir}"] = str(folder)
    for kind, (prefix, text) in {"toml": (b"", b"[workload]\nproducers = 2\n"),
                                  "json": (b"", json.dumps(_test_json(
                                      "workload", "client_debug", "")).encode()),
                                  "yaml": (b"", b"nodes: []\n"),
                                  "plan": (b"", b"[[entry]]\nname = 'a'\nargs = []\n")}.items():
        path = tmp_path / f"bom.{kind}"
        path.write_bytes(b"\xef\xbb\xbf" + prefix + text)
        places["{bom_" + kind + "}"] = str(path)
    key = tmp_path / "a-key"
    key.write_text("not a key: never read before the file is refused")
    for kind, (addresses, settings, top) in NODES_FILES.items():
        nodes = [{"name": name, "role": "controller" if name.startswith("c") else "broker",
                  "address": address, "key_file": str(key), **settings}
                 for name, address in addresses.items()]
        path = tmp_path / f"nodes-{kind}.yaml"
        path.write_text(top.replace("{dir}", str(folder)) + "nodes:\n" + "".join(
            "  - " + json.dumps({k: str(v).replace("{dir}", str(folder))
                                 for k, v in node.items()}) + "\n" for node in nodes))
        places["{nodes_" + kind + "}"] = str(path)
    return places


@pytest.mark.parametrize("args, words", ROWS, ids=[" ".join(a)[:60] for a, _ in ROWS])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, words):
    run_row(tmp_path, args, words, materialize(tmp_path))


# -- the boundary itself ----------------------------------------------------------------

def _sections():
    from dataclasses import replace

    from elr_harness.core.config import (
        CheckerConfig,
        ClusterConfig,
        RunConfig,
        TopicConfig,
        WorkloadConfig,
    )
    from elr_harness.run.config import default_faults

    return {"cluster": ClusterConfig(), "topic": TopicConfig(), "workload": WorkloadConfig(),
            "run": replace(RunConfig(), faults=default_faults()), "checker": CheckerConfig()}


def test_every_field_has_a_rule_and_the_defaults_meet_theirs():
    """A field added to the config without a rule would pass unchecked: it fails here.
    A fault kind's settings have their kind's rules (run.config.FAULT_RULES)."""
    from elr_harness.core.validate import fields_of, rule_of, validate_config
    from elr_harness.run.config import FAULT_RULES

    missing = []
    for name, section in _sections().items():
        for path, value in fields_of(section, name):
            if path in FAULT_RULES:
                continue
            try:
                rule_of(path, value)
            except KeyError:
                missing.append(path)
    assert missing == []
    assert any(path.startswith("run.faults.disk-fault.") for path in FAULT_RULES)
    validate_config(_sections(), rules=FAULT_RULES)


@pytest.mark.parametrize("flag, value, table, key", [
    ("--topic", "a/b", "topic", "name"),
    ("--name", "a b; rm -rf /", "cluster", "name"),
    ("--subnet", "0.0.0.0/0", "cluster", "subnet"),
    ("--subnet", "192.168.7.0/30", "cluster", "subnet"),
    ("--spark-master", "local[99999999]", "checker", "spark_master"),
    ("--spark-master", "k8s://x", "checker", "spark_master"),
    ("--base-image", "Bad Image", "cluster.image", "base_image"),
])
def test_a_flag_and_a_config_file_refuse_a_value_for_the_same_reason(
        tmp_path, capsys, flag, value, table, key):
    """One validator per field: the flag's message and the file's give the same reason."""
    from elr_harness.cli.main import main

    with pytest.raises(SystemExit) as parsed:
        main(["run", flag, value])
    assert parsed.value.code == 2
    by_flag = capsys.readouterr().err.strip().splitlines()[-1]
    config = tmp_path / "c.toml"
    config.write_text(f"[{table}]\n{key} = {json.dumps(value)}\n")
    assert main(["run", "--config", str(config), "--store", str(tmp_path / "s")]) == 2
    by_file = capsys.readouterr().err.strip()
    # the flag's line ends saying where the flags are listed; the reason is before it
    reason = by_flag.split(f"argument {flag}: ", 1)[1].removesuffix(
        " (`harness run --help` lists the flags)")
    assert by_file == f"harness: --config {config}: [{table}] {key}: {reason}"


def test_a_flag_typed_wins_and_is_what_the_message_names(tmp_path, capsys):
    """The file's bad value is overridden by the flag; a bad typed value is named
    by its flag, not the file."""
    from elr_harness.core.config_file import setting_paths
    from elr_harness.core.validate import default_where

    assert setting_paths({"cluster": {"timings": {"a": 1}, "name": "x"}}) == {
        "cluster.timings.a", "cluster.name"}
    assert default_where("cluster.timings.a") == "[cluster.timings] a"
    from elr_harness.cli.main import build_parser
    from elr_harness.run.config import run_configs
    from elr_harness.run.flags import given_flags

    config = tmp_path / "c.toml"
    config.write_text('[cluster]\nname = "a b"\n')
    argv = ["run", "--config", str(config), "--name", "good"]
    args = build_parser().parse_args(argv)
    args.given = given_flags(build_parser(), argv)
    assert run_configs(args)[0].name == "good"


def test_todays_test_json_replays_and_a_tampered_one_is_refused(tmp_path):
    """A test.json written by today's runs holds only valid values: it still replays;
    the same file with a command in jvm_opts is refused before anything starts."""
    from elr_harness.cli.main import build_parser
    from elr_harness.core.errors import BadInput
    from elr_harness.run.config import run_configs
    from elr_harness.run.flags import given_flags

    def replayed(test: dict):
        path = tmp_path / "test.json"
        path.write_text(json.dumps(test))
        argv = ["run", "--config", str(path)]
        args = build_parser().parse_args(argv)
        args.given = given_flags(build_parser(), argv)
        return run_configs(args)

    cluster = replayed(_test_json("cluster", "subnet", "10.213.77.0/24"))[0]
    assert cluster.subnet == "10.213.77.0/24" and cluster.jvm_opts == (
        "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k")
    with pytest.raises(BadInput, match=r"\[cluster\] jvm_opts: '-Dx=\$\(id\)' is not a JVM"):
        replayed(_test_json("cluster", "jvm_opts", "-Xss512k -Dx=$(id)"))


@pytest.mark.parametrize("value", ["local", "local[*]", "local[4]", "local[256]",
                                   "local[2,3]", "spark://h:7077", "spark://a:1,b.c:7077"])
def test_the_spark_masters_the_checker_runs_are_accepted(value):
    from elr_harness.core.validate import spark_master

    assert spark_master(value) == value


@pytest.mark.parametrize("value", ["10.213.77.0/24", "172.16.0.0/16", "192.168.1.16/28"])
def test_private_subnets_of_16_to_28_are_accepted(value):
    from elr_harness.core.validate import subnet

    assert subnet(value) == value


def test_jvm_options_of_the_defaults_and_common_ones_are_accepted():
    from elr_harness.core.validate import jvm_heap, jvm_options

    for value in ("-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k", "-XX:+UseParallelGC",
                  "-XX:MaxGCPauseMillis=20 -Dfoo.bar=baz -ea", "-Xlog:gc:file=gc.log",
                  "-Djava.io.tmpdir=/var/tmp -XX:+HeapDumpOnOutOfMemoryError"):
        assert jvm_options(value) == value
    assert jvm_heap("-Xms128m -Xmx256m") == "-Xms128m -Xmx256m"


def test_a_run_spec_built_without_run_configs_meets_the_same_rules(tmp_path):
    """run_spec.validate (every run, soak children included) checks the boundary too."""
    from dataclasses import replace

    from elr_harness.core.config import (
        CheckerConfig,
        ClusterConfig,
        RunConfig,
        TopicConfig,
        WorkloadConfig,
    )
    from elr_harness.core.errors import BadInput
    from elr_harness.run.spec import RunSpec, validate

    spec = RunSpec(replace(ClusterConfig(), metadata_log_dir="/data/m;reboot"), [TopicConfig()],
                   WorkloadConfig(), replace(RunConfig(), store=tmp_path / "store"),
                   CheckerConfig())
    with pytest.raises(BadInput, match=r"^\[cluster\] metadata_log_dir: '/data/m;reboot' is"):
        validate(spec)
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("field, value, words", [
    ("rate", float("nan"), "--rate: nan is not a finite number"),
    ("rate", float("inf"), "--rate: inf is not a finite number"),
    ("stop_timeout_s", float("inf"), r"\[workload\] stop_timeout_s: inf is not a finite"),
])
def test_the_workloads_own_check_refuses_nan_and_inf(field, value, words):
    """nan >= 0 is False and nan < 0 is False too: the workload's check saw no problem."""
    from dataclasses import replace

    from elr_harness.core.config import WorkloadConfig
    from elr_harness.core.errors import BadInput
    from elr_harness.workloads.validation import validate

    with pytest.raises(BadInput, match=words):
        validate(replace(WorkloadConfig(), **{field: value}))
