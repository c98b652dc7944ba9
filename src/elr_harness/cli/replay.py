"""`harness replay RUN_DIR [-n N]` (#55): a run's schedule played again on fresh
clusters, and how many of the replays gave its bad anomaly types."""

from __future__ import annotations

import argparse
from pathlib import Path

from elr_harness.core.config import default_store_dir
from elr_harness.core.errors import BadInput
from elr_harness.run.flags import ascii_int

#: The most replays one command makes (each is a whole cluster run).
MAX_REPLAYS = 100


def add_replay_command(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("replay", help="play a run's schedule (its schedule.toml) again "
                            "on fresh clusters, N times: how many gave its bad anomalies",
                            allow_abbrev=False)
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    parser.add_argument("-n", dest="times", type=ascii_int, default=5,
                        help=f"how many replays (1..{MAX_REPLAYS}; default 5)")
    parser.add_argument("--store", type=Path, default=default_store_dir(),
                        help="where store/replay/<time>/ goes")
    parser.set_defaults(func=_cmd_replay)


def _cmd_replay(args: argparse.Namespace) -> int:
    from elr_harness.hunt.replay import replay
    from elr_harness.run.store import check_store

    if not 1 <= args.times <= MAX_REPLAYS:
        raise BadInput(f"-n must be 1..{MAX_REPLAYS}, got {args.times}")
    store = args.store.absolute()
    check_store(store, "replay")
    return replay(args.run_dir.absolute(), args.times, store)
