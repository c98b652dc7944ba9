"""soak.json read back by `harness soak --resume`, trusted in nothing.

The soak may run as root and soak.json is a file anyone with write access to
the store can edit; --resume signals a process, deletes a marker and reads a
run directory on its word. So the whole file is checked before anything is
done (types, ranges, the plan re-validated as `harness run` flags), and the
process in flight is signalled only when /proc shows it is the very child the
soak started: same start time, and the soak's random token in its environment.
"""

from __future__ import annotations

import argparse
import math
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

from elr_harness.core import validate
from elr_harness.core.config import SoakConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.files import read_bytes
from elr_harness.run.flags import cluster_name
from elr_harness.soak.plan import (
    MAX_DURATION_S,
    MAX_RUNS,
    MIN_DURATION_S,
    PlanEntry,
    validate_plan,
)
from elr_harness.soak.results import KEEP_CHOICES, MARKER_NAME

#: The environment variable carrying the soak's token into its child run.
TOKEN_ENV = "ELR_HARNESS_SOAK_TOKEN"
_TOKEN = re.compile(r"[0-9a-f]{32}")
#: A Kafka release as the CLI accepts it (cluster.distribution), or latest.
_RELEASE = re.compile(r"latest|[0-9]+(\.[0-9]+)*([-.][A-Za-z0-9]+)*")
#: Longest wait for a run to end after the soak died: the CLI's own bound.
MAX_GRACE_S = 3600.0
#: The kernel's largest pid_max.
_MAX_PID = 4194304
STATUSES = ("valid", "invalid", "unknown", "error", "interrupted")


class Damaged(ValueError):
    """One field of soak.json is wrong: `field: why`."""


def check_state(state: Any, run_parser: argparse.ArgumentParser) -> None:
    """Every field soak.json's reader acts on, checked; Damaged names the first bad one."""
    if not isinstance(state, dict):
        raise Damaged("the file: not a JSON object")
    if state.get("soak_version") != 1 or isinstance(state.get("soak_version"), bool):
        raise Damaged("soak_version: not 1")
    for key in ("command", "started_at"):
        _text(state, key)
    for key in ("ended_at", "stopped_because"):
        _text(state, key, optional=True)
    store = Path(_text(state, "store"))
    if not store.is_absolute():
        raise Damaged("store: not an absolute path")
    try:
        cluster_name(_text(state, "cluster_name"))
    except argparse.ArgumentTypeError as err:
        raise Damaged(f"cluster_name: {err}") from None
    nodes = _text(state, "nodes_file", optional=True)
    network = _text(state, "subnet", optional=True)
    if network is not None:
        try:
            validate.subnet(network)
        except validate.Invalid as err:
            raise Damaged(f"subnet: {err}") from None
    _number(state, "used_s", 0, 10 * MAX_DURATION_S)
    _config(state.get("config"))
    plan = _plan(state.get("plan"))
    for key in ("runs", "abandoned"):
        if not isinstance(state.get(key), list) or \
                not all(isinstance(r, dict) for r in state[key]):
            raise Damaged(f"{key}: not a list of objects")
    for number, run in enumerate(state["runs"]):
        _run(run, f"runs[{number}]")
    token = state.get("cluster_token")
    if token is not None and not (isinstance(token, str) and _TOKEN.fullmatch(token)):
        raise Damaged("cluster_token: not 32 hexadecimal digits")
    _current(state.get("current"))
    _unchecked(state.get("unchecked"), len(state["runs"]))
    if state.get("current") is not None and state.get("unchecked") is not None:
        raise Damaged("current and unchecked: both set (a run is either in flight or "
                      "recorded)")
    try:
        validate_plan(plan, run_parser, store, Path(nodes) if nodes else None)
    except BadInput as err:
        raise Damaged(f"plan: {err.message}") from None


#: Fields holding a path: a lone surrogate there is a file name's non-UTF-8 byte
#: (Python's surrogateescape), elsewhere no text.
_PATHS = ("store", "nodes_file", "marker", "run_dir", "log", "report")


def _text(obj: dict, key: str, where: str = "", optional: bool = False) -> str | None:
    value = obj.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or "\x00" in value or \
            (key not in _PATHS and re.search(r"[\ud800-\udfff]", value)):
        raise Damaged(f"{where}{key}: not a text")
    return value


def _number(obj: dict, key: str, low: float, high: float, where: str = "",
            integer: bool = False, optional: bool = False) -> float | None:
    value = obj.get(key)
    if value is None and optional:
        return None
    kinds = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise Damaged(f"{where}{key}: not {'an integer' if integer else 'a number'}")
    if not math.isfinite(value) or not low <= value <= high:
        raise Damaged(f"{where}{key}: {str(value)[:30]} is not between {low} and {high}")
    return value


#: SoakConfig's numeric fields: (low, high, integer).
_CONFIG_RANGES = {
    "duration_s": (MIN_DURATION_S, MAX_DURATION_S, False),
    "seed": (-(10**18), 10**18, True),
    "min_free_bytes": (0, 1024**5, True),
    "max_errors_in_a_row": (1, 10**6, True),
    "max_runs": (1, MAX_RUNS, True),
    "run_overhead_s": (0, 86400, False),
    "scenario_workload_s": (0, 86400, False),
    "interrupt_grace_s": (0, MAX_GRACE_S, False),
    "progress_every_s": (0.1, 86400, False),
}


def _config(config: Any) -> None:
    if not isinstance(config, dict):
        raise Damaged("config: not an object")
    known = {f.name for f in fields(SoakConfig)}
    unknown = sorted(set(config) - known)
    if unknown:
        raise Damaged(f"config.{unknown[0][:40]}: not a soak setting")
    for key, (low, high, integer) in _CONFIG_RANGES.items():
        # max_runs is null when the soak has no such bound
        absent = key not in config or (key == "max_runs" and config[key] is None)
        _number(config, key, low, high, "config.", integer, optional=absent)
    if "keep" in config and config["keep"] not in KEEP_CHOICES:
        raise Damaged(f"config.keep: not one of {', '.join(KEEP_CHOICES)}")
    versions = config.get("kafka_versions")
    if "kafka_versions" in config and (
            not isinstance(versions, list) or not versions or not all(
                isinstance(v, str) and _RELEASE.fullmatch(v) for v in versions)):
        raise Damaged("config.kafka_versions: not a list of Kafka releases")


def _plan(plan: Any) -> tuple[PlanEntry, ...]:
    if not isinstance(plan, list) or not plan:
        raise Damaged("plan: not a list of entries")
    entries = []
    for number, entry in enumerate(plan):
        where = f"plan[{number}]."
        if not isinstance(entry, dict) or set(entry) != {"name", "args"}:
            raise Damaged(f"plan[{number}]: not an object of name and args")
        name = _text(entry, "name", where)
        if not name.strip() or len(name) > 80 or re.search(r"[\x00-\x1f\x7f-\x9f]", name):
            raise Damaged(f"{where}name: not a short printable text")
        args = entry["args"]
        if not isinstance(args, list) or not all(
                isinstance(a, str) and "\x00" not in a for a in args):
            raise Damaged(f"{where}args: not a list of texts")
        entries.append(PlanEntry(name, tuple(args)))
    return tuple(entries)


def _run(run: dict, where: str) -> None:
    """A finished run's record: what the loop, junit.xml and index.html read."""
    where += "."
    if run.get("status") not in STATUSES:
        raise Damaged(f"{where}status: not one of {', '.join(STATUSES)}")
    _number(run, "index", 0, 10**9, where, integer=True)
    _number(run, "seed", -(2**63), 2**63, where, integer=True)
    _number(run, "duration_s", 0, 10 * MAX_DURATION_S, where)
    for key in ("entry", "kafka_version_requested", "reproduce"):
        _text(run, key, where)
    for key in ("kafka_version", "error", "reason", "run_dir", "log", "report", "kept"):
        _text(run, key, where, optional=True)
    _number(run, "disk_bytes", 0, 2**63, where, integer=True, optional=True)
    for key in ("anomalies", "bad_anomalies", "lost_write_by_acks", "coverage"):
        counts = run.get(key)
        if counts is not None and not (isinstance(counts, dict) and all(
                isinstance(n, int) and not isinstance(n, bool) for n in counts.values())):
            raise Damaged(f"{where}{key}: not counts by name")


def _current(current: Any) -> None:
    """null, or the run in flight: index, pid, marker, and (since tokens) its
    start time and token."""
    if current is None:
        return
    if not isinstance(current, dict):
        raise Damaged("current: not an object or null")
    _number(current, "index", 0, 10**9, "current.", integer=True)
    _number(current, "pid", 2, _MAX_PID, "current.", integer=True)
    _number(current, "start_time", 0, 2**63, "current.", integer=True, optional=True)
    _text(current, "marker", "current.")
    _text(current, "started_at", "current.", optional=True)
    token = current.get("token")
    if token is not None and not (isinstance(token, str) and _TOKEN.fullmatch(token)):
        raise Damaged("current.token: not 32 hexadecimal digits")


def _unchecked(unchecked: Any, runs: int) -> None:
    """null (or absent: a soak.json older than the soak's own checker), or the run
    recorded but not yet checked: the next run's index, its marker, run directory
    and log, and how long its recording took."""
    if unchecked is None:
        return
    if not isinstance(unchecked, dict):
        raise Damaged("unchecked: not an object or null")
    _number(unchecked, "index", runs, runs, "unchecked.", integer=True)
    _number(unchecked, "record_s", 0, 10 * MAX_DURATION_S, "unchecked.")
    for key in ("marker", "run_dir", "log"):
        _text(unchecked, key, "unchecked.")


# -- the process in flight ---------------------------------------------------------


def start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (clock ticks after boot): with the pid, it
    names one process for the life of the machine. None when it is gone."""
    try:
        stat = read_bytes(Path(f"/proc/{pid}/stat"), "stat", 65536).decode(errors="replace")
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (BadInput, ValueError, IndexError):
        return None


def is_our_child(current: dict[str, Any]) -> str | None:
    """None when the pid is the run this soak started; else why not to signal it."""
    pid, token = current["pid"], current.get("token")
    if token is None or current.get("start_time") is None:
        return f"not signalled: pid {pid} has no start time and token recorded"
    if start_time(pid) != current["start_time"]:
        return f"not signalled: pid {pid} is not this soak's run (another start time)"
    try:
        environ = read_bytes(Path(f"/proc/{pid}/environ"), "environ", 1 << 20)
    except BadInput:
        return f"not signalled: the environment of pid {pid} cannot be read"
    if f"{TOKEN_ENV}={token}".encode() not in environ.split(b"\0"):
        return f"not signalled: pid {pid} is not this soak's run (no token)"
    return None


def marker_in(soak_dir: Path, marker: str) -> Path | None:
    """The recorded marker, resolved, when it is a NNNN.run-dir inside
    <soak_dir>/runs/ (that folder itself no symlink out); None otherwise."""
    try:
        runs = (soak_dir / "runs").resolve()
        if runs.parent != soak_dir.resolve():
            return None
        real = Path(marker).resolve()
    except (OSError, ValueError, RuntimeError):
        return None
    if real.parent != runs or not MARKER_NAME.fullmatch(real.name):
        return None
    return real
