"""The store: one directory per run, never overwritten, and store/latest.

    store/<test>/<YYYYmmddTHHMMSS>/   test.json, history.jsonl, results.json,
                                      report.html, nodes/<node>/...
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from elr_harness.core.errors import BadInput
from elr_harness.core.files import os_reason, path_problem


def check_store(store: Path, folder: str | None = None) -> None:
    """Refuse a store that cannot hold run directories, before anything starts
    (without making it: a refused run leaves nothing behind); with `folder`, the
    folder of the store a run or soak directory goes in (store/<test>,
    store/soak) must be one, if it is there."""
    shown = str(store)[:120]
    try:
        existing = Path(store).absolute()
        while not existing.exists() and existing.parent != existing:
            if os.path.lexists(existing):
                # a symlink that loops or leads nowhere: mkdir would fail on it later
                where = "" if existing == Path(store).absolute() else f"{existing}: "
                raise BadInput(f"--store {shown}: {where}{path_problem(existing)}")
            existing = existing.parent
        if not existing.is_dir():
            where = "" if existing == Path(store).absolute() else f" ({existing} is a file)"
            raise BadInput(f"--store {shown}: not a folder{where}")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise BadInput(f"--store {shown}: {existing} is not writable")
        inside = Path(store) / folder if folder else None
        if inside is not None and os.path.lexists(inside) and not inside.is_dir():
            kind = path_problem(inside) or "a file"
            raise BadInput(f"--store {shown}: {folder} in it is {kind}, not the folder "
                           f"the {'soak' if folder == 'soak' else 'run'} keeps its "
                           "directories in; move it away or pick another --store")
        latest = Path(store) / "latest"
        if latest.exists() and not latest.is_symlink():
            raise BadInput(f"--store {shown}: its 'latest' is a file or folder of yours, not "
                           "the harness's link to the newest run; move it away or pick "
                           "another --store")
    except OSError as err:
        raise BadInput(f"--store {shown}: {os_reason(err)}") from err


def new_run_dir(store: Path, test_name: str) -> Path:
    """A fresh directory for a run, and store/latest pointed at it."""
    run_dir = fresh_dir(store / test_name)
    _point_latest(store, run_dir)
    return run_dir


def fresh_dir(parent: Path) -> Path:
    """A new directory named by the UTC time under parent; a second one in the
    same second gets a suffix (made with mkdir, so two processes never share one)."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    parent.mkdir(parents=True, exist_ok=True)
    for suffix in ["", *(f"-{i}" for i in range(1, 100))]:
        candidate = parent / f"{stamp}{suffix}"
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(f"no free directory under {parent}")


def _point_latest(store: Path, run_dir: Path) -> None:
    """store/latest -> the newest run, replaced atomically; only ever a link the
    harness made is replaced (check_store refused a store whose 'latest' is not)."""
    link = store / "latest"
    if link.exists() and not link.is_symlink():
        return
    tmp = store / f".latest-{os.getpid()}"
    if tmp.is_symlink():
        tmp.unlink()
    tmp.symlink_to(run_dir.relative_to(store))
    os.replace(tmp, link)


#: The name `harness soak` gives the file a child run writes its directory to.
RUN_DIR_MARKER_SUFFIX = ".run-dir"


def check_run_dir_marker(path: Path) -> None:
    """--record-run-dir names a new file of the soak's kind in an existing folder:
    never a file that is already there (it would be overwritten)."""
    shown = str(path)[:120]
    if not path.name.endswith(RUN_DIR_MARKER_SUFFIX):
        raise BadInput(f"--record-run-dir {shown}: not a soak's marker (*{RUN_DIR_MARKER_SUFFIX})")
    if path.is_symlink() or path.exists():
        raise BadInput(f"--record-run-dir {shown}: already exists (never overwritten)")
    if not path.parent.is_dir():
        raise BadInput(f"--record-run-dir {shown}: no such folder")


def write_run_dir_marker(path: Path, run_dir: Path) -> None:
    """The run directory's path into a marker file that must not exist yet."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644)
    with os.fdopen(fd, "w") as marker:
        marker.write(f"{run_dir}\n")


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON whole or not at all (temp file + rename), so a reader never sees half."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    os.replace(tmp, path)
