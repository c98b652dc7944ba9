"""The four assertions every bad-input row makes, shared by the table test
(test_cli_bad_input.py) and its sibling modules (test_hardening_*.py), and
read by benchmarks/bad_input_sweep.py.

A sibling module holds `ROWS`, a list of (argv, words) like BAD_INPUTS, and
`materialize(tmp_path) -> {placeholder: text}` making the files its rows name.
An argv that starts with IN_A_DELETED_FOLDER runs the rest in a working folder
deleted just before the harness starts (command_line says how).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path


def filled(text: str, places: dict[str, str]) -> str:
    for key, value in places.items():
        text = text.replace(key, value)
    return text


#: A row's first word: the harness runs in a working folder that no longer exists.
IN_A_DELETED_FOLDER = "{in-a-deleted-folder}"


def command_line(argv: list, work: Path) -> list:
    """The command that runs `harness ARGV` from the working folder `work`: with
    IN_A_DELETED_FOLDER first, from a folder made in it and deleted by the shell
    that then starts the harness (its cwd is gone, as after `rm -r` elsewhere)."""
    if argv[:1] != [IN_A_DELETED_FOLDER]:
        return [sys.executable, "-m", "elr_harness.cli", *argv]
    gone = work / "deleted-before-the-harness-started"
    gone.mkdir()
    return ["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone),
            sys.executable, "-m", "elr_harness.cli", *argv[1:]]


def run_row(tmp_path: Path, args: list[str], message: str, places: dict[str, str],
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `harness ARGS` in an empty folder and assert: exit 2, one line naming
    the input, no traceback, nothing made in the working folder."""
    argv = [filled(a, places) for a in args]
    work = tmp_path / "cwd"
    work.mkdir(exist_ok=True)
    proc = subprocess.run(command_line(argv, work), capture_output=True,
                          timeout=300, cwd=work, env={**os.environ, **(env or {})})
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    assert proc.returncode == 2, out + err
    assert filled(message, places) in " ".join(err.split()), err
    assert "Traceback" not in out + err
    assert list(work.iterdir()) == [], "nothing is made for refused input"
    return proc


def run_row_changing_nothing(tmp_path: Path, args: list[str], message: str,
                             places: dict[str, str], env: dict[str, str] | None = None
                             ) -> subprocess.CompletedProcess:
    """run_row, and every file under tmp_path (but the working folder) as it was
    before: a refused command deleted or rewrote nothing it found there."""
    before = digests(tmp_path)
    proc = run_row(tmp_path, args, message, places, env)
    after = digests(tmp_path)
    after.pop(str(tmp_path / "cwd"))
    assert after == before, "a refused command changed what was there"
    return proc


def digests(root: Path) -> dict[str, str]:
    """sha256 of every file under root (symlinks by their target text): to show
    that nothing outside the harness's own was deleted or rewritten."""
    seen = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            seen[str(path)] = "link:" + os.readlink(path)
        elif path.is_file():
            seen[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            seen[str(path)] = "dir"
    return seen
