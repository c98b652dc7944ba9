"""The `harness` command line.

Each subcommand parses its flags into the typed config of harness.config and
hands over to the package that does the work. Errors meant for a person are
HarnessError: printed as one clear message, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.config import CheckerConfig, ReportConfig, default_store_dir
from harness.errors import EXIT_UNKNOWN, HarnessError


def _add_check(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="check a history with the Spark checker")
    p.add_argument("path", type=Path, help="a run directory or a history.jsonl")
    p.add_argument("--spark-master", default=CheckerConfig.spark_master,
                   help="Spark master URL (default: local[*], started by the harness)")
    p.set_defaults(func=_cmd_check)


def _cmd_check(args: argparse.Namespace) -> int:
    from checkers.check import check_path

    config = CheckerConfig(spark_master=args.spark_master)
    return check_path(args.path, config)


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="(re)build report.html of a run directory")
    p.add_argument("run_dir", type=Path)
    p.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    from reports.build import build_report

    path = build_report(args.run_dir, ReportConfig())
    print(f"report: {path}")
    return 0


def _add_serve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="browse every run of the store over HTTP")
    p.add_argument("--store", type=Path, default=default_store_dir())
    p.add_argument("--host", default=ReportConfig.serve_host)
    p.add_argument("--port", type=int, default=ReportConfig.serve_port)
    p.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    from reports.serve import serve

    serve(args.store, args.host, args.port)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Jepsen-style fault injection for Apache Kafka's Eligible Leader Replicas",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    from harness.cluster_cli import add_cluster_command

    add_cluster_command(sub)
    _add_check(sub)
    _add_report(sub)
    _add_serve(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except HarnessError as err:
        print(f"harness: {err.message}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return EXIT_UNKNOWN


if __name__ == "__main__":
    sys.exit(main())
