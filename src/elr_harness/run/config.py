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
from elr_harness.core.config_file import apply, read_settings, setting_paths
from elr_harness.core.errors import BadInput
from elr_harness.core.validate import default_where, shown_path, validate_config
from elr_harness.nemesis.registry import plan_or_none
from elr_harness.nemesis.scenarios import SCENARIOS
from elr_harness.run.flags import CLUSTER_FLAGS, TOPIC_FLAGS, cluster_config, topic_config

SECTIONS = ("cluster", "topic", "workload", "run", "checker")

#: flag dest -> (section, field): where a typed flag of `run` lands in the config
#: (the cluster and topic flags: harness.flags.cluster_config and topic_config).
FLAG_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "producers": (("workload", "producers"),), "consumers": (("workload", "consumers"),),
    "rate": (("workload", "rate"),), "concurrency": (("workload", "processes_per_client"),),
    "idempotent": (("workload", "idempotent"),), "client_debug": (("workload", "client_debug"),),
    "nemesis": (("run", "nemesis"),), "interval": (("run", "interval_s"),),
    "reached": (("run", "reached"),),
    "store": (("run", "store"),), "keep_cluster": (("run", "keep_cluster"),),
    "seed": (("run", "seed"), ("workload", "seed")),
    "time_limit": (("run", "time_limit_s"), ("workload", "time_limit_s")),
    "spark_master": (("checker", "spark_master"),),
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


def run_configs(args: argparse.Namespace) -> tuple[ClusterConfig, TopicConfig, WorkloadConfig,
                                                   RunConfig, CheckerConfig]:
    settings = read_settings(args.config) if args.config else {}
    where = f"--config {shown_path(args.config)}: "
    unknown = sorted(set(settings) - set(SECTIONS))
    if unknown:
        raise BadInput(f"{where}no section [{shown_path(unknown[0])}]; "
                       f"known: {', '.join(SECTIONS)}")
    sections: dict[str, Any] = {
        "cluster": ClusterConfig(), "topic": TopicConfig(), "workload": WorkloadConfig(),
        "run": RunConfig(), "checker": CheckerConfig()}
    for name, section in sections.items():
        if name in settings:
            sections[name] = apply(section, settings[name], f"{where}[{name}]")
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
    scripted = run.nemesis.strip() in SCENARIOS
    if scripted and "time_limit" not in given and "time_limit_s" not in settings.get("run", {}):
        # a scenario ends when its steps are done: its limit is only a cap (a mix's
        # is run.time_limit_s's default)
        run = replace(run, time_limit_s=run.scenario_time_limit_s)
    # what the nemesis's kinds or scenario need (their packages say), unless chosen;
    # a nemesis that does not parse needs nothing here: validation names it later
    plan = plan_or_none(run.nemesis)
    for setting in plan.cluster_settings if plan else ():
        if not _chosen(setting.chosen_by, given, settings):
            section, *path = setting.path.split(".")
            sections[section] = _with(sections[section], path, setting.value(run))
    if "seed" not in given and "seed" in settings.get("run", {}):
        sections["workload"] = replace(sections["workload"], seed=run.seed)
    sections["workload"] = replace(sections["workload"], time_limit_s=run.time_limit_s)
    sections["run"] = run
    # run before workload: the workload's seed and time limit are copied from the run's,
    # so a bad one is named where it was set
    validate_config({name: sections[name] for name in ("cluster", "topic", "run", "workload",
                                                       "checker")},
                    _sources(args, settings, given))
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


def _sources(args: argparse.Namespace, settings: dict[str, Any],
             given: set[str]) -> Callable[[str], str]:
    """where(path) for validate_config: the flag typed, else the --config file's
    table and key, else the field (a default or a derived value)."""
    from_file = setting_paths(settings)
    typed = {path for path, flag in FIELD_FLAGS.items()
             if flag.removeprefix("--").replace("-", "_") in given}

    def where(path: str) -> str:
        if path in typed:
            return FIELD_FLAGS[path]
        if path in from_file:
            return f"--config {shown_path(args.config)}: {default_where(path)}"
        return default_where(path)
    return where
