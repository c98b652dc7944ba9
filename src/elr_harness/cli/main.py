"""The `harness` command line.

Each subcommand parses its flags into the typed config of harness.core.config and
hands over to the package that does the work. Errors meant for a person are
HarnessError: printed as one clear message, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from elr_harness.cli.stdout import tolerate_closed_stdout
from elr_harness.core.config import CheckerConfig, ReportConfig, cache_dir, default_store_dir
from elr_harness.core.errors import EXIT_UNKNOWN, HarnessError
from elr_harness.core.files import os_reason
from elr_harness.core.validate import MAX_ROUNDS, printable
from elr_harness.run.flags import (
    ascii_int,
    bounded_int,
    coverage_states,
    finite_float,
    given_flags,
    port,
    seconds,
    spark_master,
    workload_list,
)


def _add_run(sub: argparse._SubParsersAction) -> None:
    from elr_harness.core.config import RunConfig, WorkloadConfig
    from elr_harness.nemesis.registry import nemesis_epilog, nemesis_flag_help
    from elr_harness.run.flags import add_cluster_flags, add_topic_flags

    r, w = RunConfig(), WorkloadConfig()
    # the epilog lists every scenario and fault kind, one line each, from the
    # registries; laid out already, so the parser must not reflow it
    p = sub.add_parser("run", help="run a test: cluster, workload, nemesis, check, report",
                       allow_abbrev=False, epilog=nemesis_epilog(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nemesis", default=r.nemesis, help=nemesis_flag_help())
    p.add_argument("--schedule", default=None, metavar="FILE",
                   help="play a schedule file's steps (TOML; nemesis/schedule/file.py) "
                        "instead of --nemesis; ends when its steps are done")
    p.add_argument("--time-limit", type=seconds, default=None,
                   help="seconds of workload (default 60; a cap of 300 for a scenario, "
                        "which ends when its steps are done)")
    p.add_argument("--interval", type=seconds, default=r.interval_s,
                   help="seconds of each quiet and fault period of a random mix")
    p.add_argument("--seed", type=ascii_int, default=r.seed)
    p.add_argument("--reached", type=coverage_states, default=r.reached, metavar="STATES",
                   help="with --nemesis guided: KIP-966 states reached before (comma "
                        "list, e.g. a soak's so far), aimed at only after the others")
    p.add_argument("--rounds", type=bounded_int(1, MAX_ROUNDS), default=r.rounds,
                   metavar="N",
                   help="with --nemesis guided: at most N rounds; with a random mix: N "
                        "rounds of its rotation (every kind once each); the run ends when "
                        "they are done (--time-limit still caps it)")
    p.add_argument("--store", type=Path, default=default_store_dir())
    p.add_argument("--keep-cluster", action="store_true", help="leave the containers up")
    p.add_argument("--no-check", action="store_true", help="record only; check later")
    g = p.add_argument_group("workload")
    g.add_argument("--producers", type=ascii_int, default=w.producers)
    g.add_argument("--acks", default=",".join(w.acks),
                   help="acks levels spread over producer processes, e.g. all,1,0")
    g.add_argument("--consumers", type=ascii_int, default=w.consumers)
    g.add_argument("--rate", type=finite_float, default=w.rate, help="total sends/s (0: unbounded)")
    g.add_argument("--concurrency", type=ascii_int, default=w.processes_per_client,
                   help="logical processes one producer client serves")
    g.add_argument("--idempotent", action="store_true", help="idempotent producers")
    g.add_argument("--client-debug", default=w.client_debug, metavar="CONTEXTS",
                   help="librdkafka debug contexts for the clients, e.g. msg,protocol "
                        "(logged to the run's harness.log)")
    g.add_argument("--workload", type=workload_list, default=",".join(w.workloads),
                   metavar="plain|txn|plain,txn",
                   help="what the clients do: plain sends and polls, transactions "
                        "(transactional producers and read_committed consumers), or both "
                        f"(default {','.join(w.workloads)})")
    g.add_argument("--txn-client", default=w.txn_client, metavar="java|librdkafka",
                   help="the transactional client: Kafka's own Java client of the Kafka under "
                        "test (KIP-890 with --txn-version 2), or librdkafka "
                        f"(default {w.txn_client})")
    g.add_argument("--txn-version", type=ascii_int, default=None, metavar="1|2",
                   help="transaction.version finalized at format time (default: the "
                        "release's own; 2 is KIP-890's protocol, from Kafka 4.0)")
    p.add_argument("--spark-master", default=CheckerConfig.spark_master, type=spark_master,
                   help="Spark master URL for the check (default: local[*])")
    p.add_argument("--config", type=Path, default=None, metavar="FILE",
                   help="settings from a TOML file ([cluster], [cluster.timings], [topic], "
                        "[workload], [run], [checker]) or a run's test.json to replay it; "
                        "flags given on the command line win")
    # `harness soak` learns where its child run keeps the evidence from this file
    p.add_argument("--record-run-dir", type=Path, default=None, help=argparse.SUPPRESS)
    add_cluster_flags(p)
    add_topic_flags(p, topic_default="elr-test")
    p.set_defaults(func=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    from elr_harness.run.config import run_configs
    from elr_harness.run.phases import run_test
    from elr_harness.run.spec import RunSpec

    cluster, topic, workload, run, checker = run_configs(args)
    spec = RunSpec(cluster=cluster, topics=[topic], workload=workload, run=run,
                   checker=checker, cli_args=list(sys.argv[1:]),
                   record_run_dir=args.record_run_dir)
    return run_test(spec)


def _add_check(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="check a history with the Spark checker",
                       allow_abbrev=False)
    p.add_argument("path", type=Path, help="a run directory or a history.jsonl")
    p.add_argument("--spark-master", default=CheckerConfig.spark_master, type=spark_master,
                   help="Spark master URL (default: local[*], started by the harness)")
    p.set_defaults(func=_cmd_check)


def _cmd_check(args: argparse.Namespace) -> int:
    from elr_harness.checker.check import check_path, exit_code
    from elr_harness.report.summary import print_summary

    config = CheckerConfig(spark_master=args.spark_master)
    results, target = check_path(args.path, config)
    report = target.parent / "report.html"
    print_summary(results, report if report.exists() else None)
    print(f"results: {printable(target)}")
    return exit_code(results)


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="(re)build report.html of a run directory",
                       allow_abbrev=False)
    p.add_argument("run_dir", type=Path)
    p.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    from elr_harness.report.build import build_report

    path = build_report(args.run_dir, ReportConfig())
    print(f"report: {printable(path)}")
    return 0


def _add_serve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="browse every run of the store over HTTP",
                       allow_abbrev=False)
    p.add_argument("--store", type=Path, default=default_store_dir())
    p.add_argument("--host", default=ReportConfig.serve_host)
    p.add_argument("--port", type=port, default=ReportConfig.serve_port)
    p.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    from elr_harness.report.serve import serve

    serve(args.store, args.host, args.port)
    return 0


def _add_versions(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("versions", help="Kafka 4.x releases on Maven Central, the tested marked",
                       allow_abbrev=False)
    p.set_defaults(func=_cmd_versions)


def _cmd_versions(args: argparse.Namespace) -> int:
    from elr_harness.cluster.releases import ELR_DOWNGRADE, TESTED, releases
    from elr_harness.core.config import DEFAULT_KAFKA_VERSION, ReleasesConfig

    found = releases(ReleasesConfig(), lambda m: print(m, file=sys.stderr))
    for version in found:
        notes = [n for n, yes in (("latest", version == found[-1]),
                                  ("default", version == DEFAULT_KAFKA_VERSION)) if yes]
        tested = (f"tested: {TESTED[version]}" if version in TESTED
                  else "unclean-last-replica not run")
        print(f"{version:8} {tested}{'  (' + ', '.join(notes) + ')' if notes else ''}")
        if version in ELR_DOWNGRADE:
            print(f"{'':8} elr-downgrade: {ELR_DOWNGRADE[version]}")
    return 0


class OneLineParser(argparse.ArgumentParser):
    """argparse's refusal as one line (bad input is one line and exit 2): its usage
    block, 20 lines for `harness run`, went before the line that says what was
    wrong; the line now says where the flags are listed instead. Every subcommand's
    parser is of this class (add_subparsers makes its parent's)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the "
                     "flags)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="harness", allow_abbrev=False,
        description="Jepsen-style fault injection for Apache Kafka's Eligible Leader Replicas",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    from elr_harness.cli.cluster import add_cluster_command
    from elr_harness.cli.mutants import add_mutants_command
    from elr_harness.cli.replay import add_replay_command
    from elr_harness.cli.shrink import add_shrink_command
    from elr_harness.cli.soak import add_soak_command

    add_cluster_command(sub)
    _add_run(sub)
    add_soak_command(sub)
    _add_check(sub)
    _add_report(sub)
    _add_serve(sub)
    _add_versions(sub)
    add_mutants_command(sub)
    add_replay_command(sub)
    add_shrink_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    tolerate_closed_stdout()
    parser = build_parser()
    args = parser.parse_args(argv)
    args.given = given_flags(parser, argv)
    if not _working_folder_exists():
        # every relative path (the default store among them) would be looked up in it
        print("harness: the current working folder no longer exists (deleted or moved "
              "away); cd to a folder that exists and try again", file=sys.stderr)
        return EXIT_UNKNOWN
    interrupted = threading.Event()
    with _noting_interrupts(interrupted):
        try:
            return int(args.func(args))
        except KeyboardInterrupt:
            print("harness: interrupted", file=sys.stderr)
            return EXIT_UNKNOWN
        except Exception as err:
            if interrupted.is_set():
                # Ctrl-C reaches the JVM too: what py4j raises then ("Answer from
                # Java side is empty") is the interrupt
                print("harness: interrupted", file=sys.stderr)
                return EXIT_UNKNOWN
            return _report_failure(err)


def _working_folder_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def entry() -> None:
    """The `harness` program: main(), then the end of the Spark JVM it launched,
    waited for. Left to itself that JVM exits about 0.4 s after Python, removing
    its temporary folders as it goes: a process group killed in between (a CI
    step's end, a timing tool) kept them. In-process callers of main() keep the
    JVM for their next check."""
    code = main()
    spark = sys.modules.get("elr_harness.checker.spark")  # only a command that used Spark has one
    if spark is not None:
        try:
            spark.end_jvm(CheckerConfig().cancelled_tasks_wait_s)
        except KeyboardInterrupt:
            pass  # the outcome stands; the JVM, told to end, ends by itself
    sys.exit(code)


@contextmanager
def _noting_interrupts(interrupted: threading.Event) -> Iterator[None]:
    """Python's own Ctrl-C behaviour (KeyboardInterrupt), remembered in interrupted,
    so an error the interrupt caused elsewhere is reported as the interrupt."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return

    def on_sigint(signum, frame):
        interrupted.set()
        signal.default_int_handler(signum, frame)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _report_failure(err: Exception) -> int:
    """One line for any failure that is not a verdict; exit 2, never 1."""
    # every message is one line, whatever a path in it holds
    if isinstance(err, HarnessError):
        print(f"harness: {printable(err.message)}", file=sys.stderr)
        return err.exit_code
    if isinstance(err, OSError):
        # a path of the user's that cannot be made or read: a harness error, never 1
        where = f"{printable(os.fsdecode(err.filename))[:200]}: " if err.filename else ""
        print(f"harness: {where}{printable(os_reason(err))}", file=sys.stderr)
        return EXIT_UNKNOWN
    # a bug of ours: one line, the traceback kept
    log = _keep_traceback()
    print(f"harness: internal error ({type(err).__name__}: {printable(str(err)[:200])}); "
          f"traceback in {log}", file=sys.stderr)
    return EXIT_UNKNOWN


def _keep_traceback() -> Path | str:
    """Write the current exception's traceback where a bug report can find it."""
    import traceback

    try:
        log = cache_dir() / "last-error.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(traceback.format_exc())
        return log
    except OSError:
        return "(not kept: the cache folder is not writable)"
