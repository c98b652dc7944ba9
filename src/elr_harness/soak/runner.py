"""`harness soak`: ordinary runs, one after another, until a duration is used up.

Each run is a `harness run --no-check` child process with its own run
directory in the store; the soak itself checks that directory when the child
is done (soak/check.py: one Spark session for the whole soak, so no
JVM start per run) and writes its results.json and report.html as the run's
own check would have. The soak keeps store/soak/<time>/ with soak.json (every
run: plan entry, seed, release, verdict, counts, duration, the command that
repeats it; the run in flight as `current`, a run recorded but not yet checked
as `unchecked`), junit.xml and index.html, all rewritten after every run, so a
soak whose own process dies (kill -9) has lost nothing and `--resume` goes on
from there, checking first a run that was recorded but not checked.

Why child processes: a run that crashes, hangs in a JVM or leaks threads ends
with its process, not with the soak; the child runs in its own session (a
terminal's Ctrl-C reaches the soak alone, which hands it on exactly once) and
gets SIGINT from the kernel if the soak dies, so it still heals, collects and
tears down its cluster.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import sys
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from elr_harness.core.config import SOAK_TOKEN_ENV, SoakConfig
from elr_harness.core.errors import (
    EXIT_INVALID,
    EXIT_UNKNOWN,
    EXIT_VALID,
    BadInput,
)
from elr_harness.core.files import MISSING, path_problem, read_json
from elr_harness.run.store import check_store, fresh_dir, write_json
from elr_harness.soak.check import SoakChecker
from elr_harness.soak.children import start_child, tear_down_cluster, wait_child
from elr_harness.soak.plan import PlanEntry, PlannedRun, planned_run, workload_seconds
from elr_harness.soak.results import soak_coverage
from elr_harness.soak.state import TOKEN_ENV, is_our_child, marker_in, start_time

console = Console(highlight=False, soft_wrap=True)

SOAK_FILE = "soak.json"


@dataclass(frozen=True)
class SoakSetup:
    """What a soak was started with; soak.json records it, --resume reads it back."""

    config: SoakConfig
    plan: tuple[PlanEntry, ...]
    store: Path
    cluster_name: str
    command: str
    #: real hosts over SSH (docs/SSH.md) instead of containers
    nodes_file: Path | None = None
    #: the runs' private Docker network (None: the run's default)
    subnet: str | None = None


def start(setup: SoakSetup) -> int:
    soak_dir = _new_soak_dir(setup.store)
    state = {"soak_version": 1, "command": setup.command,
             "started_at": _now(), "store": str(setup.store),
             "cluster_name": setup.cluster_name, "config": asdict(setup.config),
             "nodes_file": str(setup.nodes_file) if setup.nodes_file else None,
             "subnet": setup.subnet,
             "plan": [{"name": e.name, "args": list(e.args)} for e in setup.plan],
             "used_s": 0.0, "runs": [], "abandoned": [], "current": None,
             "unchecked": None,
             # the label every container and network of its runs carries: only a
             # cluster with it is this soak's to remove (a resume's teardown too)
             "cluster_token": secrets.token_hex(16)}
    console.print(f"soak directory: {soak_dir}")
    return Soak(soak_dir, state).go()


def resume(soak_dir: Path, run_parser: argparse.ArgumentParser) -> int:
    """Go on with a soak whose process died, without repeating a finished run.

    soak.json is checked whole (soak_state) before anything is signalled,
    deleted or written: a damaged one is one line and leaves everything as it is."""
    from elr_harness.soak.state import Damaged, check_state

    soak_dir = soak_dir.absolute()
    shown = str(soak_dir)[:200]
    problem = path_problem(soak_dir)
    if problem is not None and problem != MISSING:
        raise BadInput(f"--resume {shown}: {problem}")
    if not (soak_dir / SOAK_FILE).is_file():
        raise BadInput(f"--resume {shown}: not a soak directory (no {SOAK_FILE})")
    state = read_json(soak_dir / SOAK_FILE, f"--resume {shown}: {SOAK_FILE}")
    try:
        check_state(state, run_parser)
    except Damaged as err:
        raise BadInput(f"--resume {shown}: {SOAK_FILE} is damaged ({err})") from None
    store = Path(state["store"])
    problem = path_problem(store)
    if problem is not None:
        # the soak made its store; gone, there is nothing of its runs to go on with
        said = problem if problem == MISSING else f"cannot be read: {problem}"
        raise BadInput(f"--resume {shown}: the store soak.json names, {str(store)[:200]}, "
                       f"{said}; was it moved or deleted?")
    try:
        check_store(store, "soak")
    except BadInput as err:
        raise BadInput(f"--resume {shown}: the soak's store: {err.message}") from None
    soak = Soak(soak_dir, state)
    if state.get("ended_at"):
        console.print(f"this soak ended at {state['ended_at']} ({state.get('stopped_because')})")
        try:
            # a Ctrl-C during a check ended it: that run is checked now
            soak.check_unchecked()
        except KeyboardInterrupt:
            console.print("[yellow]interrupted: the run stays recorded, not checked[/yellow]")
        finally:
            soak.checker.close()
        soak.write_summary()
        return soak.exit_code()
    soak.abandon_current()
    console.print(f"resuming {soak_dir}: {len(state['runs'])} runs done")
    return soak.go()


class Soak:
    def __init__(self, soak_dir: Path, state: dict[str, Any]) -> None:
        self.dir = soak_dir
        self.state = state
        self.config = SoakConfig(**{**state["config"], "kafka_versions": tuple(
            state["config"]["kafka_versions"])})
        self.plan = tuple(PlanEntry(e["name"], tuple(e["args"])) for e in state["plan"])
        self.store = Path(state["store"])
        self.nodes_file = Path(state["nodes_file"]) if state.get("nodes_file") else None
        self.checker = SoakChecker()
        self._errors_in_a_row = 0
        for run in reversed(state["runs"]):
            if run["status"] != "error":
                break
            self._errors_in_a_row += 1

    # -- the loop -------------------------------------------------------------

    def go(self) -> int:
        stopped = None
        try:
            self.check_unchecked()
            while stopped is None:
                stopped = self._why_stop()
                if stopped is None:
                    self._one_run(self._next())
        except KeyboardInterrupt:
            stopped = "interrupted (Ctrl-C)"
        finally:
            self.checker.close()
        self.state["ended_at"] = _now()
        self.state["stopped_because"] = stopped
        self.write_summary()
        self._print_summary()
        return self.exit_code()

    def _next(self) -> PlannedRun:
        return planned_run(self.plan, self.config.kafka_versions, self.config.seed,
                           len(self.state["runs"]))

    def _why_stop(self) -> str | None:
        done, most = len(self.state["runs"]), self.config.max_runs
        if most is not None and done >= most:
            return f"{done} runs done (--max-runs {most})"
        left = self.config.duration_s - self.state["used_s"]
        if self._errors_in_a_row >= self.config.max_errors_in_a_row:
            return f"{self._errors_in_a_row} harness errors in a row"
        free = shutil.disk_usage(self.store).free
        if free < self.config.min_free_bytes:
            return (f"the store's disk has {free / 1024**3:.1f} GiB free, under the "
                    f"margin of {self.config.min_free_bytes / 1024**3:.1f} GiB")
        expected = self.expected_s(self._next().entry)
        if expected > left:
            return (f"duration used up: the next run (about {expected:.0f} s) would not "
                    f"finish in the {max(left, 0):.0f} s left")
        return None

    def expected_s(self, entry: PlanEntry) -> float:
        """The longest this entry took so far (+10%); before it ran, a prior."""
        taken = [r["duration_s"] for r in self.state["runs"] if r["entry"] == entry.name]
        if taken:
            return max(taken) * 1.1
        return workload_seconds(entry, self.config) + self.config.run_overhead_s

    def _one_run(self, planned: PlannedRun) -> None:
        runs_dir = self.dir / "runs"
        runs_dir.mkdir(exist_ok=True)
        marker = runs_dir / f"{planned.index:04d}.run-dir"
        log_path = runs_dir / f"{planned.index:04d}.log"
        argv = self.child_argv(planned, marker)
        started = time.monotonic()
        console.print(f"[bold]run {planned.index + 1}[/bold] {planned.entry.name} seed "
                      f"{planned.seed} Kafka {planned.kafka_version}  [dim]{log_path}[/dim]")
        # the token and the start time let --resume tell this child from a
        # process that got its pid after a reboot
        token = secrets.token_hex(16)
        proc = start_child(argv, log_path, {TOKEN_ENV: token, **self._cluster_env()})
        self.state["current"] = {"index": planned.index, "pid": proc.pid,
                                 "start_time": start_time(proc.pid), "token": token,
                                 "marker": str(marker), "started_at": _now()}
        self._save()
        def say_interrupted() -> None:
            console.print("[yellow]interrupted: the run heals, collects and tears down "
                          "first[/yellow]")

        try:
            # no timeout: a soak's run is as long as its entry asks (its time limit)
            code, _ = wait_child(proc, self.config.interrupt_grace_s,
                                 tick=lambda seconds: self._progress(planned, seconds),
                                 tick_every_s=self.config.progress_every_s,
                                 on_interrupt=say_interrupted)
        except KeyboardInterrupt:
            # ended by wait_child (handed the Ctrl-C, killed after the grace); a run
            # that was recorded whole all the same stays for --resume to check
            code = proc.wait()
            self._recorded(planned, code, marker, log_path, time.monotonic() - started,
                           check=False)
            raise
        self._recorded(planned, code, marker, log_path, time.monotonic() - started)

    def child_argv(self, planned: PlannedRun, marker: Path) -> list[str]:
        """The `harness run` of a planned run, in this Python environment."""
        reached = [state for state, entry in soak_coverage(self.state["runs"])["states"].items()
                   if entry["runs"]]
        return [sys.executable, "-m", "elr_harness.cli",
                *planned.run_args(self.store, self.state["cluster_name"], self.nodes_file,
                                  reached, self.state.get("subnet")),
                "--no-check", "--record-run-dir", str(marker)]

    def _recorded(self, planned: PlannedRun, code: int, marker: Path, log_path: Path,
                  seconds: float, check: bool = True) -> None:
        """The child is done: a run it recorded whole is noted as unchecked (one
        write, with `current` cleared) and checked (unless not `check`: a Ctrl-C);
        any other is recorded now."""
        from elr_harness.soak.results import recorded_whole, run_dir_from_marker

        run_dir = run_dir_from_marker(marker, self.store)
        if run_dir is None or not recorded_whole(run_dir):
            self._record(planned, code, marker, log_path, seconds)
            return
        self.state["unchecked"] = {"index": planned.index, "marker": str(marker),
                                   "run_dir": str(run_dir), "log": str(log_path),
                                   "record_s": round(seconds, 1)}
        self.state["current"] = None
        self._save()
        if check:
            self.check_unchecked()

    def check_unchecked(self) -> None:
        """Check the run soak.json names as recorded but not checked, then record
        it. A Ctrl-C leaves it unchecked (KeyboardInterrupt goes on up); a kill -9
        leaves it for --resume, which checks it again from the start."""
        from elr_harness.soak.plan import flag_value
        from elr_harness.soak.results import run_dir_from_marker
        from elr_harness.soak.state import marker_in

        pending = self.state.get("unchecked")
        if not pending:
            return
        planned = planned_run(self.plan, self.config.kafka_versions, self.config.seed,
                              pending["index"])
        marker = marker_in(self.dir, pending["marker"])
        log_path = self.dir / "runs" / f"{planned.index:04d}.log"
        started = time.monotonic()
        run_dir = run_dir_from_marker(marker, self.store) if marker else None
        if run_dir is None:
            code = EXIT_UNKNOWN  # recorded as an error: no run directory to check
        else:
            console.print(f"  checking run {planned.index + 1} ({run_dir.name})")
            try:
                code = self.checker.check(run_dir, log_path, flag_value(
                    list(planned.entry.args), "--spark-master"))
            except KeyboardInterrupt:
                console.print("[yellow]interrupted during the check: the run stays recorded, "
                              "not checked; --resume checks it[/yellow]")
                raise
        self._record(planned, code, marker or Path(pending["marker"]), log_path,
                     pending["record_s"] + time.monotonic() - started)

    def _record(self, planned: PlannedRun, code: int, marker: Path, log_path: Path,
                seconds: float) -> None:
        from elr_harness.soak.results import run_record

        record = run_record(planned, code, marker, log_path, round(seconds, 1), self.config,
                            self.store)
        self.state["runs"].append(record)
        self.state["used_s"] = round(self.state["used_s"] + seconds, 1)
        self.state["current"] = None
        self.state["unchecked"] = None
        if record["status"] in ("error", "interrupted"):
            self._tear_down_leftovers()
        self._errors_in_a_row = self._errors_in_a_row + 1 if record["status"] == "error" else 0
        self.write_summary()
        console.print(f"  -> {record['status']}{_counts_text(record)} in {seconds:.0f} s"
                      + (f": {record['error']}" if record.get("error") else ""))

    def abandon_current(self) -> None:
        """The run in flight when the soak died: wait for its child (it got SIGINT
        from the kernel and is tearing down), note it, and run its slot again.

        The pid is waited for and killed only when /proc shows it is that child
        (start time and token); the marker is read and deleted only inside
        <soak_dir>/runs/, and the run directory it names counts only inside the store."""
        from elr_harness.soak.results import run_dir_from_marker

        current = self.state.get("current")
        if not current:
            return
        pid = current["pid"]
        refused = is_our_child(current)
        killed = False
        if refused is None:
            deadline = time.monotonic() + self.config.interrupt_grace_s
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(1)
            if _alive(pid) and is_our_child(current) is None:
                os.kill(pid, signal.SIGKILL)
                killed = True
        marker = marker_in(self.dir, current["marker"])
        run_dir = run_dir_from_marker(marker, self.store) if marker else None
        note = [refused] if refused and _alive(pid) else []
        if killed:
            # its heal, collect or teardown was cut short: what it left is removed
            # below, and what it recorded may lack its end
            note.append(f"killed: still running {self.config.interrupt_grace_s:g} s after "
                        "its interrupt")
        if marker is None:
            note.append("marker not read: not a NNNN.run-dir in this soak's runs/")
        self.state["abandoned"].append({**current, "run_dir": str(run_dir) if run_dir else None,
                                        **({"note": "; ".join(note)} if note else {})})
        if marker is not None and (marker.is_file() or marker.is_symlink()):
            marker.unlink(missing_ok=True)
        self.state["current"] = None
        self._tear_down_leftovers()
        self._save()

    def _cluster_env(self) -> dict[str, str]:
        """The child run's environment that stamps its cluster as this soak's (a
        soak.json from before cluster tokens has none)."""
        token = self.state.get("cluster_token")
        return {SOAK_TOKEN_ENV: token} if token else {}

    def _tear_down_leftovers(self) -> None:
        """Remove what a run that failed or was abandoned left of its cluster (only a
        cluster that carries this soak's token: children.tear_down_cluster)."""
        tear_down_cluster(self.state["cluster_name"], self.nodes_file,
                          self.state.get("cluster_token"))

    # -- output ---------------------------------------------------------------

    def _save(self) -> None:
        """soak.json, with the coverage of the runs recorded so far."""
        self.state["coverage"] = soak_coverage(self.state["runs"])
        write_json(self.dir / SOAK_FILE, self.state)

    def write_summary(self) -> None:
        from elr_harness.report.soak_index import write_soak_index
        from elr_harness.soak.junit import write_junit

        self._save()
        write_junit(self.state, self.dir / "junit.xml")
        write_soak_index(self.state, self.dir)

    def exit_code(self) -> int:
        statuses = {r["status"] for r in self.state["runs"]}
        if "invalid" in statuses:
            return EXIT_INVALID
        if not self.state["runs"] or statuses - {"valid"} or \
                self.state.get("stopped_because", "").startswith("interrupted"):
            return EXIT_UNKNOWN
        return EXIT_VALID

    def _progress(self, planned: PlannedRun, seconds: float) -> None:
        runs = self.state["runs"]
        tally = ", ".join(f"{sum(r['status'] == s for r in runs)} {s}"
                          for s in ("valid", "invalid", "unknown", "error", "interrupted")
                          if any(r["status"] == s for r in runs)) or "none yet"
        left = self.config.duration_s - self.state["used_s"] - seconds
        console.print(f"  [dim]run {planned.index + 1} at {seconds:.0f} s; done "
                      f"{len(runs)} ({tally}); {max(left, 0) / 60:.0f} min left[/dim]")

    def _print_summary(self) -> None:
        runs = self.state["runs"]
        console.print(f"[bold]soak ended[/bold]: {self.state['stopped_because']}; "
                      f"{len(runs)} runs in {self.state['used_s'] / 60:.1f} min")
        for status in ("invalid", "unknown", "error", "interrupted", "valid"):
            picked = [r for r in runs if r["status"] == status]
            if picked:
                console.print(f"  {len(picked)} {status}: " + ", ".join(
                    f"{r['entry']}/seed {r['seed']}" for r in picked[:10])
                    + (" ..." if len(picked) > 10 else ""))
        console.print(f"index: {self.dir / 'index.html'}\njunit: {self.dir / 'junit.xml'}")


def _counts_text(record: dict[str, Any]) -> str:
    bad = record.get("bad_anomalies") or {}
    return (" (" + ", ".join(f"{n} {name}" for name, n in bad.items()) + ")") if bad else ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead for us
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _new_soak_dir(store: Path) -> Path:
    return fresh_dir(store / "soak")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
