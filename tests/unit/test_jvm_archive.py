"""The checker JVM's class-data-sharing archive: used when built, harmless when not
(or when damaged), and really mapped by the driver JVM Spark starts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from checker_fixtures import run_python
from synthetic import SyntheticSpec, write_run_dir

from elr_harness.checker.jvm_archive import archive_path, build, startup_options
from elr_harness.core.config import CheckerConfig

REPO = Path(__file__).resolve().parents[2]


def test_options_name_the_archive_only_when_it_exists(tmp_path, monkeypatch):
    monkeypatch.setenv("ELR_HARNESS_CACHE", str(tmp_path))
    assert startup_options(CheckerConfig()) == ""
    path = archive_path()
    assert path is not None and path.is_relative_to(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x")
    assert startup_options(CheckerConfig()).startswith(f"-XX:SharedArchiveFile={path} ")
    assert startup_options(CheckerConfig(class_archive=False)) == ""


def test_another_environments_jars_get_an_archive_of_their_own(tmp_path, monkeypatch):
    """A JVM maps an archive only under the class path it was dumped with: two clones
    (two .venvs with the same jars) sharing ~/.cache must not share one archive, or
    the second silently maps none (the CI failure of a fresh clone in another folder)."""
    import elr_harness.checker.jvm_archive as jvm_archive

    monkeypatch.setenv("ELR_HARNESS_CACHE", str(tmp_path / "cache"))
    paths = []
    for clone in ("a", "b"):
        jars = tmp_path / clone / "jars"
        jars.mkdir(parents=True)
        (jars / "spark-core.jar").write_bytes(b"same jar")
        monkeypatch.setattr(jvm_archive, "_spark_jars", lambda jars=jars: jars)
        paths.append(archive_path())
    assert paths[0] is not None and paths[0] != paths[1]


def test_reinstalled_jars_get_an_archive_of_their_own(tmp_path, monkeypatch):
    """The JVM maps an archive only if every jar keeps the modification time it had
    when dumped: a fresh .venv at a folder an earlier clone used (CI, run after
    run, at one path) must not be handed the old archive (the second CI failure:
    0 of 4636 Spark classes mapped)."""
    import elr_harness.checker.jvm_archive as jvm_archive

    monkeypatch.setenv("ELR_HARNESS_CACHE", str(tmp_path / "cache"))
    jar = tmp_path / "jars" / "spark-core.jar"
    jar.parent.mkdir()
    jar.write_bytes(b"same jar")
    monkeypatch.setattr(jvm_archive, "_spark_jars", lambda: jar.parent)
    before = archive_path()
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 1_000_000_000))
    assert before is not None and archive_path() != before


def test_building_keeps_only_the_newest_archives(tmp_path):
    from elr_harness.checker.jvm_archive import KEEP_ARCHIVES, _prune

    folder = tmp_path / "spark-cds"
    folder.mkdir()
    made = []
    for age in range(6):
        archive = folder / f"{age}.jsa"
        archive.write_bytes(b"x")
        os.utime(archive, (1000 - age, 1000 - age))  # 0.jsa is the newest
        made.append(archive)
    _prune(folder, keep=made[5])  # the one just built may carry an old time
    assert sorted(p.name for p in folder.glob("*.jsa")) == sorted(
        [a.name for a in made[:KEEP_ARCHIVES - 1]] + ["5.jsa"])


def test_the_driver_jvm_maps_spark_classes_from_the_archive(tmp_path):
    archive = build(CheckerConfig())  # made by scripts/setup.sh; built here if not
    loads = tmp_path / "class-load.log"
    run = run_python(f"""
        from elr_harness.core.config import CheckerConfig
        from elr_harness.checker.jvm_archive import startup_options
        from elr_harness.checker.spark import get_spark
        options = startup_options(CheckerConfig()) + " -Xlog:class+load=info:file={loads}"
        conf = (("spark.driver.extraJavaOptions", options),)
        get_spark(CheckerConfig(spark_conf=conf)).range(10).count()
        """, {})
    assert run.returncode == 0, run.stderr[-2000:]
    # lambda proxies are spun at run time (their source is their host class)
    spark_classes = [line for line in loads.read_text().splitlines()
                     if " org.apache.spark." in line and "$$Lambda" not in line]
    shared = [line for line in spark_classes if "shared objects file (top)" in line]
    assert len(spark_classes) > 1000
    assert len(shared) > 0.9 * len(spark_classes), f"{archive}: {len(shared)} of " \
        f"{len(spark_classes)} Spark classes came from the archive"


def test_a_damaged_archive_changes_nothing_but_speed(tmp_path):
    write_run_dir(tmp_path / "run", SyntheticSpec(lines=600, seed=5))
    cache = tmp_path / "cache"
    env = {"ELR_HARNESS_CACHE": str(cache)}
    damaged = Path(run_python("from elr_harness.checker.jvm_archive import archive_path; "
                           "print(archive_path())", env).stdout.strip())
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(b"not an archive" * 1000)
    run = subprocess.run([sys.executable, "-m", "elr_harness.cli", "check", str(tmp_path / "run")],
                         cwd=REPO, env={**os.environ, **env}, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    # the summary's verdict row says VALID ("INVALID" contains "VALID": not a match)
    assert re.search(r"\bverdict\W+VALID\b", run.stdout), run.stdout[-2000:]
    assert json.loads((tmp_path / "run" / "results.json").read_text())["valid"] is True
    assert "[warning]" not in run.stdout + run.stderr, "JVM messages stay in the Spark log"


def test_the_shipped_training_history_is_the_generators(tmp_path):
    """checker/data holds every_anomaly(20_000 lines, seed 1) so that production code
    never imports the test generator; it must stay what the generator writes."""
    import gzip

    from synthetic import every_anomaly, write_history

    from elr_harness.checker.jvm_archive import TRAINING_HISTORY, _training_history

    expected = tmp_path / "expected.jsonl"
    write_history(expected, every_anomaly(lines=20_000, seed=1))
    assert gzip.decompress(TRAINING_HISTORY.read_bytes()) == expected.read_bytes()
    assert _training_history(tmp_path / "t").read_bytes() == expected.read_bytes()
