"""Reading the files of a run directory that a report is allowed to read.

The report reads test.json, results.json, the checker's Parquet tables of the
history (report/checked_tables.py; history.jsonl itself only to know it is
there) and the controllers' metadata-log.json, nothing else; every piece but
test.json may be missing (a run not checked yet, a run that died before
collect), so each loader says "absent" instead of failing.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elr_harness.core.errors import BadInput
from elr_harness.core.files import MAX_SETTINGS_BYTES, MISSING, path_problem, read_json
from elr_harness.core.results_shape import results_shape_problem
from elr_harness.core.validate import printable

#: Run directories are named by their start time: store/<test>/<YYYYmmddTHHMMSS>/.
RUN_DIR_NAME = re.compile(r"^\d{8}T\d{6}$")


@dataclass(frozen=True)
class MetadataLog:
    """One controller's decoded metadata log, or why it is not there."""

    node: str | None
    records: list[dict[str, Any]]
    problem: str | None = None


@dataclass(frozen=True)
class RunFiles:
    """What a run directory holds, loaded; None where a file is absent."""

    run_dir: Path
    test: dict[str, Any]
    results: dict[str, Any] | None
    results_problem: str | None
    history_path: Path | None
    metadata: MetadataLog


#: metadata-log.json holds every metadata record of a run: far more than a settings file.
MAX_METADATA_LOG_BYTES = 256 * 1024 * 1024


def _read_json(path: Path, what: str, max_bytes: int = MAX_SETTINGS_BYTES) -> Any:
    """A run's JSON file within core/files.py's bounds (regular file, size,
    nesting: a deep one would raise RecursionError); BadInput(`what: why`) else."""
    return read_json(path, what, max_bytes)


def load_test_json(run_dir: Path) -> dict[str, Any]:
    """test.json is what makes a directory a run; without it there is nothing to report."""
    problem = path_problem(run_dir)
    if problem is not None:
        raise BadInput(f"{printable(run_dir)}{' ' if problem == MISSING else ': '}"
                       f"{problem}")
    if not run_dir.is_dir():
        raise BadInput(f"{run_dir} is not a directory (expected a run directory)")
    path = run_dir / "test.json"
    if not path.is_file():
        raise BadInput(
            f"{run_dir} is not a run directory: it has no test.json "
            "(runs live in store/<test>/<YYYYmmddTHHMMSS>/)"
        )
    test = _read_json(path, f"{path} cannot be read as JSON")
    if not isinstance(test, dict):
        raise BadInput(f"{path} is not a JSON object")
    return test


#: results_problem's words for a run that was never checked (no results.json at all).
NOT_CHECKED = "results.json is not there yet: the run has not been checked"


def load_results(run_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """results.json, or None and the reason it is not usable: not there (the run was
    not checked: NOT_CHECKED), unreadable, or not of the checker's shape."""
    path = run_dir / "results.json"
    if not os.path.lexists(path):
        return None, NOT_CHECKED
    try:
        results = _read_json(path, "results.json cannot be read")
    except BadInput as err:
        return None, err.message
    if not isinstance(results, dict):
        return None, "results.json is not a JSON object"
    problem = results_shape_problem(results)
    if problem is not None:
        return None, f"results.json: {problem}"
    return results, None


def _controller_names(test: dict[str, Any]) -> list[str]:
    nodes = test.get("nodes")
    if not isinstance(nodes, dict):
        return []
    return sorted(
        name for name, node in nodes.items()
        if isinstance(node, dict) and node.get("role") == "controller"
    )


def load_metadata_log(run_dir: Path, test: dict[str, Any]) -> MetadataLog:
    """The first controller's metadata log that exists (they all hold the same records)."""
    nodes_dir = run_dir / "nodes"
    candidates = [nodes_dir / name / "metadata-log.json" for name in _controller_names(test)]
    if nodes_dir.is_dir():
        candidates += sorted(nodes_dir.glob("*/metadata-log.json"))
    for path in candidates:
        if not path.is_file():
            continue
        try:
            records = _read_json(path, f"{path.parent.name}/metadata-log.json cannot be read",
                                 MAX_METADATA_LOG_BYTES)
        except BadInput as err:
            return MetadataLog(path.parent.name, [], err.message)
        if not isinstance(records, list):
            return MetadataLog(path.parent.name, [],
                               f"{path.parent.name}/metadata-log.json is not a JSON array")
        return MetadataLog(path.parent.name, [r for r in records if isinstance(r, dict)])
    return MetadataLog(None, [], "no controller metadata-log.json in nodes/ "
                       "(the run did not reach the collect phase)")


def load_run(run_dir: Path) -> RunFiles:
    """Everything the report reads, loaded once; only a missing test.json is an error."""
    test = load_test_json(run_dir)
    results, results_problem = load_results(run_dir)
    # the path the checker resolved (checkers.check.resolve_history: symlinks such as
    # store/latest followed, absolute), which its Parquet cache names as its source:
    # `harness report store/latest` found that cache "older than the history" and
    # drew no plot
    history = run_dir.resolve() / "history.jsonl"
    return RunFiles(
        run_dir=run_dir,
        test=test,
        results=results,
        results_problem=results_problem,
        history_path=history if history.is_file() else None,
        metadata=load_metadata_log(run_dir, test),
    )


def store_of(run_dir: Path) -> Path | None:
    """The store a run directory belongs to, when it sits at store/<test>/<time>/."""
    real = run_dir.resolve()
    if RUN_DIR_NAME.match(real.name) and real.parent.parent != real.parent:
        return real.parent.parent
    return None
