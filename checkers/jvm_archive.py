"""A class-data-sharing archive of the checker's JVM (JDK CDS, JEP 350).

Every check starts a JVM that loads, parses and verifies thousands of Spark's
classes from some 280 jars: 5–7 s of a 1M-line check on 2 cores. A dynamic
CDS archive holds those classes already parsed and verified, and a JVM started
with it maps them from one file. The archive is built once per machine
(scripts/setup.sh runs `python -m checkers.jvm_archive`) by a training check of
a small synthetic history, and its name is a hash of the Java runtime and of
Spark's jars (folder, sizes and modification times: what the JVM itself checks
before it maps an archive), so upgrading either one, reinstalling the jars, or
checking from another clone's environment leads to a new archive; only the
newest few are kept. A JVM that cannot
use an archive (a damaged file, a changed class path) starts without it:
slower, never wrong.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.core.config import CheckerConfig, cache_dir
from harness.core.errors import HarnessError

#: Bumped when the training changes, so old archives are left behind.
_VERSION = 3
#: Archives kept in the cache (~180 MB each); older ones, made for jars or
#: clones since replaced, are removed when a new one is built.
KEEP_ARCHIVES = 3
#: JVM messages (an archive it cannot map, classes it skips while dumping)
#: go to stderr, which get_spark sends to the Spark log, not to stdout.
#: The history the archive is trained on (see _training_history).
TRAINING_HISTORY = Path(__file__).parent / "data" / "training-history.jsonl.gz"

QUIET = "-Xlog:disable -Xlog:all=warning:stderr"


def _java_binary() -> Path | None:
    """The java Spark's launcher runs: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def _spark_jars() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()) / "jars"


def archive_path() -> Path | None:
    """Where the archive for this Java runtime and these Spark jars lives (None: no java)."""
    java = _java_binary()
    if java is None:
        return None
    digest = hashlib.sha256(f"{_VERSION}\0{java}".encode())
    for runtime_file in (java, java.parent.parent / "lib" / "server" / "libjvm.so"):
        if runtime_file.exists():
            st = runtime_file.stat()
            digest.update(f"\0{st.st_size}\0{st.st_mtime_ns}".encode())
    # A JVM maps an archive only under the class path it was dumped with, and only
    # if every jar has the size and modification time it had then: another
    # clone's environment, or the same folder reinstalled (CI's fresh .venv at a
    # path an earlier CI run used), gets an archive of its own instead of
    # silently mapping none.
    jars = _spark_jars().resolve()
    digest.update(f"\0{jars}".encode())
    for jar in sorted(jars.glob("*.jar")):
        st = jar.stat()
        digest.update(f"\0{jar.name}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return cache_dir() / "spark-cds" / f"{digest.hexdigest()[:16]}.jsa"


def startup_options(config: CheckerConfig) -> str:
    """Driver JVM options that map the archive, when one was built ("" otherwise)."""
    if not config.class_archive:
        return ""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path} {QUIET}" if path and path.is_file() else ""


def build(config: CheckerConfig, *, force: bool = False) -> Path:
    """Make the archive (once): a training check in a child process whose JVM dumps
    the classes it loaded when it exits; the file is put in place only when the
    JVM exited cleanly, so a reader never maps half an archive."""
    target = archive_path()
    if target is None:
        raise HarnessError("no java runtime found (set JAVA_HOME or put java on PATH)")
    if target.is_file() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    env = {k: v for k, v in os.environ.items() if k != "ELR_CHECKER_JVM_OPTIONS"}
    try:
        with tempfile.TemporaryDirectory(prefix="elr-cds-") as tmp:
            history = _training_history(Path(tmp))
            proc = subprocess.run(
                [sys.executable, "-m", "checkers.jvm_archive", "--train", str(history),
                 str(partial)], env=env, capture_output=True, text=True,
                timeout=config.class_archive_timeout_s)
        if proc.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
            detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise HarnessError(f"the class archive was not built (exit {proc.returncode}): "
                               f"{detail[0]}")
        partial.replace(target)
        _prune(target.parent, keep=target)
    except subprocess.TimeoutExpired as err:
        raise HarnessError(f"the class archive took over {err.timeout:.0f} s; "
                           "checks run without it") from err
    finally:
        partial.unlink(missing_ok=True)
    return target


def _prune(folder: Path, keep: Path) -> None:
    """Remove all but the newest KEEP_ARCHIVES archives (the one just built always
    stays); a JVM that has one mapped keeps its pages, and a check that finds its archive
    gone starts without it."""
    archives = sorted(folder.glob("*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in [p for p in archives if p != keep][KEEP_ARCHIVES - 1:]:
        old.unlink(missing_ok=True)


def _training_history(directory: Path) -> Path:
    """A small history that runs every check, poll-skip's walk of the final log
    included: tests/synthetic.py's every_anomaly(20_000 lines, seed 1), shipped
    as data (TRAINING_HISTORY) so no production code imports the generator."""
    run_dir = directory / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    history = run_dir / "history.jsonl"
    with gzip.open(TRAINING_HISTORY, "rb") as packed, history.open("wb") as out:
        shutil.copyfileobj(packed, out)
    return history


def _train(history: Path, dump_to: Path, config: CheckerConfig) -> int:
    """Check history in a JVM that dumps its classes to dump_to at exit; end that
    JVM (it would otherwise outlive us while it writes) and return its exit code."""
    from pyspark import SparkContext

    from checkers.check import check_history, stop_spark

    training = dataclasses.replace(
        config, class_archive=False, jvm_options=f"{config.jvm_options} "
        f"-XX:ArchiveClassesAtExit={dump_to} {QUIET}")
    check_history(history, None, training)
    gateway = SparkContext._gateway
    stop_spark()
    proc = gateway.proc
    gateway.shutdown()
    proc.stdin.close()  # the gateway JVM exits at the end of its stdin
    return proc.wait(timeout=config.class_archive_timeout_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m checkers.jvm_archive",
        description="Build the checker JVM's class-data-sharing archive (once per machine).")
    parser.add_argument("--force", action="store_true", help="rebuild even if it exists")
    parser.add_argument("--train", nargs=2, metavar=("HISTORY", "DUMP_TO"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    config = CheckerConfig()
    if args.train:
        return _train(Path(args.train[0]), Path(args.train[1]), config)
    try:
        print(f"class archive: {build(config, force=args.force)}")
    except HarnessError as err:
        print(f"class archive: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
