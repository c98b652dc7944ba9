"""A class-data-sharing archive of the checker's JVM (JDK CDS, JEP 350).

Every check starts a JVM that loads, parses and verifies thousands of Spark's
classes from some 280 jars: 5–7 s of a 1M-line check on 2 cores. A dynamic
CDS archive holds those classes already parsed and verified, and a JVM started
with it maps them from one file. The archive is built once per machine
(scripts/setup.sh runs `python -m elr_harness.checker.jvm_archive`) by a training check of
a small synthetic history: `harness check` in a child process whose JVM gets
the JDK's -XX:ArchiveClassesAtExit; checks map it with -XX:SharedArchiveFile.
Its name is a hash of the Java runtime and of Spark's jars (folder, sizes and
modification times: what the JVM itself checks before it maps an archive), so
upgrading either one, reinstalling the jars, or checking from another clone's
environment leads to a new archive; only the newest few are kept. A JVM that
cannot use an archive (a damaged file, a changed class path) starts without it:
slower, never wrong.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from elr_harness.checker.jvm_options import sized_jvm_options
from elr_harness.core.config import CheckerConfig, cache_dir
from elr_harness.core.errors import HarnessError

#: Bumped when the training changes, so old archives are left behind.
_VERSION = 4
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
    """The jars Spark's launcher puts on the class path: $SPARK_HOME's, else the
    pip-installed pyspark's own."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"]) / "jars"
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


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
    """Make the archive (once): a training `harness check` in a child process, whose
    JVM dumps the classes it loaded when it exits; the file is put in place only
    when that JVM is gone and left a file, so a reader never maps half an archive."""
    target = archive_path()
    if target is None:
        raise HarnessError("no java runtime found (set JAVA_HOME or put java on PATH)")
    if target.is_file() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    deadline = time.monotonic() + config.class_archive_timeout_s
    try:
        with tempfile.TemporaryDirectory(prefix="elr-cds-") as tmp:
            history = _training_history(Path(tmp))
            env = _training_env(config, history, partial)
            proc = subprocess.run(
                [sys.executable, "-m", "elr_harness.cli", "check", str(history.parent)],
                env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                timeout=config.class_archive_timeout_s)
            # the JVM exits (and dumps) once its parent is gone: wait for it
            _wait_gone(partial, deadline, config.class_archive_timeout_s)
        if proc.returncode not in (0, 1) or not partial.is_file() or \
                partial.stat().st_size == 0:
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


def _training_env(config: CheckerConfig, history: Path, partial: Path) -> dict[str, str]:
    """The training JVM's environment: the options a check of `history` gets (a
    user's ELR_CHECKER_JVM_OPTIONS aside), so the JIT of a small history, and the
    dump at exit. C2's compiles would only lengthen the training (74 -> 51 CPU-s,
    50 -> 43 s here); the archive holds the same Spark classes either way."""
    options = sized_jvm_options(config, history.stat().st_size)
    return {**os.environ, "ELR_CHECKER_JVM_OPTIONS":
            f"{options} -XX:ArchiveClassesAtExit={partial} {QUIET}"}


def _wait_gone(partial: Path, deadline: float, bound_s: float) -> None:
    """Wait until no process names partial on its command line (the training JVM,
    which outlives the check's Python by the time it takes to write the archive)."""
    needle = f"-XX:ArchiveClassesAtExit={partial}".encode()
    while any(needle in cmdline for cmdline in _command_lines()):
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired("java", bound_s)
        time.sleep(0.2)


def _command_lines() -> list[bytes]:
    lines = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                lines.append((proc / "cmdline").read_bytes())
            except OSError:
                continue
    return lines


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m elr_harness.checker.jvm_archive",
        description="Build the checker JVM's class-data-sharing archive (once per machine).")
    parser.add_argument("--force", action="store_true", help="rebuild even if it exists")
    args = parser.parse_args(argv)
    config = CheckerConfig()
    try:
        print(f"class archive: {build(config, force=args.force)}")
    except HarnessError as err:
        print(f"class archive: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
