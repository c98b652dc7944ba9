"""The registries of fault kinds and scenarios are the one place their names live
(#33): every kind is one module with its help line, colour and needs; `--help`,
`all`, the layer and the settings a run needs are read from them; no other
production code tests a kind's name."""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path

import pytest

from elr_harness.nemesis.faults import COLOURS, CONFIG, FAULT_KINDS, NOT_IN_ALL, PACKAGES, in_all
from elr_harness.nemesis.needs import Layer
from elr_harness.nemesis.registry import ALL, parse_nemesis, valid_names
from elr_harness.nemesis.scenarios import SCENARIOS

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "elr_harness"


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_every_kind_is_one_module_with_a_help_line_and_a_colour(kind):
    module = importlib.import_module(f"elr_harness.nemesis.faults.{kind.replace('-', '_')}")
    package = module.PACKAGE
    assert PACKAGES[kind] is package and package.name == kind
    assert package.help.strip() and "\n" not in package.help
    assert package.colour.startswith("#") and COLOURS[str(package.recorded)] == package.colour
    # a kind with no role acts on a topic or the cluster's config, not on a node
    assert (package.roles or package.resource == CONFIG) and callable(package.inject)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_scenario_is_one_module_with_its_steps_and_a_help_line(name):
    """Its steps are its shipped file (which parses) or, where they measure what no
    step can ask for yet, its Python class."""
    module = importlib.import_module(f"elr_harness.nemesis.scenarios.{name.replace('-', '_')}")
    package = module.PACKAGE
    assert SCENARIOS[name] is package and package.name == name
    if package.file is not None:
        assert package.scenario is None and package.file == name
        assert parse_nemesis(name).played_file.steps
    else:
        assert package.scenario.name == name and parse_nemesis(name).played_file is None
    assert module.PACKAGE.help.strip() and "\n" not in module.PACKAGE.help


def test_the_registry_holds_every_module_of_the_package():
    """A kind's module that the registry forgot would be a kind no run can ask for.
    Beside the kinds, faults/ holds only what kinds share: base, and config_changes
    (what the kinds that change the cluster's config share)."""
    modules = {p.stem for p in (SRC / "nemesis" / "faults").glob("*.py")} - {
        "__init__", "base", "config_changes"}
    assert modules == {k.replace("-", "_") for k in FAULT_KINDS}
    scenarios = {p.stem for p in (SRC / "nemesis" / "scenarios").glob("*.py")}
    assert scenarios - {"__init__", "base"} == {n.replace("-", "_") for n in SCENARIOS}


def test_all_is_every_kind_but_those_marked_not_in_all():
    assert NOT_IN_ALL == tuple(k for k, p in PACKAGES.items() if not p.in_all)
    assert parse_nemesis(ALL).faults == in_all() == tuple(
        k for k in FAULT_KINDS if k not in NOT_IN_ALL)
    assert set(parse_nemesis(ALL).faults) | set(NOT_IN_ALL) == set(FAULT_KINDS)
    for kind in NOT_IN_ALL:
        assert parse_nemesis(f"{ALL},{kind}").faults == (*in_all(), kind)


def test_valid_names_are_none_guided_the_scenarios_the_kinds_and_all():
    assert valid_names() == ["none", "guided", *SCENARIOS, *FAULT_KINDS, ALL]


def _run_help() -> str:
    from elr_harness.cli.main import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return sub.choices["run"].format_help()


def test_run_help_lists_every_kind_and_scenario_with_its_help_line():
    text = _run_help()
    lines = text.splitlines()
    for name, help_line in [*((k, p.help) for k, p in PACKAGES.items()),
                            *((n, s.help) for n, s in SCENARIOS.items())]:
        (line,) = [x for x in lines if x.split()[:1] == [name]]
        # the first words of its help line stand beside its name
        assert " ".join(help_line.split()[:3]) in line, name
    for kind in NOT_IN_ALL:
        entry = text[text.index(f"  {kind} "):]
        assert f"[not in {ALL}]" in " ".join(entry.split()[:40])
    nemesis_help = " ".join(text[text.index("--nemesis NEMESIS"):].split())
    for name in ["none", *SCENARIOS, ALL]:
        assert name in nemesis_help


@pytest.mark.parametrize(("text", "layers"), [
    ("page-cache-loss", {Layer.PAGE_CACHE}),
    ("kill,page-cache-loss", {Layer.PAGE_CACHE}),
    ("partition+page-cache-loss", {Layer.PAGE_CACHE}),
    (ALL, {Layer.PAGE_CACHE}),
    ("kill,pause,bounce-leader", set()),
    ("none", set()),
])
def test_the_layers_a_plan_needs_come_from_its_kinds(text, layers):
    plan = parse_nemesis(text)
    assert plan.layers == layers and plan.needs_page_cache_layer == bool(layers)


def test_the_layers_and_settings_a_scenario_needs_come_from_its_package():
    for name, scenario in SCENARIOS.items():
        plan = parse_nemesis(name)
        assert plan.scripted is scenario
        assert plan.layers == scenario.layers
        assert plan.cluster_settings == scenario.cluster_settings


def test_a_plans_cluster_settings_are_its_kinds():
    disk = PACKAGES["disk-fault"].cluster_settings
    plan = parse_nemesis(f"{ALL},bounce-leader")
    assert plan.cluster_settings == disk + PACKAGES["bounce-leader"].cluster_settings
    assert PACKAGES["bounce-leader"].cluster_settings != () and disk != ()
    assert parse_nemesis(ALL).cluster_settings == disk
    assert parse_nemesis("kill,pause").cluster_settings == ()


def test_a_config_file_with_cluster_timings_keeps_its_own_preferred_leader_check(tmp_path):
    """bounce-leader's setting yields to a --config [cluster.timings] table, as before."""
    from elr_harness.cli.main import build_parser
    from elr_harness.run.config import run_configs
    from elr_harness.run.flags import given_flags

    config = tmp_path / "c.toml"
    config.write_text("[cluster.timings]\nbroker_session_timeout_ms = 9000\n")
    parser = build_parser()
    for extra, interval in (([], 5), (["--config", str(config)], 300)):
        argv = ["run", "--nemesis", "bounce-leader,kill", "--store", str(tmp_path), *extra]
        args = parser.parse_args(argv)
        args.given = given_flags(parser, argv)
        assert run_configs(args)[0].timings.leader_imbalance_check_interval_s == interval


# -- no code outside a kind's own module tests its name ------------------------------

#: `partition` is also a history field (a topic's partition): compared as such.
FIELD_NAMES = {"partition"}
PRODUCTION = (*sorted(SRC.rglob("*.py")), *sorted((ROOT / "benchmarks").rglob("*.py")))


def _names_in(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
        value = node.value.decode() if isinstance(node.value, bytes) else node.value
        return [value.strip('"')]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [v for e in node.elts for v in _names_in(e)]
    return []


def _tested_names(source: str) -> list[tuple[int, str]]:
    """Kind and scenario names a module compares with, looks up or keys a dict by."""
    names = (set(FAULT_KINDS) | set(SCENARIOS)) - FIELD_NAMES
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.Dict):
            operands = [k for k in node.keys if k is not None]
        elif isinstance(node, ast.Subscript):
            operands = [node.slice]
        else:
            continue
        found += [(node.lineno, n) for o in operands for n in _names_in(o) if n in names]
    return found


def _own_module(path: Path, name: str) -> bool:
    return path.stem == name.replace("-", "_") and path.parent.name in ("faults", "scenarios")


def test_no_production_code_tests_a_kind_or_scenario_name_outside_its_module():
    wrong = [f"{path.relative_to(ROOT)}:{line} tests {name!r}"
             for path in PRODUCTION
             for line, name in _tested_names(path.read_text())
             if not _own_module(path, name)]
    assert wrong == []


def test_the_name_walk_sees_the_tests_the_registry_replaced():
    """It bites: the forms this refactor removed are all caught."""
    source = ('if "bounce-leader" in run.nemesis: pass\n'
              'if run.nemesis.strip() == "fenced-last-leader": pass\n'
              'x = {"unclean-last-replica": 1}["unclean-last-replica"]\n'
              'y = b\'"page-cache-loss"\' in line\n'
              'z = r["partition"] == 1\n')
    assert sorted(_tested_names(source)) == [(1, "bounce-leader"), (2, "fenced-last-leader"),
                                     (3, "unclean-last-replica"), (3, "unclean-last-replica"),
                                     (4, "page-cache-loss")]


def test_the_last_replica_scenarios_shorten_the_timeouts_they_wait_out(tmp_path):
    """unclean-last-replica and its -alone variant run with the ScenarioTimings'
    Kafka timeouts; other scenarios and mixes keep the cluster's; a --config
    [cluster.timings] table keeps the user's own."""
    from elr_harness.cli.main import build_parser
    from elr_harness.core.config import KafkaTimings
    from elr_harness.run.config import run_configs
    from elr_harness.run.flags import given_flags

    config = tmp_path / "c.toml"
    config.write_text("[cluster.timings]\nbroker_session_timeout_ms = 9000\n")
    parser = build_parser()
    default = KafkaTimings()
    short = (1500, 3000, 500)
    for nemesis, extra, expected in (
            ("unclean-last-replica", [], short),
            ("unclean-last-replica-alone", [], short),
            ("min-isr-drop", [], (default.replica_lag_time_max_ms, 6000, 1000)),
            ("kill", [], (default.replica_lag_time_max_ms, 6000, 1000)),
            ("unclean-last-replica", ["--config", str(config)],
             (default.replica_lag_time_max_ms, 9000, 1000))):
        argv = ["run", "--nemesis", nemesis, "--store", str(tmp_path), *extra]
        args = parser.parse_args(argv)
        args.given = given_flags(parser, argv)
        timings = run_configs(args)[0].timings
        assert (timings.replica_lag_time_max_ms, timings.broker_session_timeout_ms,
                timings.broker_heartbeat_interval_ms) == expected, nemesis


# -- no module but a kind's own, the registry and the contract names a kind -------------
#
# A kind is its module (nemesis/faults/<kind>.py) and one line of the registry
# (nemesis/faults/__init__.py); the history contract (core/history.py) lists the
# kinds the history may hold, and its table of what each kind means
# (core/fault_meanings.py) is all the checker reads of a kind: its rules ask for
# properties, never a name. Anything else (the injector, the mix, the guided
# rounds, the run, the config, the report) reaches a kind through the registry:
# by its capabilities, its settings, its heal, its colour. A scenario composes
# named kinds by calling their modules (an import, not a name). So a kind that is
# renamed or added touches its module, the registry and the contract's two
# tables, nothing else.

#: Files that may name a kind (relative to src/elr_harness).
NAMING_ALLOWED = {"nemesis/faults/__init__.py", "core/history.py", "core/fault_meanings.py"}


def _kind_members() -> dict[str, str]:
    """Fault enum member name -> the kind's name, for every kind of the registry."""
    from elr_harness.core.history import Fault

    return {Fault(p.recorded).name: p.name for p in PACKAGES.values()}


def _named_kinds(source: str, own: str | None) -> list[tuple[int, str]]:
    """Where a module names a kind of the registry: `Fault.MEMBER`, or a string that is
    a kind's name with a hyphen (the others are also plain words: partition, kill,
    stop, pause); `own` is the module's own kind, which it may name."""
    members = _kind_members()
    hyphenated = {k for k in FAULT_KINDS if "-" in k}
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "Fault" and node.attr in members):
            kind = members[node.attr]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value in hyphenated:
            kind = node.value
        else:
            continue
        if kind != own:
            found.append((node.lineno, kind))
    return found


def test_no_module_outside_a_kinds_own_the_registry_and_the_contract_names_it():
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in NAMING_ALLOWED:
            continue
        own = (path.stem.replace("_", "-") if path.parent == SRC / "nemesis" / "faults"
               else None)
        wrong += [f"{rel}:{line} names {kind}" for line, kind in
                  _named_kinds(path.read_text(), own)]
    assert wrong == []


def test_the_kind_walk_sees_an_enum_member_and_a_string():
    """It bites: guided.py's old `if way is Fault.KILL` and a kind spelt as a string
    are caught; a kind's module naming itself is not."""
    source = ('if way is Fault.KILL: pass\nx = "page-cache-loss"\n'
              'y = Fault.ONE_WAY_PARTITION\nz = r["partition"]\n')
    assert sorted(_named_kinds(source, None)) == [(1, "kill"), (2, "page-cache-loss"),
                                                  (3, "one-way-partition")]
    assert sorted(_named_kinds(source, "one-way-partition")) == [(1, "kill"),
                                                                 (2, "page-cache-loss")]


def test_a_new_kind_is_its_module_one_registry_line_and_its_contract_entry():
    """one-way-partition, added after the kinds became units: its module, its line in
    the registry, its Fault member and documented detail in the contract, and
    nothing else: it is in `all`, and the guided rounds take brokers out of the ISR
    with it."""
    from elr_harness.core.history import FAULT_DETAILS, Fault
    from elr_harness.nemesis.guided.round import AWAY

    package = PACKAGES["one-way-partition"]
    assert package.recorded is Fault.ONE_WAY_PARTITION
    assert Fault.ONE_WAY_PARTITION in FAULT_DETAILS
    assert "one-way-partition" in in_all() and package in AWAY


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_every_kind_says_how_heal_all_ends_it_and_what_a_schedule_may_use_it_for(kind):
    package = PACKAGES[kind]
    assert package.heals, f"{kind}: heal_all would leave it in force"
    assert package.capabilities and callable(package.act)
    if package.settings is not None:
        defaults = package.default_settings()
        for field in dataclasses.fields(defaults):
            assert field.name in package.rules or field.name.endswith(("_s", "_ms")), (
                f"{kind}: {field.name} has no rule")


def test_the_store_folder_of_a_long_mix_stays_short():
    """Listing all kinds by hand named the store folder with 180 characters."""
    assert parse_nemesis(",".join(in_all())).test_name == "all"
    assert parse_nemesis(",".join(FAULT_KINDS)).test_name == "all-bounce-leader"
    many = "kill,pause,stop,partition,slow-network,disk-fault,reassign,one-way-partition"
    name = parse_nemesis(many).test_name
    assert name == "kill-pause-stop-partition-slow-network-8-kinds" and len(name) <= 60
    assert parse_nemesis("partition+kill,pause").test_name == "partition+kill-pause"
