"""The typed config of one `harness run`: defaults, then a --config file, then the
flags the user typed (core/config_file.py reads the file)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from elr_harness.core.config import (
    CheckerConfig,
    ClusterConfig,
    RunConfig,
    TopicConfig,
    WorkloadConfig,
)
from elr_harness.core.config_file import FileSettings, apply, file_settings
from elr_harness.core.errors import BadInput
from elr_harness.core.validate import default_where, shown_path, validate_config
from elr_harness.nemesis.faults import PACKAGES
from elr_harness.nemesis.registry import plan_or_none
from elr_harness.nemesis.scenarios import SCENARIOS
from elr_harness.run.flags import CLUSTER_FLAGS, TOPIC_FLAGS, cluster_config, topic_config

SECTIONS = ("cluster", "topic", "workload", "run", "checker")
#: The table of each fault kind's own settings in [run]: [run.faults.<kind>].
FAULTS = "faults"

def default_faults() -> dict[str, Any]:
    """Every fault kind's default settings (kinds without any: none)."""
    return {name: p.default_settings() for name, p in PACKAGES.items() if p.settings is not None}


def fault_settings(settings: Any, where: str) -> dict[str, Any]:
    """Every fault kind's settings (kinds without any: none), the defaults with the
    file's [run.faults.<kind>] tables applied."""
    table = settings if settings is not None else {}
    if not isinstance(table, dict):
        raise BadInput(f"{where}[run.{FAULTS}] must be a table of fault kinds, "
                       f"got {table!r:.60}")
    own = {name: p for name, p in PACKAGES.items() if p.settings is not None}
    unknown = sorted(set(table) - set(own))
    if unknown:
        raise BadInput(f"{where}[run.{FAULTS}] has no fault kind {str(unknown[0])[:60]!r} "
                       f"with settings; known: {', '.join(own)}")
    return {name: apply(p.default_settings(), table.get(name, {}),
                        f"{where}[run.{FAULTS}.{name}]")
            for name, p in own.items()}


#: Each fault kind's rules of its own settings, by path (core.validate's RULES for
#: the rest of the config).
FAULT_RULES = {f"run.{FAULTS}.{name}.{field}": rule for name, p in PACKAGES.items()
               for field, rule in p.rules.items()}

#: flag dest -> (section, field): where a typed flag of `run` lands in the config
#: (the cluster and topic flags: harness.flags.cluster_config and topic_config).
FLAG_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "producers": (("workload", "producers"),), "consumers": (("workload", "consumers"),),
    "rate": (("workload", "rate"),), "concurrency": (("workload", "processes_per_client"),),
    "idempotent": (("workload", "idempotent"),), "client_debug": (("workload", "client_debug"),),
    "nemesis": (("run", "nemesis"),), "schedule": (("run", "schedule"),),
    "interval": (("run", "interval_s"),),
    "reached": (("run", "reached"),), "rounds": (("run", "rounds"),),
    "store": (("run", "store"),), "keep_cluster": (("run", "keep_cluster"),),
    "seed": (("run", "seed"), ("workload", "seed")),
    "time_limit": (("run", "time_limit_s"), ("workload", "time_limit_s")),
    "spark_master": (("checker", "spark_master"),),
    "workload": (("workload", "workloads"),), "txn_client": (("workload", "txn_client"),),
    "txn_version": (("cluster", "transaction_version"),),
}


def flag_of(dest: str) -> str:
    return "--" + dest.replace("_", "-")


#: "section.field" -> the flag that sets it (the names a message gives a typed value).
FIELD_FLAGS: dict[str, str] = {
    **{f"cluster.{field}": flag_of(dest) for dest, field in CLUSTER_FLAGS.items()},
    **{f"topic.{field}": flag_of(dest) for dest, field in TOPIC_FLAGS.items()},
    **{f"{section}.{field}": flag_of(dest) for dest, places in FLAG_FIELDS.items()
       for section, field in places},
    "cluster.image.base_image": "--base-image", "workload.acks": "--acks",
    "run.check": "--no-check"}


def run_configs(args: argparse.Namespace, note: Callable[[str], None] | None = None
                ) -> tuple[ClusterConfig, TopicConfig, WorkloadConfig, RunConfig, CheckerConfig]:
    """The config of `harness run` from its flags (args.config: a --config file or an
    earlier run's test.json, settings retired since said to `note`, stderr by
    default)."""
    loaded = file_settings(args.config, note or _to_stderr)
    where, settings = loaded.where, loaded.tables
    unknown = sorted(set(settings) - set(SECTIONS))
    if unknown:
        raise BadInput(f"{where}no section [{shown_path(unknown[0])}]; "
                       f"known: {', '.join(SECTIONS)}")
    sections: dict[str, Any] = {
        "cluster": ClusterConfig(), "topic": TopicConfig(), "workload": WorkloadConfig(),
        "run": RunConfig(), "checker": CheckerConfig()}
    run_table = settings.get("run")
    own_faults = run_table.pop(FAULTS, None) if isinstance(run_table, dict) else None
    for name, section in sections.items():
        if name in settings:
            sections[name] = apply(section, settings[name], f"{where}[{name}]")
    sections["run"] = replace(sections["run"], faults=fault_settings(own_faults, where))
    if own_faults is not None:
        run_table[FAULTS] = own_faults  # the file's paths name its settings in messages
    given = getattr(args, "given", set())
    sections["cluster"] = cluster_config(args, sections["cluster"], given)
    sections["topic"] = topic_config(args, sections["topic"], given)
    for dest in given:
        for section, field in FLAG_FIELDS.get(dest, ()):
            sections[section] = replace(sections[section], **{field: getattr(args, dest)})
    if "acks" in given:
        sections["workload"] = replace(sections["workload"], acks=tuple(
            a.strip() for a in args.acks.split(",") if a.strip()))
    if "no_check" in given:
        sections["run"] = replace(sections["run"], check=False)
    run = sections["run"]
    scripted = run.nemesis.strip() in SCENARIOS or run.schedule is not None
    if scripted and "time_limit" not in given and "time_limit_s" not in settings.get("run", {}):
        # a scenario ends when its steps are done: its limit is only a cap (a mix's
        # is run.time_limit_s's default)
        run = replace(run, time_limit_s=run.scenario_time_limit_s)
    # what the nemesis's kinds or scenario need (their packages say), unless chosen;
    # a nemesis that does not parse needs nothing here: validation names it later
    plan = plan_or_none(run.nemesis, run.schedule)
    for setting in plan.cluster_settings if plan else ():
        if not _chosen(setting.chosen_by, given, settings):
            section, *path = setting.path.split(".")
            sections[section] = _with(sections[section], path,
                                      setting.value_in(run, sections))
    if "seed" not in given and "seed" in settings.get("run", {}):
        sections["workload"] = replace(sections["workload"], seed=run.seed)
    sections["workload"] = replace(sections["workload"], time_limit_s=run.time_limit_s)
    if "txn" in sections["workload"].workloads:
        # the transactions' internal topics get ELR's protection too (the cluster's job)
        sections["cluster"] = replace(sections["cluster"], guard_internal_topics=True)
    sections["run"] = run
    # run before workload: the workload's seed and time limit are copied from the run's,
    # so a bad one is named where it was set
    validate_config({name: sections[name] for name in ("cluster", "topic", "run", "workload",
                                                       "checker")},
                    _sources(loaded, given), FAULT_RULES)
    return (sections["cluster"], sections["topic"], sections["workload"], sections["run"],
            sections["checker"])


def _chosen(path: str, given: set[str], settings: dict[str, Any]) -> bool:
    """Whether the user set `path` (`section.field...`): its flag typed, or the
    --config file holding that key or table."""
    flag = FIELD_FLAGS.get(path)
    if flag is not None and flag.removeprefix("--").replace("-", "_") in given:
        return True
    table: Any = settings
    for key in path.split("."):
        if not isinstance(table, dict) or key not in table:
            return False
        table = table[key]
    return True


def _with(section: Any, path: list[str], value: Any) -> Any:
    """A copy of the frozen dataclass `section` with the field at `path` set."""
    head, *rest = path
    return replace(section, **{head: _with(getattr(section, head), rest, value)
                               if rest else value})


def _sources(loaded: FileSettings, given: set[str]) -> Callable[[str], str]:
    """where(path) for validate_config: the flag typed, else the --config file's
    table and key, else the field (a default or a derived value)."""
    typed = {path for path, flag in FIELD_FLAGS.items()
             if flag.removeprefix("--").replace("-", "_") in given}

    def where(path: str) -> str:
        if path in typed:
            return FIELD_FLAGS[path]
        if path in loaded.paths:
            return f"{loaded.where}{default_where(path)}"
        return default_where(path)
    return where


def _to_stderr(line: str) -> None:
    import sys

    print(f"harness: {line}", file=sys.stderr)
