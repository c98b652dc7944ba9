"""`harness run` flags made into the run's typed configs as the CLI makes them:
what a scenario's settings and refusals are tested through."""

from __future__ import annotations

from pathlib import Path

from elr_harness.cli.main import build_parser
from elr_harness.run.config import run_configs
from elr_harness.run.flags import given_flags


def run_configs_of(store: Path, nemesis: str, *flags: str):
    """(cluster, topic, workload, run, checker) of `harness run --nemesis nemesis
    --store store flags...`."""
    parser = build_parser()
    argv = ["run", "--nemesis", nemesis, "--store", str(store), *flags]
    args = parser.parse_args(argv)
    args.given = given_flags(parser, argv)
    return run_configs(args)
