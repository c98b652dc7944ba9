"""`harness mutants list|build`: mutant Kafkas (#54), each a release with one
method rewritten into a plausible bug, to run the harness on (`--kafka-dist`)."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from elr_harness.core.config import DEFAULT_KAFKA_VERSION, MutantsConfig

console = Console(highlight=False)


def add_mutants_command(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("mutants", help="mutant Kafkas: a release with one method "
                            "rewritten into a bug, to measure what the harness finds",
                            allow_abbrev=False)
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="the catalog: each mutant, what it breaks, "
                                 "the rule that should fire", allow_abbrev=False)
    listing.set_defaults(func=_cmd_list)
    build = actions.add_parser("build", help="write each mutant as a Kafka distribution in "
                               "the cache (for --kafka-dist)", allow_abbrev=False)
    build.add_argument("--kafka-version", default=DEFAULT_KAFKA_VERSION,
                       help=f"the release to mutate (default {DEFAULT_KAFKA_VERSION}; "
                            "`latest` for the newest)")
    build.add_argument("--mutant", default=None, metavar="NAME", help="build this one only")
    build.set_defaults(func=_cmd_build)


def _cmd_list(args: argparse.Namespace) -> int:
    from elr_harness.cluster.mutants.catalog import load_catalog

    for mutant in load_catalog():
        where = f"{mutant.class_name.rsplit('.', 1)[1]}.{mutant.method}"
        print(f"{mutant.name:40} {where:48} -> {mutant.rule}"
              f"{'  (equivalent)' if mutant.equivalent else ''}")
        print(f"    breaks: {mutant.breaks}")
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from elr_harness.cluster.distribution import resolve_distribution
    from elr_harness.cluster.mutants.build import build_mutant
    from elr_harness.cluster.mutants.catalog import find, load_catalog

    mutants = load_catalog()
    chosen = [find(mutants, args.mutant)] if args.mutant else mutants
    release = resolve_distribution(args.kafka_version, None,
                                   lambda m: print(m, file=sys.stderr))
    for mutant in chosen:
        home = build_mutant(mutant, release, MutantsConfig(),
                            lambda m: print(m, file=sys.stderr))
        print(f"{mutant.name:40} {home}")
    console.print(f"[green]{len(chosen)} mutant{'s' if len(chosen) != 1 else ''} of Kafka "
                  f"{release.version}[/green]: run one with `harness run --kafka-dist DIR`")
    return 0
