"""Do two checkouts' checkers read the same histories the same way?

A guard for any change to the checker (the project's rule: every verdict and
count stays equal on real histories): each run folder given (its history.jsonl
and test.json, copied to a scratch folder so that nothing recorded is touched)
is checked by each checkout's own environment (<checkout>/.venv), one Spark
batch per checkout, and their results.json are compared field by field (the
checker's own time left aside). Prints one line per history and exits 1 when
any differs.

    .venv/bin/python benchmarks/same_verdicts.py --old /path/to/old/clone \\
        store/*/2026*/ /tmp/pytest-of-root/*/*/*/*/
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: Run in each checkout's interpreter: checks every history given in one batch and
#: prints one JSON object {path: results or error text}.
_CHECK = """
import json, sys
from pathlib import Path
from elr_harness.checker.check import check_histories
from elr_harness.core.config import CheckerConfig
cases = []
for folder in map(Path, sys.argv[1:]):
    test = folder / "test.json"
    cases.append((folder / "history.jsonl",
                  json.loads(test.read_text()) if test.exists() else None))
out = {}
for (path, _), got in zip(cases, check_histories(cases, CheckerConfig()), strict=True):
    out[str(path.parent)] = got if isinstance(got, dict) else f"error: {got}"
print(json.dumps(out))
"""


def _checked(checkout: Path, folders: list[Path]) -> dict[str, object]:
    python = checkout / ".venv" / "bin" / "python"
    done = subprocess.run([str(python), "-c", _CHECK, *map(str, folders)], cwd=checkout,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"same_verdicts: {checkout} could not check: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _without_time(results: object) -> object:
    if isinstance(results, dict) and isinstance(results.get("stats"), dict):
        return {**results, "stats": {k: v for k, v in results["stats"].items()
                                     if k != "checker_seconds"}}
    return results


def _differences(old: object, new: object, where: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key in sorted(set(old) | set(new)):
            if key not in new:
                found.append(f"{where}{key}: only in the old")
            elif key not in old:
                found.append(f"{where}{key}: only in the new")
            else:
                found += _differences(old[key], new[key], f"{where}{key}.")
        return found
    return [] if old == new else [f"{where.rstrip('.')}: {str(old)[:80]} -> {str(new)[:80]}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the checkout under test (default: this one)")
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (history.jsonl)")
    args = parser.parse_args()
    runs = [r for r in args.runs if (r / "history.jsonl").is_file()]
    with tempfile.TemporaryDirectory(prefix="same-verdicts-") as scratch:
        copies = []
        for number, run in enumerate(runs):
            copy = Path(scratch) / str(number)
            copy.mkdir()
            for name in ("history.jsonl", "test.json"):
                if (run / name).is_file():
                    shutil.copyfile(run / name, copy / name)
            copies.append(copy)
        old, new = _checked(args.old, copies), _checked(args.new, copies)
    differing = 0
    for run, copy in zip(runs, copies, strict=True):
        found = _differences(_without_time(old[str(copy)]), _without_time(new[str(copy)]))
        verdict = new[str(copy)]
        said = verdict.get("valid") if isinstance(verdict, dict) else verdict
        print(f"{'same' if not found else 'DIFFERS'}  valid={said}  {run}")
        for line in found[:10]:
            print(f"    {line}")
        differing += bool(found)
    print(f"{len(runs) - differing} of {len(runs)} histories read the same")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
