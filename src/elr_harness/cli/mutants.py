"""`harness mutants list|build|fix|score`: mutant Kafkas (#54), each a release with
one method rewritten into a plausible bug, to run the harness on (`--kafka-dist`),
the score: which of them the harness's runs catch, and the candidate fixes of the
draft tickets (#64), built the same way and never scored."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from rich.console import Console

from elr_harness.cli.soak import seed
from elr_harness.core.config import (
    DEFAULT_KAFKA_VERSION,
    ClusterConfig,
    MutantsConfig,
    default_store_dir,
)
from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.core.validate import KAFKA_VERSION_RULE, Invalid
from elr_harness.run.flags import cluster_name, subnet

console = Console(highlight=False)


def kafka_version(value: str) -> str:
    """A Kafka version as `run` takes it (`latest`, or a release name of at most 64
    characters): a 5,000-digit one was an internal error here."""
    try:
        return KAFKA_VERSION_RULE(value)
    except Invalid as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def mutant_names(value: str) -> list[str]:
    """--mutant's names; an empty value, or one of commas only, names none (it meant
    every mutant, and ',' the control alone, neither said)."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{value[:40]!r} names no mutant (leave --mutant "
                                         "out to score every one; `harness mutants list` "
                                         "names them)")
    return names


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
    build.add_argument("--kafka-version", type=kafka_version, default=DEFAULT_KAFKA_VERSION,
                       help=f"the release to mutate (default {DEFAULT_KAFKA_VERSION}; "
                            "`latest` for the newest)")
    build.add_argument("--mutant", default=None, metavar="NAME", help="build this one only")
    build.set_defaults(func=_cmd_build)
    fix = actions.add_parser("fix", help="write each candidate fix of a draft ticket "
                             "(docs/bugs/) as a Kafka distribution in the cache (for "
                             "--kafka-dist); never scored as a mutant", allow_abbrev=False)
    fix.add_argument("--kafka-version", type=kafka_version, default=DEFAULT_KAFKA_VERSION,
                     help=f"the release to fix (default {DEFAULT_KAFKA_VERSION})")
    fix.add_argument("--fix", default=None, metavar="NAME", help="build this one only")
    fix.set_defaults(func=_cmd_fix)
    score = actions.add_parser("score", help="run a plan on every mutant and three times on the "
                               "release (the control): score.json, junit.xml, index.html",
                               allow_abbrev=False)
    score.add_argument("--plan", type=Path, default=None, metavar="FILE",
                       help="TOML file of [[entry]] name/args (the soak's plan format; "
                            "default: the soak's default plan)")
    score.add_argument("--kafka-version", type=kafka_version, default=DEFAULT_KAFKA_VERSION,
                       help="the release the mutants are made of, and the control")
    score.add_argument("--mutant", type=mutant_names, default=None, metavar="NAME[,NAME...]",
                       help="score these only (and the control; default: every mutant)")
    score.add_argument("--seed", type=seed, default=0,
                       help="entry n runs with seed + n, on every mutant alike")
    score.add_argument("--store", type=Path, default=default_store_dir())
    score.add_argument("--name", type=cluster_name, default="elr-mutants",
                       help="cluster name the runs use")
    score.add_argument("--subnet", type=subnet, default=None,
                       help=f"the runs' private network (default {ClusterConfig.subnet})")
    score.add_argument("--resume", type=Path, default=None, metavar="SCORE_DIR",
                       help="go on with the score of store/mutants/<time> whose process died")
    score.set_defaults(func=_cmd_score, parser_of_run=sub.choices["run"])


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


def _cmd_fix(args: argparse.Namespace) -> int:
    from elr_harness.cluster.distribution import resolve_distribution
    from elr_harness.cluster.mutants.build import build_fix
    from elr_harness.cluster.mutants.catalog import load_fixes

    fixes = load_fixes()
    if args.fix is not None:
        fixes = [f for f in fixes if f.name == args.fix]
        if not fixes:
            raise BadInput(f"--fix {args.fix[:80]!r}: no such fix; "
                           "`harness mutants fix` builds every one and names them")
    release = resolve_distribution(args.kafka_version, None,
                                   lambda m: print(m, file=sys.stderr))
    for fix in fixes:
        home = build_fix(fix, release, MutantsConfig(), lambda m: print(m, file=sys.stderr))
        print(f"{fix.name:40} {home}")
    console.print(f"[green]{len(fixes)} fix{'es' if len(fixes) != 1 else ''} of Kafka "
                  f"{release.version}[/green] (each answers a draft in docs/bugs/): run one "
                  f"with `harness run --kafka-dist DIR`")
    return 0


def _targets(version: str, names: list[str]):
    """The control and the named mutants of `version`, each mutant built (cached)."""
    from elr_harness.cluster.distribution import resolve_distribution
    from elr_harness.cluster.mutants.build import build_mutant
    from elr_harness.cluster.mutants.catalog import find, load_catalog
    from elr_harness.hunt.score import CONTROL, Target

    catalog = load_catalog()
    release = resolve_distribution(version, None, lambda m: print(m, file=sys.stderr))
    return release, [Target(CONTROL, None), *(
        Target(name, build_mutant(find(catalog, name), release, MutantsConfig(),
                                  lambda m: print(m, file=sys.stderr))) for name in names)]


def _cmd_score(args: argparse.Namespace) -> int:
    from elr_harness.cluster.mutants.catalog import find, load_catalog
    from elr_harness.hunt import score
    from elr_harness.run.store import check_store
    from elr_harness.soak.plan import DEFAULT_PLAN, PlanEntry, read_plan, validate_plan

    if args.resume is not None:
        score_dir = args.resume.absolute()
        state = score.read_state(score_dir)
        # the plan is run's flags read from a file: validated again, as a new score's
        try:
            validate_plan([PlanEntry(e["name"], tuple(e["args"])) for e in state["plan"]],
                          args.parser_of_run, score_dir.parent.parent)
        except BadInput as err:
            raise BadInput(f"--resume {score_dir}: score.json's plan: {err.message}") from None
        try:
            _, targets = _targets(state["kafka_version"], state["mutants"])
        except HarnessError as err:  # its words name the flag; the value came from score.json
            raise BadInput(f"--resume {score_dir}: score.json's kafka_version or mutants: "
                           f"{err.message}") from None
        return score.Score(score_dir, state, targets).go()
    store = args.store.absolute()
    check_store(store, "mutants")
    plan = read_plan(args.plan) if args.plan else DEFAULT_PLAN
    for entry in plan:
        for arg in entry.args:
            if any(flag.startswith(arg.split("=", 1)[0]) and len(arg) > 2
                   for flag in score.SCORE_OWNED):
                raise BadInput(f"plan entry {entry.name!r}: --kafka-dist is set by the score "
                               "for every run")
    validate_plan(plan, args.parser_of_run, store)
    catalog = load_catalog()
    names = [find(catalog, n).name for n in args.mutant] if args.mutant is not None \
        else [m.name for m in catalog]
    release, targets = _targets(args.kafka_version, names)
    command = shlex.join(["harness", *sys.argv[1:]]) if sys.argv[1:2] == ["mutants"] else \
        "harness mutants score"
    state = score.new_state(release.version, names, list(plan), args.seed, args.name,
                            args.subnet, command,
                            rules={n: find(catalog, n).rule for n in names})
    return score.start(store, state, targets)
