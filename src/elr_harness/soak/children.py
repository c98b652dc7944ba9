"""A whole `harness run` as a child process, and its verdict read back: what the
soak, the mutation score (hunt.score), the replays (hunt.replay) and the shrink are
made of. One launcher for all of them: each child runs in its own session, gets
SIGINT when its parent dies (so it heals, collects and tears down rather than
running on alone), is handed a Ctrl-C once and killed after a grace, and, when it
leaves its cluster behind, that cluster is removed (a soak's runs only when it
carries the soak's token). run_child bounds a child by a timeout too: one hung
replay must not hang a shrink for good."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from elr_harness.core.config import ClusterConfig, SoakConfig
from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.core.files import read_json
from elr_harness.core.validate import printable
from elr_harness.soak.plan import flag_value

console = Console(highlight=False)

#: prctl(2) option: the signal a process gets when its parent dies.
_PR_SET_PDEATHSIG = 1


def start_child(argv: list[str], log_path: Path, env: dict[str, str]) -> subprocess.Popen:
    """A child process of its own session, its output appended to log_path: a Ctrl-C
    at the terminal reaches the parent only, which hands it on (end_child); the
    parent's death sends it SIGINT (Linux)."""
    with log_path.open("ab") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_interrupt_me_when_parent_dies,
                                env={**os.environ, "COLUMNS": "120", **env})


def end_child(proc: subprocess.Popen, grace_s: float) -> int:
    """Ctrl-C handed on once; a second Ctrl-C, or the grace running out, kills."""
    try:
        proc.send_signal(signal.SIGINT)
        return proc.wait(timeout=grace_s)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        proc.kill()
        return proc.wait()


def wait_child(proc: subprocess.Popen, grace_s: float, timeout_s: float | None = None,
               tick: Callable[[float], None] | None = None, tick_every_s: float = 30.0,
               on_interrupt: Callable[[], None] | None = None) -> tuple[int, bool]:
    """The child's exit code, and whether it was ended for outliving `timeout_s`
    (Ctrl-C handed on, then killed after the grace). While it runs, `tick` gets
    the seconds so far every `tick_every_s` (the soak's progress line). A Ctrl-C
    here calls `on_interrupt` (to say what happens next), is handed on to the
    child (end_child), then raised."""
    started = time.monotonic()
    try:
        while True:
            waited = time.monotonic() - started
            left = None if timeout_s is None else timeout_s - waited
            if left is not None and left <= 0:
                return end_child(proc, grace_s), True
            step = tick_every_s if tick is not None else None
            if left is not None:
                step = left if step is None else min(step, left)
            try:
                return proc.wait(timeout=step), False
            except subprocess.TimeoutExpired:
                if tick is not None and (left is None or step < left):
                    tick(time.monotonic() - started)
    except KeyboardInterrupt:
        if on_interrupt is not None:
            on_interrupt()
        if proc.poll() is None:
            end_child(proc, grace_s)
        raise


def tear_down_cluster(name: str, nodes_file: Path | None, token: str | None,
                      only_with_token: bool = True) -> None:
    """Remove what a child that failed, outlived its bound or was abandoned left of
    its cluster. A soak's (only_with_token): on containers, only a cluster that
    carries `token` (the label the soak gives its runs); one of the same name that
    does not is somebody else's, and is left up, said. Otherwise (a replay's, a
    shrink's, a score's child, a plain `harness run` of that --name): the cluster of
    that name, as the next such run would remove it before starting its own."""
    from elr_harness.cluster.cluster import Cluster
    from elr_harness.run.flags import with_hosts

    try:
        config = with_hosts(ClusterConfig(name=name, nodes_file=nodes_file))
        provider = None
        if nodes_file is None:
            from elr_harness.cluster.docker_backend import DockerProvider

            # a soak with no token recorded: nothing can be shown to be its own
            provider = DockerProvider(config, token=token or "none recorded") \
                if only_with_token else DockerProvider(config)
        Cluster(config, log=lambda _m: None, provider=provider).down(quiet=True)
    except HarnessError as err:
        from elr_harness.cluster.docker_backend import NotOurs

        said = "" if isinstance(err, NotOurs) else "could not remove the cluster: "
        console.print(f"[yellow]{said}{escape(printable(err.message))}[/yellow]")
    except Exception as err:  # noqa: BLE001 - the next run sweeps leftovers again
        console.print(f"[yellow]could not remove the cluster: "
                      f"{escape(printable(err))}[/yellow]")


def _interrupt_me_when_parent_dies() -> None:
    """In the child, before exec: SIGINT when the parent's process dies (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGINT)
    except OSError:
        pass


def said(cell: dict[str, Any]) -> str:
    """A child run's outcome in words: its verdict, bad anomaly types and time."""
    bad = f" ({', '.join(cell['bad'])})" if cell["bad"] else ""
    return f"{cell['verdict']}{bad}, {cell['seconds']:.0f} s"


def run_child(args: list[str], cell_dir: Path, file_name: str,
              config: SoakConfig | None = None) -> dict[str, Any]:
    """`harness run ARGS` in a child process (start_child), its output in
    cell_dir/<file_name>.log; its verdict, bad anomaly types, KIP-966 states reached
    and the time to its first INVALID, read from the run directory it made (verdict
    "error" when it made none with a results.json, or outlived config.child_timeout_s:
    then `timed_out` says so, and the cluster it left is removed)."""
    config = config or SoakConfig()
    cell_dir.mkdir(parents=True, exist_ok=True)
    marker = cell_dir / f"{file_name}.run-dir"
    log = cell_dir / f"{file_name}.log"
    marker.unlink(missing_ok=True)
    log.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "elr_harness.cli", "run", *args,
            "--record-run-dir", str(marker)]
    started = time.monotonic()
    # a plain `harness run` (no soak's token): it clears a leftover cluster of its
    # --name as any run does, and so does the teardown after it
    proc = start_child(argv, log, {})
    try:
        code, timed_out = wait_child(proc, config.interrupt_grace_s, config.child_timeout_s)
    except KeyboardInterrupt:
        tear_down_cluster(*_cluster_of(args), None, only_with_token=False)
        raise
    cell: dict[str, Any] = {"exit": code, "log": str(log),
                            "seconds": round(time.monotonic() - started, 1)}
    if timed_out:
        cell["timed_out"] = f"ended after {config.child_timeout_s:g} s (child_timeout_s)"
    run_dir = Path(marker.read_text().strip()) if marker.is_file() else None
    results = run_dir / "results.json" if run_dir else None
    if timed_out or run_dir is None or results is None or not results.is_file():
        # as the soak does for a run that ended in error: what it left of its cluster
        # goes (a run that ended with a verdict took its own down)
        tear_down_cluster(*_cluster_of(args), None, only_with_token=False)
        return {**cell, "verdict": "error", "run_dir": str(run_dir) if run_dir else None,
                "bad": [], "states": [], "first_invalid_s": None}
    read = read_json(results, str(results), max_bytes=1 << 30)
    verdict = {True: "valid", False: "invalid"}.get(read.get("valid"), "unknown")
    coverage = read.get("coverage") or {}
    try:
        test = read_json(run_dir / "test.json", "test.json", max_bytes=1 << 30)
        missing = unplayed(test if isinstance(test, dict) else {})
    except (BadInput, OSError) as err:  # a run's own file: said in the cell, not raised
        missing = f"what was played is unknown: {str(err)[:200]}"
    if missing is not None:
        cell["unplayed"] = missing
    return {**cell, "verdict": verdict, "run_dir": str(run_dir),
            "report": str(run_dir / "report.html"),
            "bad": sorted(read.get("bad_anomaly_types") or []),
            "states": sorted(s for s, seen in coverage.items()
                             if isinstance(seen, dict) and (seen.get("count") or 0) > 0),
            "first_invalid_s": first_invalid_s(run_dir, read) if verdict == "invalid" else None}


def unplayed(test: dict[str, Any]) -> str | None:
    """Why a run's nemesis tested less than it was asked to, from test.json, or None:
    a schedule (a scenario's, a file's) that failed, was skipped, stopped before a
    step or skipped one; a scenario step not reached; a nemesis that injected no
    fault at all. `none` asks for none."""
    if test.get("nemesis") == "none":
        return None
    result = test.get("nemesis_result")
    result = result if isinstance(result, dict) else {}
    schedule = result.get("schedule")
    if isinstance(schedule, dict):
        for said, key in (("the schedule failed", "error"),
                          ("the schedule was skipped", "skipped")):
            if schedule.get(key):
                return f"{said}: {str(schedule[key])[:200]}"
        if schedule.get("stopped_before"):
            return f"the nemesis stopped before step {str(schedule['stopped_before'])[:80]}"
        for step in schedule.get("steps") or ():
            if isinstance(step, dict) and (step.get("skipped") or step.get("error")):
                what = "skipped" if step.get("skipped") else "failed"
                return (f"step {str(step.get('step'))[:80]} {what}: "
                        f"{str(step.get('skipped') or step.get('error'))[:200]}")
    steps = [s for s in result.get("steps") or () if isinstance(s, dict)]
    for step in steps:  # a scripted scenario's outcomes
        if step.get("reached") is False:
            return f"scenario step {str(step.get('step'))[:80]} not reached"
    if not steps and not result.get("injected"):
        return "no fault was injected"
    return None


def _cluster_of(args: list[str]) -> tuple[str, Path | None]:
    """The cluster name and nodes file a child's `harness run` flags give."""
    nodes = flag_value(args, "--nodes-file")
    return flag_value(args, "--name") or ClusterConfig().name, Path(nodes) if nodes else None


def first_invalid_s(run_dir: Path, results: dict[str, Any]) -> float | None:
    """Seconds from the history's first line to the first moment a bad anomaly was
    shown: an example is shown by its last operation (a lost write by the final
    read that misses it, not by its send); the earliest such over every example of
    every bad anomaly (None when no example names an operation)."""
    shown = [max(ops) for name in results.get("bad_anomaly_types") or []
             for example in (results.get("anomalies", {}).get(name, {}).get("examples") or [])
             if (ops := [op for op in (example.get("ops") or []) if isinstance(op, int)])]
    if not shown:
        return None
    first, wanted, start = min(shown), None, None
    with (run_dir / "history.jsonl").open("rb") as history:
        for number, line in enumerate(history):
            if number == 0 or number == first:
                try:
                    stamp = json.loads(line).get("time")
                except ValueError:
                    return None
                if number == 0:
                    start = stamp
                if number == first:
                    wanted = stamp
                    break
    if not isinstance(start, int) or not isinstance(wanted, int):
        return None
    return round((wanted - start) / 1e9, 1)


