"""`harness shrink RUN_DIR` (#55): an INVALID run's schedule shrunk by delta
debugging to the fewest steps that still reproduce its bad anomaly, with BUG.md."""

from __future__ import annotations

import argparse
from pathlib import Path

from elr_harness.core.config import default_store_dir
from elr_harness.core.errors import BadInput
from elr_harness.run.flags import ascii_int

#: The most replays per candidate (each is a whole cluster run).
MAX_N = 20


def add_shrink_command(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("shrink", help="shrink an INVALID run's schedule to the fewest "
                            "steps that still reproduce it; BUG.md for a ticket (exit 0: "
                            "shrunk and confirmed; 1: shrunk, but the confirming replays "
                            "fell below k of n, no BUG.md; 2: the run's schedule does not "
                            "reproduce, or bad input)",
                            allow_abbrev=False)
    parser.add_argument("run_dir", type=Path, nargs="?", default=None, metavar="RUN_DIR")
    parser.add_argument("-k", type=ascii_int, default=2,
                        help="replays that must reproduce for a candidate to be kept "
                             "(default 2)")
    parser.add_argument("-n", type=ascii_int, default=3,
                        help=f"replays of a candidate at most (default 3, at most {MAX_N})")
    parser.add_argument("--confirm", type=ascii_int, default=5,
                        help="replays of the smallest schedule for its reproduction rate "
                             "(default 5)")
    parser.add_argument("--anomaly", default=None, metavar="TYPE",
                        help="the bad anomaly type to keep (default: the run's first, data "
                             "loss first)")
    parser.add_argument("--store", type=Path, default=default_store_dir(),
                        help="where store/shrink/<time>/ goes")
    parser.add_argument("--resume", type=Path, default=None, metavar="SHRINK_DIR",
                        help="go on with the shrink of store/shrink/<time> whose process died")
    parser.set_defaults(func=_cmd_shrink)


def _cmd_shrink(args: argparse.Namespace) -> int:
    from elr_harness.hunt import shrink
    from elr_harness.run.store import check_store

    if args.resume is not None:
        if args.run_dir is not None:
            raise BadInput("--resume goes on with a shrink: give no RUN_DIR with it")
        return shrink.resume(args.resume.absolute())
    if args.run_dir is None:
        raise BadInput("shrink needs RUN_DIR (or --resume SHRINK_DIR)")
    if not 1 <= args.n <= MAX_N or not 1 <= args.k <= args.n:
        raise BadInput(f"-k and -n must be 1 <= k <= n <= {MAX_N}, got k {args.k}, n {args.n}")
    if not 1 <= args.confirm <= MAX_N:
        raise BadInput(f"--confirm must be 1..{MAX_N}, got {args.confirm}")
    store = args.store.absolute()
    check_store(store, "shrink")
    return shrink.start(args.run_dir.absolute(), store, args.k, args.n, args.anomaly,
                        args.confirm)
