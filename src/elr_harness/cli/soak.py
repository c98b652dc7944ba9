"""`harness soak`: flags, and every check of them before the first run starts."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

from elr_harness.core.config import ClusterConfig, SoakConfig, default_store_dir
from elr_harness.core.errors import BadInput
from elr_harness.run.flags import add_nodes_file_flag, cluster_name, subnet
from elr_harness.soak.plan import MAX_DURATION_S, MAX_RUNS, MIN_DURATION_S
from elr_harness.soak.results import KEEP_CHOICES

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SIZES = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
#: The largest --min-free (far above any disk; bounds the float arithmetic).
MAX_SIZE_BYTES = 1024**5


def duration(value: str) -> float:
    """`8h`, `30m`, `90s`, `1d` or plain seconds, in ASCII digits (Python's \\d and
    float() would take '٣' for 3), from 1 s to MAX_DURATION_S."""
    match = re.fullmatch(r"[ \t]*([0-9]+(?:\.[0-9]+)?)[ \t]*([smhd]?)[ \t]*", value)
    if not match:
        raise argparse.ArgumentTypeError(f"{value[:40]!r} is not a duration like 8h, 30m or 90s")
    seconds = float(match[1]) * _UNITS[match[2] or "s"]
    if not MIN_DURATION_S <= seconds <= MAX_DURATION_S:
        raise argparse.ArgumentTypeError(f"{value[:40]!r} is not between 1 s and 7 days")
    return seconds


def size(value: str) -> int:
    """`2G`, `500M` or bytes, in ASCII digits, at most MAX_SIZE_BYTES."""
    match = re.fullmatch(r"[ \t]*([0-9]+(?:\.[0-9]+)?)[ \t]*([kKmMgGtT]?)i?[bB]?[ \t]*", value)
    if not match:
        raise argparse.ArgumentTypeError(f"{value[:40]!r} is not a size like 2G or 500M")
    number = int(float(match[1]) * _SIZES[match[2].lower()])
    if number > MAX_SIZE_BYTES:
        raise argparse.ArgumentTypeError(f"{value[:40]!r} is more than 1024T")
    return number


def seed(value: str) -> int:
    """A seed in ASCII digits (int() alone takes '٣' and '1_000'), within 64 bits."""
    if not re.fullmatch(r"-?[0-9]{1,18}", value):
        raise argparse.ArgumentTypeError(f"{value[:40]!r} is not a seed (an integer, "
                                         "at most 18 digits)")
    return int(value)


def max_runs(value: str) -> int:
    """A count of runs in ASCII digits, from 1 to MAX_RUNS."""
    if not re.fullmatch(r"[ \t]*[0-9]{1,7}[ \t]*", value) or \
            not 1 <= int(value) <= MAX_RUNS:
        raise argparse.ArgumentTypeError(f"{value[:40]!r} is not a number of runs "
                                         f"from 1 to {MAX_RUNS}")
    return int(value)


def add_soak_command(sub: argparse._SubParsersAction) -> None:
    s = SoakConfig()
    p = sub.add_parser("soak", help="run tests one after another for a duration "
                                    "(nightly CI): soak.json, junit.xml, index.html")
    p.add_argument("--duration", type=duration, default=s.duration_s,
                   help="how long to soak: 8h, 30m, 90s (default 8h); no run starts that "
                        "cannot finish in the time left")
    p.add_argument("--max-runs", type=max_runs, default=s.max_runs, metavar="N",
                   help="stop after N runs, even with time left (--resume keeps it)")
    p.add_argument("--plan", type=Path, default=None, metavar="FILE",
                   help="TOML file of [[entry]] name/args (`harness run` flags); default: "
                        "unclean-last-replica, then a mix of every fault kind")
    p.add_argument("--seed", type=seed, default=s.seed,
                   help="seed of the first run; run n gets seed + n")
    p.add_argument("--kafka-version", default=",".join(s.kafka_versions),
                   help="releases to rotate, comma separated (e.g. 4.1.1,4.3.1)")
    p.add_argument("--keep", choices=KEEP_CHOICES, default=s.keep,
                   help="what a valid run keeps (invalid and unknown runs keep all)")
    p.add_argument("--min-free", type=size, default=s.min_free_bytes, metavar="SIZE",
                   help="stop cleanly when the store's disk has less free (default 2G)")
    p.add_argument("--store", type=Path, default=default_store_dir())
    p.add_argument("--name", type=cluster_name, default=ClusterConfig.name,
                   help="cluster name the runs use")
    p.add_argument("--subnet", type=subnet, default=None,
                   help=f"the runs' private network (default {ClusterConfig.subnet}); two "
                        "soaks at once need two names and two subnets")
    add_nodes_file_flag(p)
    p.add_argument("--resume", type=Path, default=None, metavar="SOAK_DIR",
                   help="go on with the soak of store/soak/<time> whose process died")
    p.set_defaults(func=_cmd_soak, parser_of_run=_run_parser(sub))


def _run_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    return sub.choices["run"]


def _cmd_soak(args: argparse.Namespace) -> int:
    from elr_harness.run.store import check_store
    from elr_harness.soak import runner as soak
    from elr_harness.soak.plan import DEFAULT_PLAN, read_plan, validate_plan

    if args.resume is not None:
        return soak.resume(args.resume, args.parser_of_run)
    versions = tuple(v.strip() for v in args.kafka_version.split(",") if v.strip())
    if not versions:
        raise BadInput("--kafka-version: give at least one release (or latest)")
    from elr_harness.cluster.distribution import check_request

    for version in versions:
        check_request(version, None)
    store = args.store.absolute()
    check_store(store, "soak")
    plan = read_plan(args.plan) if args.plan else DEFAULT_PLAN
    nodes_file = args.nodes_file.absolute() if args.nodes_file else None
    validate_plan(plan, args.parser_of_run, store, nodes_file)
    config = SoakConfig(duration_s=args.duration, seed=args.seed, kafka_versions=versions,
                        keep=args.keep, min_free_bytes=args.min_free,
                        max_runs=args.max_runs)
    command = shlex.join(["harness", *sys.argv[1:]]) if sys.argv[1:2] == ["soak"] else \
        "harness soak"
    # a non-UTF-8 byte of argv (a lone surrogate here) shown as \udcff: soak.json's
    # check on --resume and index.html take text only
    command = command.encode("utf-8", "backslashreplace").decode("utf-8")
    return soak.start(soak.SoakSetup(config, plan, store, args.name, command, nodes_file,
                                     args.subnet))
