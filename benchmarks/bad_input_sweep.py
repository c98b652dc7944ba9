"""#9's and #31's sweep of bad inputs, counted: how many give a clean error on a checkout.

Runs every row of tests/unit/test_cli_bad_input.py's BAD_INPUTS, and the ROWS of
its sibling modules (tests/unit/test_hardening_*.py: hostile config files, soak
records, paths), against the harness of --checkout (this one by default, or an
old commit's worktree, to count before and after) and sorts each outcome into
one class:

  clean       exit 2, no traceback, one line naming the flag or path
  traceback   a Python traceback on either stream
  wrong-exit  an exit code other than 2 (1 means "Kafka lost data")
  unclear     exit 2 without naming the flag or path (often: the bad value was
              accepted and the run failed later for another reason)
  debris      anything else left behind in the working folder
  absent      the checkout has no such command or flag (argparse says so)

No Docker engine is reachable from the rows (DOCKER_HOST points at a socket that
does not exist), so an old checkout that accepts a bad value starts nothing;
only `cluster status` and `cluster logs`, which change nothing, reach it.

    python benchmarks/bad_input_sweep.py [--checkout DIR] [--list] [--module NAME]
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "unit"), str(ROOT / "tests")]

from cli_rows import command_line  # noqa: E402
from test_cli_bad_input import BAD_INPUTS, _filled, _materialize  # noqa: E402

Row = tuple[list[str], str, Callable[[Path], dict[str, str]]]


def all_rows() -> list[tuple[str, Row]]:
    """(module, row) for the table and every sibling module that has ROWS."""
    rows: list[tuple[str, Row]] = [("table", (a, m, _materialize)) for a, m in BAD_INPUTS]
    for path in sorted((ROOT / "tests" / "unit").glob("test_hardening_*.py")):
        module = importlib.import_module(path.stem)
        for args, message in getattr(module, "ROWS", ()):
            rows.append((path.stem.removeprefix("test_hardening_"),
                         (args, message, module.materialize)))
    return rows

CLASSES = ("clean", "traceback", "wrong-exit", "unclear", "debris", "absent")
ROW_TIMEOUT_S = 120
#: Rows that only read the engine's state: they keep the engine, as the test does.
READ_ONLY = (["cluster", "status"], ["cluster", "logs"])


def _named(args: list[str], expected: str, err: str) -> bool:
    """Whether the message names what was wrong: the test's words, or the flag or path."""
    if expected in err:
        return True
    flags = [a.split("=")[0] for a in args if a.startswith("--")]
    paths = [a for a in args if "/" in a]
    return any(f in err for f in flags) or any(p[:40] in err for p in paths)


def _absent(args: list[str], expected: str, err: str) -> bool:
    """Whether argparse refused a command or flag the checkout does not have (and
    the row is not about exactly that)."""
    said = [f"invalid choice: '{args[0]}'" if args else "", "unrecognized arguments"]
    return any(words and words in err and words not in expected for words in said)


def import_root(checkout: Path) -> Path:
    """Where the checkout's harness imports from: src/ since the one-package layout
    (#51), the checkout itself before; else the installed harness would answer."""
    return checkout / "src" if (checkout / "src" / "elr_harness").is_dir() else checkout


def classify(checkout: Path, args: list[str], expected: str,
             materialize: Callable[[Path], dict[str, str]] = _materialize) -> tuple[str, str]:
    """One row's class and the first line of what it printed."""
    with tempfile.TemporaryDirectory(prefix="sweep-") as tmp:
        tmp_path = Path(tmp)
        places = materialize(tmp_path)
        bad8 = os.fsencode(tmp_path) + b"/\xff\xfe"
        argv = [bad8 if a == "{bad8}" else _filled(a, places) for a in args]
        work = tmp_path / "cwd"
        work.mkdir()
        env = {**os.environ, "PYTHONPATH": str(import_root(checkout))}
        if args[:2] not in READ_ONLY:
            env["DOCKER_HOST"] = f"unix://{tmp_path}/no-engine.sock"
        try:
            proc = subprocess.run(command_line(argv, work), capture_output=True,
                                  timeout=ROW_TIMEOUT_S, cwd=work, env=env)
        except subprocess.TimeoutExpired:
            return "wrong-exit", f"still running after {ROW_TIMEOUT_S} s"
        out = proc.stdout.decode(errors="replace")
        err = " ".join(proc.stderr.decode(errors="replace").split())
        first = (err or out).strip()[:100]
        if "Traceback" in out + proc.stderr.decode(errors="replace"):
            return "traceback", first
        if _absent(args, _filled(expected, places), err):
            return "absent", first
        if proc.returncode != 2:
            return "wrong-exit", f"exit {proc.returncode}: {first}"
        if not _named([_filled(a, places) for a in args if a != "{bad8}"],
                      _filled(expected, places), err):
            return "unclear", first
        if list(work.iterdir()):
            return "debris", f"left {[p.name for p in work.iterdir()]}"
        return "clean", first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT,
                        help="the harness to try (a git worktree of another commit)")
    parser.add_argument("--list", action="store_true", help="print every row's class")
    parser.add_argument("--module", default=None, metavar="NAME",
                        help="only one module's rows (table, or a test_hardening_NAME.py's: "
                             "config, paths, soak, store, stdout, surfaces)")
    opts = parser.parse_args()
    counts: Counter[str] = Counter()
    by_module: dict[str, Counter[str]] = {}
    rows = [(m, row) for m, row in all_rows() if opts.module in (None, m)]
    took: list[tuple[float, str]] = []
    for module, (args, expected, materialize) in rows:
        started = time.monotonic()
        kind, said = classify(opts.checkout.resolve(), args, expected, materialize)
        took.append((time.monotonic() - started, f"{module} {' '.join(map(str, args))[:60]}"))
        counts[kind] += 1
        by_module.setdefault(module, Counter())[kind] += 1
        if opts.list or kind != "clean":
            print(f"{kind:10} {module:7} {' '.join(map(str, args))[:64]!s:66} {said}")
    for module, got in by_module.items():
        print(f"{module:8} {sum(got.values()):4} rows: "
              + ", ".join(f"{c} {got[c]}" for c in CLASSES))
    print(f"{len(rows)} rows on {opts.checkout}: "
          + ", ".join(f"{c} {counts[c]}" for c in CLASSES))
    # #63: nothing may hang; each bad input ends within 30 s (a row is cut at
    # ROW_TIMEOUT_S as wrong-exit)
    for seconds, row in sorted(took, reverse=True)[:3]:
        print(f"slowest: {seconds:5.1f} s  {row}")
    tried = len(rows) - counts["absent"]
    print(f"of the {tried} rows the checkout has the commands and flags for: "
          + ", ".join(f"{c} {counts[c]}" for c in CLASSES if c != "absent"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
