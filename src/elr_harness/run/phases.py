"""`harness run`: the phases of DESIGN.md, in order, whatever goes wrong.

setup -> workload + nemesis -> heal -> final reads -> collect -> check ->
report -> teardown. Healing, collecting and teardown happen on errors and on
Ctrl-C too; what was recorded is always closed and kept. The exit code is the
verdict's: 0 valid, 1 invalid, 2 unknown or a harness error.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.observe import recovered
from elr_harness.core.config import (
    LOG_FORMAT,
    CheckerConfig,
    ReportConfig,
    RunConfig,
)
from elr_harness.core.errors import EXIT_UNKNOWN, HarnessError
from elr_harness.nemesis.registry import NemesisPlan
from elr_harness.run.collect import collect
from elr_harness.run.nemesis_thread import replication_of, run_nemesis
from elr_harness.run.spec import RunSpec, reproduce_command, started_test_json, validate
from elr_harness.run.store import (
    check_run_dir_marker,
    new_run_dir,
    write_json,
    write_run_dir_marker,
)

if TYPE_CHECKING:
    from elr_harness.checker.spark import EarlyStart

console = Console(highlight=False)
#: How much longer than hanging-txn's T the final reads of a run with transactions
#: observe: a few more observations at a loaded machine's pace (~1.3 s apart).
HANG_OBSERVED_S = 4.0


class Phases:
    """The phase the run is in, for the progress line, and when each phase began and
    ended: test.json's `phases`, on the history's clock (`origin` is its time 0), so
    the report can draw them as one bar and start its plots where the workload did."""

    def __init__(self) -> None:
        self.name = "setup"
        self.started = time.monotonic()
        self.origin = self.started
        self._spans: list[tuple[str, float, float | None]] = []

    def enter(self, name: str) -> None:
        now = time.monotonic()
        self.end(now)
        self.name = name
        self._spans.append((name, now, None))
        console.print(f"[bold]── {name}[/bold]  [dim]{now - self.started:.0f} s[/dim]")

    def end(self, now: float | None = None) -> None:
        """The phase in course ends (at now)."""
        if self._spans and self._spans[-1][2] is None:
            name, start, _ = self._spans[-1]
            self._spans[-1] = (name, start, time.monotonic() if now is None else now)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def recorded(self) -> list[dict[str, Any]]:
        """Each ended phase: its name, start (s on the history's clock) and duration."""
        return [{"name": name, "start_s": round(start - self.origin, 3),
                 "duration_s": round(end - start, 3)}
                for name, start, end in self._spans if end is not None]


def run_test(spec: RunSpec) -> int:
    """Run one test end to end; returns the exit code of its verdict."""
    # one absolute store for the whole run: the checker hands its paths to Spark,
    # which resolves relative ones under its own warehouse folder
    spec.run = replace(spec.run, store=Path(spec.run.store).absolute())
    plan = validate(spec)
    if spec.record_run_dir is not None:
        check_run_dir_marker(spec.record_run_dir)
    # A Kafka version that does not resolve, no engine, or a host that does not
    # answer: refuse before a run directory exists, so store/latest keeps pointing
    # at the last real evidence (the jars are cached, so up() finds them again at
    # once). The user's own flags are judged first, the machine after.
    from elr_harness.cluster.distribution import resolve_distribution
    from elr_harness.cluster.providers import provider_for

    def say(message: str) -> None:
        console.print(f"[dim]·[/dim] {message}")

    dist = resolve_distribution(spec.cluster.kafka_version, spec.cluster.kafka_dist, say,
                                spec.cluster.releases)
    from elr_harness.run.transactions import check_transactions, transactions_json

    check_transactions(spec.cluster, spec.workload, dist, say)
    provider = provider_for(spec.cluster)
    provider.preflight(say)
    from elr_harness.nemesis.pagecache.control import PageCacheLayer
    from elr_harness.workloads.recorder import HistoryRecorder

    run_dir = new_run_dir(spec.run.store, plan.test_name)
    console.print(f"run directory: {run_dir}")
    if spec.record_run_dir is not None:
        write_run_dir_marker(spec.record_run_dir, run_dir)
    _log_to(run_dir / "harness.log")
    phases = Phases()
    started_at = datetime.now(UTC)
    test = started_test_json(spec, plan, started_at)
    transactions = transactions_json(spec.cluster, spec.workload, dist.version)
    if transactions is not None:
        test["transactions"] = transactions
    write_json(run_dir / "test.json", test)
    layer = PageCacheLayer() if plan.needs_page_cache_layer else None
    cluster = Cluster(spec.cluster, log=say,
                      broker_storage=layer, provider=provider)
    recorder = HistoryRecorder(run_dir / "history.jsonl",
                               flush_interval_s=spec.workload.recorder_flush_interval_s)
    phases.origin = recorder.origin_ns / 1e9
    outcome: dict[str, Any] = {}
    interrupted = False
    checker = spec.checker or CheckerConfig()
    early_spark: list[EarlyStart] = []

    def start_checker_early() -> None:
        """The checker's JVM starts while collect and teardown run (#35): the check
        that follows them finds its session running."""
        if spec.run.check:
            from elr_harness.checker.spark import EarlyStart

            early_spark.append(EarlyStart(checker,
                                          (run_dir / "history.jsonl").stat().st_size))

    try:
        interrupted = _run_phases(spec, plan, cluster, recorder, layer, phases, outcome, test,
                                  run_dir, start_checker_early)
    except KeyboardInterrupt:
        interrupted = True
        _note_interrupted(test, run_dir)
        console.print("[yellow]interrupted: recording what was done, tearing down[/yellow]")
    except HarnessError as err:
        outcome["error"] = err.message
        console.print(f"[red]harness error:[/red] {err.message}")
    except Exception as err:  # noqa: BLE001 - any crash still keeps the evidence
        outcome["error"] = f"{type(err).__name__}: {err}"
        console.print(f"[red]harness error:[/red] {outcome['error']}")
        traceback.print_exc(file=sys.stderr)
    finally:
        # test.json says how the run ended whatever happens here (a history that
        # cannot be flushed, a teardown that fails, a second Ctrl-C): the end is
        # part of what was recorded
        try:
            interrupted = _close_and_tear_down(recorder, cluster, spec, phases,
                                               outcome) or interrupted
        finally:
            ended_at = datetime.now(UTC)
            phases.end()
            test.update({"ended_at": ended_at.isoformat(timespec="seconds"),
                         "duration_s": round((ended_at - started_at).total_seconds(), 1),
                         "interrupted": interrupted, "phases": phases.recorded(), **outcome})
            write_json(run_dir / "test.json", test)
    if interrupted or "error" in outcome or not spec.run.check:
        for early in early_spark:
            early.cancel(checker.cancelled_tasks_wait_s)
        if "error" in outcome or interrupted:
            console.print(f"evidence kept in {run_dir}; `harness check {run_dir}` re-checks it")
        return EXIT_UNKNOWN
    return check_and_report(run_dir, test, spec.run, checker,
                            early_spark[0] if early_spark else None)


def _note_interrupted(test: dict[str, Any], run_dir: Path) -> None:
    """test.json says the run was interrupted as soon as it was: the heal, collect and
    teardown that follow can outlast whoever waits for them (a soak that resumes
    kills a run that has not ended after its grace), and a run killed then must
    still read as interrupted, not as one whose end was never recorded. A test.json
    that cannot be written now is said, and the heal and collect go on."""
    test["interrupted"] = True
    try:
        write_json(run_dir / "test.json", test)
    except OSError as err:
        console.print(f"[red]test.json could not say the interrupt yet: {err}[/red]")


def _close_and_tear_down(recorder, cluster: Cluster, spec: RunSpec, phases: Phases,
                         outcome: dict[str, Any]) -> bool:
    """Close the history, then remove the cluster (unless kept), each whatever the
    other did; a failure goes into outcome["errors"] (and a history that could not
    be closed is the run's error: it gets no verdict). True if a Ctrl-C came
    meanwhile (the cluster is still removed after one during the close)."""
    interrupted = False
    steps = [("history", recorder.close)]
    if not spec.run.keep_cluster:
        steps.append(("teardown", lambda: (phases.enter("teardown"), cluster.down())))
    for name, step in steps:
        try:
            step()
        except KeyboardInterrupt:
            interrupted = True
            outcome.setdefault("errors", []).append(f"{name}: interrupted")
            console.print(f"[yellow]{name}: interrupted[/yellow]")
        except Exception as err:  # noqa: BLE001 - the next step and test.json still run
            outcome.setdefault("errors", []).append(f"{name}: {err}")
            if name == "history":  # not all of it reached the disk: no verdict on it
                outcome.setdefault("error", f"the history could not be closed: {err}")
            console.print(f"[red]{name} failed: {err}[/red]")
    return interrupted


def _log_to(path: Path) -> None:
    """Client and harness logs (librdkafka's included) go to the run's harness.log,
    not the terminal, where the progress line is."""
    import logging

    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(logging.INFO)


def _run_phases(spec: RunSpec, plan: NemesisPlan, cluster: Cluster, recorder, layer,
                phases: Phases, outcome: dict[str, Any], test: dict[str, Any],
                run_dir: Path, before_collect: Callable[[], None]) -> bool:
    from elr_harness.nemesis.injector import FaultInjector
    from elr_harness.workloads.final_reads import final_reads
    from elr_harness.workloads.observer import ObserverLoop
    from elr_harness.workloads.workload import Workload

    phases.enter("setup")
    cluster.up()
    test["kafka_version"] = cluster.distribution.version if cluster.distribution else None
    test["kafka_dist"] = cluster.distribution.source if cluster.distribution else None
    test["reproduce"] = reproduce_command(spec.cli_args, test["kafka_version"],
                                          spec.cluster.kafka_dist)
    if spec.cluster.kafka_dist is None and test["kafka_version"]:
        # `--config test.json` replays the release that ran, not tomorrow's latest
        test["config"]["cluster"]["kafka_version"] = test["kafka_version"]
    test["nodes"] = {s.name: {"role": s.role.value, "id": s.node_id, "address": s.address}
                     for s in cluster.specs}
    write_json(run_dir / "test.json", test)
    for topic in spec.topics:
        cluster.create_topic(topic)

    injector = FaultInjector(cluster, recorder, layer)
    # The observer skips brokers the nemesis cut off from the controllers (or
    # stopped): they would answer from a stale metadata cache.
    source = cluster.observer(spec.workload.observe_timeout_s, avoid=injector.stale_brokers)
    observer = ObserverLoop(source, [t.name for t in spec.topics], recorder,
                            spec.workload.observe_interval_s)
    observer.start()
    workload = Workload()
    stop_nemesis = threading.Event()
    nemesis_result: dict[str, Any] = {}
    try:
        phases.enter("workload + nemesis")
        workload.start(cluster.bootstrap, spec.topics, recorder, spec.workload,
                       observer=observer,
                       kafka_libs=cluster.distribution.libs if cluster.distribution else None)
        nemesis_thread = threading.Thread(
            target=run_nemesis, name="nemesis",
            args=(plan, spec, injector, observer, stop_nemesis, nemesis_result),
            daemon=True)
        nemesis_thread.start()
        _progress(phases, workload, nemesis_thread, spec, plan)
        stop_nemesis.set()
        nemesis_thread.join(spec.run.nemesis_join_s)
        workload.stop()
    except KeyboardInterrupt:
        _note_interrupted(test, run_dir)
        stop_nemesis.set()
        workload.stop()
        _heal_and_finish(cluster, injector, observer, phases, spec, outcome, run_dir,
                         final=None, recorder=recorder)
        return True
    outcome["nemesis_result"] = nemesis_result
    write_played_schedule(run_dir, plan, nemesis_result, outcome)

    def do_final_reads() -> dict[str, Any]:
        # with transactions: the read_committed read waits out the transaction timeout
        # and the coordinators' abort check once (an abandoned one is aborted first),
        # and hanging-txn's margin: the observer observes meanwhile, so an LSO stuck
        # since the heal spans more than hanging-txn's T in the history (it could not
        # otherwise: the read_committed read ends at once at a stuck LSO)
        settle_s = (spec.workload.txn_timeout_ms +
                    spec.cluster.timings.transaction_abort_check_interval_ms +
                    spec.workload.txn_hang_margin_ms) / 1000 + HANG_OBSERVED_S
        summary = final_reads(cluster.bootstrap, spec.topics, recorder, spec.workload,
                              txn_settle_s=settle_s)
        done = {"complete": summary.complete,
                "incomplete": [f"{t}-{p}" for t, p in summary.incomplete],
                "end_offsets": summary.end_offsets()}
        if summary.committed:
            done["read_committed"] = {
                "incomplete": [f"{t}-{p}" for t, p in summary.incomplete_committed],
                "last_stable_offsets": summary.end_offsets(committed=True)}
        return done

    _heal_and_finish(cluster, injector, observer, phases, spec, outcome, run_dir,
                     final=do_final_reads, recorder=recorder, before_collect=before_collect)
    return False


def write_played_schedule(run_dir: Path, plan: NemesisPlan, nemesis_result: dict[str, Any],
                          outcome: dict[str, Any]) -> None:
    """The run's schedule.toml (a schedule file's steps, a guided run's, a mix's), a
    file that plays them again. A replay file is a convenience: one that cannot be
    written is the run's noted error, and the heal and final reads still run (the
    played steps stay in test.json's nemesis_result)."""
    if "schedule" not in nemesis_result:
        return
    from elr_harness.nemesis.schedule.writer import played_toml, recorded_toml
    from elr_harness.report.atomic import write_atomically

    record = nemesis_result["schedule"]
    played = plan.played_file
    try:
        write_atomically(run_dir / "schedule.toml", played_toml(played, record)
                         if played is not None else recorded_toml(record))
    except Exception as err:  # noqa: BLE001 - the run's evidence comes first
        outcome.setdefault("errors", []).append(f"schedule.toml: {err}")
        console.print(f"[red]schedule.toml could not be written: {err}[/red]")


def _progress(phases: Phases, workload, nemesis_thread: threading.Thread, spec: RunSpec,
              plan: NemesisPlan) -> None:
    """Show phase, elapsed, ops/s and outcomes until the workload (or scenario) ends."""
    deadline = time.monotonic() + spec.run.time_limit_s
    last_line = 0.0
    # a scenario, a schedule file, or rounds (--rounds) end the workload when done
    ends_by_itself = plan.ends_by_itself or spec.run.rounds is not None
    with console.status("") as status:
        while time.monotonic() < deadline:
            if ends_by_itself and not nemesis_thread.is_alive():
                break
            stats = workload.stats()
            sends = stats.sends_by_acks
            line = (f"{phases.name}  {phases.elapsed():4.0f} s  {stats.ops_per_s:6.0f} ops/s  "
                    + "  ".join(f"acks={a}: {c.get('ok', 0)} ok {c.get('fail', 0)} fail "
                                f"{c.get('info', 0)} info" for a, c in sorted(sends.items())))
            if any(f == "txn" for f, _ in stats.completions):
                line += "  txn: " + " ".join(f"{stats.count('txn', t)} {t}"
                                             for t in ("ok", "fail", "info"))
            if stats.last_errors:
                line += f"  last error: {stats.last_errors[-1].error}"
            status.update(line)
            if not console.is_terminal and \
                    time.monotonic() - last_line > spec.run.progress_line_every_s:
                console.print(line)
                last_line = time.monotonic()
            if ends_by_itself:
                # a scripted scenario's end is the workload's: it wakes this wait at
                # once, not at the next poll (which cost 0.25 s on average)
                nemesis_thread.join(spec.run.progress_poll_s)
                if workload.wait(0):
                    break
            elif workload.wait(spec.run.progress_poll_s):
                break


def _heal_and_finish(cluster: Cluster, injector, observer, phases: Phases, spec: RunSpec,
                     outcome: dict[str, Any], run_dir: Path, final, recorder,
                     before_collect: Callable[[], None] | None = None) -> None:
    """Heal everything, wait for recovery, final reads, collect. Always runs."""
    phases.enter("heal")
    try:
        injector.heal_all()
    except Exception as err:  # noqa: BLE001
        outcome.setdefault("errors", []).append(f"heal: {err}")
        console.print(f"[red]healing failed: {err}[/red]")
    recovered = _wait_recovered(observer, spec)
    outcome["recovered"] = recovered
    if final is not None:
        phases.enter("final reads")
        outcome["final_reads"] = final()
    observer.stop()
    phases.enter("collect")
    if before_collect is not None:
        before_collect()
    collect(cluster, [t.name for t in spec.topics], recorder, run_dir / "nodes", outcome)


def _wait_recovered(observer, spec: RunSpec) -> bool:
    expected = replication_of(spec)
    ok = observer.wait_for(lambda states: recovered(states, expected),
                           spec.run.recovery_timeout_s) is not None
    console.print("cluster recovered" if ok else
                  "[yellow]cluster did not fully recover; final reads go ahead[/yellow]")
    return ok


def check_and_report(run_dir: Path, test: dict[str, Any], run: RunConfig,
                     checker: CheckerConfig | None = None,
                     early: EarlyStart | None = None) -> int:
    """Spark checker -> results.json, then report.html, then the terminal summary.
    `early`: the session's start, begun during collect, waited for here."""
    from elr_harness.checker.check import check_in_own_session, exit_code, write_results
    from elr_harness.report.build import build_report
    from elr_harness.report.summary import print_summary

    console.print("[bold]── check[/bold]")
    started = time.monotonic()  # the check's time counts what is left of the JVM's start
    if early is not None:
        early.wait()
    results = check_in_own_session(run_dir / "history.jsonl", test,
                                   checker or CheckerConfig(), started)
    write_results(results, run_dir)
    report = build_report(run_dir, ReportConfig())
    print_summary(results, report)
    return exit_code(results)


