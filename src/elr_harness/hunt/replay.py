"""`harness replay RUN_DIR [-n N]` (#55): the schedule a run played, played again on
fresh clusters with the run's release, config and workload, N times; and how many
of the N gave the same bad anomaly types as the run.

The run's schedule is its run directory's schedule.toml (nemesis.schedule.file:
the steps with what each did, which playing ignores). Each replay is a child
`harness run` with the run's own flags as typed (test.json's cli_args), its
release pinned (the version that ran, or its --kafka-dist), its cluster pinned
(--config: its typed config file's tables, with the brokers, log dirs and Kafka
timings the run had: a guided run's fourth broker and its Kafka timeouts, which a
schedule file's run would otherwise set its own way), and --schedule that file
instead of its nemesis. Everything lands in store/replay/<time>/: replay.json
(rewritten after each replay) and runs/ with each replay's run directory and log.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from elr_harness.core.errors import EXIT_UNKNOWN, EXIT_VALID, BadInput
from elr_harness.core.files import read_json, read_text
from elr_harness.core.results_shape import results_shape_problem
from elr_harness.core.toml_write import toml_document
from elr_harness.core.validate import printable
from elr_harness.nemesis.schedule.file import parse_schedule
from elr_harness.run.store import fresh_dir, write_json
from elr_harness.soak.children import run_child, said
from elr_harness.soak.plan import flag_value

console = Console(highlight=False)

SCHEDULE_FILE = "schedule.toml"
REPLAY_FILE = "replay.json"
#: Flags of the run's command line a replay sets itself, or drops (each takes a
#: value): a guided run's or a mix's --reached and --rounds mean nothing to the
#: schedule file it plays.
REPLACED = ("--nemesis", "--schedule", "--store", "--record-run-dir", "--kafka-version",
            "--kafka-dist", "--reached", "--rounds", "--config")
#: The config a replay pins, beside the schedule (its folder keeps it).
PINNED_CONFIG = "run-config.toml"
#: The cluster settings a replay pins to the run's (test.json's config.cluster).
PINNED = ("brokers", "log_dirs", "timings")
#: The typed --config file's [run] settings a replay leaves out (--reached's and
#: --rounds's: a schedule file played refuses them).
UNPINNED_RUN = ("reached", "rounds")


def run_flags(cli_args: list[str]) -> list[str]:
    """The run's flags as typed, without the ones a replay sets itself."""
    args = list(cli_args[1:] if cli_args[:1] == ["run"] else cli_args)
    kept, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in REPLACED:
            skip = True
        elif arg == "--no-check" or any(arg.startswith(f"{flag}=") for flag in REPLACED):
            continue
        else:
            kept.append(arg)
    return kept


def release_flags(test: dict[str, Any]) -> list[str]:
    """The release that ran, pinned: a local build (a mutant, a user's) by its
    folder; a release from Maven Central (test.json says `maven:<version>`) by its
    version."""
    dist = test.get("kafka_dist")
    if isinstance(dist, str) and Path(dist).is_absolute():
        return ["--kafka-dist", dist]
    return ["--kafka-version", str(test.get("kafka_version"))]


def replay_args(cli_args: list[str], schedule: Path, test: dict[str, Any]) -> list[str]:
    """The run's flags as typed, without the ones a replay sets, plus the run's
    schedule file, its release and its cluster pinned (the config written beside
    the schedule)."""
    return [*run_flags(cli_args), "--schedule", str(schedule), *release_flags(test),
            *pinned_config(cli_args, test, schedule.parent / PINNED_CONFIG)]


def pinned_config(cli_args: list[str], test: dict[str, Any], path: Path) -> list[str]:
    """--config `path`, written: the run's typed --config file's tables (when it can
    still be read), with [cluster]'s brokers, log dirs and Kafka timings as the run
    had them; none when test.json does not say them."""
    cluster = (test.get("config") or {}).get("cluster")
    if not isinstance(cluster, dict):
        return []
    typed = flag_value(list(cli_args), "--config")
    data: dict[str, Any] = {}
    if typed is not None:
        # a path the user typed for the run, read now: with the guards of every
        # settings file (it may since have become a FIFO, or a link to /dev/zero)
        shown = f"test.json's cli_args: --config {printable(typed[:200])}"
        try:
            data = tomllib.loads(read_text(Path(typed), shown))
        except BadInput as err:
            console.print(f"[yellow]{escape(err.message)}: the replays pin only the run's "
                          "cluster[/yellow]")
        except (ValueError, RecursionError) as err:
            console.print(f"[yellow]{escape(shown)}: not TOML ({escape(str(err)[:100])}): "
                          "the replays pin only the run's cluster[/yellow]")
    run = data.get("run")
    if isinstance(run, dict):
        # a guided run's or a mix's, like the flags a replay drops (REPLACED): the
        # schedule file it plays has no rounds and aims at nothing
        for key in UNPINNED_RUN:
            run.pop(key, None)
    section = data.setdefault("cluster", {})
    section.update({k: cluster[k] for k in PINNED if k in cluster})
    path.write_text(toml_document(data, ["# the run's config as a replay pins it "
                                         "(harness replay, harness shrink)"]))
    return ["--config", str(path)]


def read_run(run_dir: Path, command: str = "replay"
             ) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """The run's schedule.toml, test.json and results.json (checked enough to act on);
    an error names `command` (replay, shrink)."""
    shown = printable(str(run_dir)[:200])
    if not run_dir.is_dir():
        raise BadInput(f"{command}: {shown} is no run directory")
    schedule = run_dir / SCHEDULE_FILE
    if not os.path.lexists(schedule):
        raise BadInput(f"{command}: {shown} has no {SCHEDULE_FILE}: a run with faults keeps "
                       "one (from this version on); a run of --nemesis none, or an older "
                       "run, has none")
    # checked whole before anything is made: a schedule.toml that is no schedule (or a
    # link to another file) said "error, 0 s  differs" per replay, its reason in a log
    try:
        parse_schedule(read_text(schedule, f"{shown}/{SCHEDULE_FILE}"),
                       f"{shown}/{SCHEDULE_FILE}")
    except BadInput as err:
        raise BadInput(f"{command}: {err.message.removeprefix('--schedule ')}") from None
    test = read_json(run_dir / "test.json", f"{command}: {shown}/test.json")
    results_path = run_dir / "results.json"
    if not os.path.lexists(results_path):
        raise BadInput(f"{command}: {shown} was not checked (no results.json): "
                       f"`harness check {shown}` first")
    results = read_json(results_path, f"{command}: {shown}/results.json")
    if not isinstance(test, dict) or not isinstance(results, dict):
        raise BadInput(f"{command}: {shown}: test.json or results.json is not a run's")
    problem = _run_problem(test, results)
    if problem is not None:
        raise BadInput(f"{command}: {shown}/{problem}")
    return schedule, test, results


def _run_problem(test: dict[str, Any], results: dict[str, Any]) -> str | None:
    """The field of test.json or results.json a replay reads that is not a run's."""
    cli_args = test.get("cli_args")
    if not isinstance(cli_args, list) or not all(isinstance(a, str) for a in cli_args):
        return "test.json: `cli_args` is not the list of words the run was typed with"
    dist, version = test.get("kafka_dist"), test.get("kafka_version")
    if not (isinstance(dist, str) and Path(dist).is_absolute()) and \
            not (isinstance(version, str) and version):
        return "test.json: neither `kafka_dist` (a local build) nor `kafka_version` says " \
               "the release that ran"
    problem = results_shape_problem(results)
    return f"results.json: {problem}" if problem is not None else None


def replay(run_dir: Path, times: int, store: Path) -> int:
    """Play the run's schedule `times` times; say how many gave its bad anomaly types."""
    schedule, test, results = read_run(run_dir)
    verdict = {True: "valid", False: "invalid"}.get(results.get("valid"), "unknown")
    bad = sorted(results.get("bad_anomaly_types") or [])
    out = fresh_dir(store / "replay")
    # the schedule is copied first: the run directory may go, the replays stay readable
    copied = out / SCHEDULE_FILE
    copied.write_text(read_text(schedule, f"replay: {SCHEDULE_FILE}"))
    args = replay_args([str(a) for a in test["cli_args"]], copied, test)
    state: dict[str, Any] = {"run_dir": str(run_dir), "verdict": verdict, "bad": bad,
                             "args": args, "replays": []}
    console.print(f"replay directory: {escape(printable(out))}")
    console.print(f"the run: {verdict}{' (' + ', '.join(bad) + ')' if bad else ''}")
    for number in range(1, times + 1):
        console.print(f"[{number}/{times}] replaying")
        cell = run_child([*args, "--store", str(out / "runs" / "store")], out / "runs",
                         f"replay-{number}")
        cell["same"] = cell["verdict"] == verdict and cell["bad"] == bad
        state["replays"].append(cell)
        write_json(out / REPLAY_FILE, state)
        console.print(f"  {said(cell)}{'' if cell['same'] else '  [yellow]differs[/yellow]'}")
    same = sum(1 for c in state["replays"] if c["same"])
    state["same"] = same
    write_json(out / REPLAY_FILE, state)
    console.print(f"{same} of {times} replays gave the run's verdict and bad anomaly types "
                  f"({', '.join(bad) or 'none'})")
    errors = [c for c in state["replays"] if c["verdict"] in ("error", "unknown")]
    return EXIT_UNKNOWN if errors else EXIT_VALID
