"""Mutant Kafka distributions: a release's libs/ with one jar rewritten.

The rewrite is the mutator's (java/, a small javassist program built by Maven into
the cache, at set-up or on first use). Each mutant is kept in the cache as
`mutants/<version>/<name>-<digest>/libs/`: the release's other jars hard-linked
(copied across file systems), the rewritten jar beside them, and mutant.json
saying what it is. `--kafka-dist` takes that folder like any unpacked Kafka.

A mutant is kept only when it can change behaviour: its probe (java/probe, compiled
against the release) runs the controller's own code on one partition state, on the
release and on the mutant, and the two must decide otherwise. A mutant whose probe
agrees is equivalent: refused, unless the catalog marks it so."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from elr_harness.cluster.distribution import KafkaDistribution
from elr_harness.cluster.mutants.catalog import Fix, Mutant
from elr_harness.core.config import MutantsConfig, cache_dir
from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.core.files import move_into_place

#: What a built mutant's folder holds besides libs/: written last, so a folder
#: without it is a build that did not finish.
MUTANT_FILE = "mutant.json"
_JAVA_SOURCES = ("pom.xml", "src/main/java/elrharness/Mutate.java")
_PROBE_SOURCE = "probe/ElrHarnessProbe.java"
_PROBE_CLASS = "org.apache.kafka.controller.ElrHarnessProbe"


def _java() -> resources.abc.Traversable:
    return resources.files(__package__).joinpath("java")


def _digest(names: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for name in names:
        digest.update(_java().joinpath(name).read_bytes())
    return digest.hexdigest()[:12]


def mutator_home() -> Path:
    """Where the mutator is built: by a hash of its sources, so an edit rebuilds it."""
    return cache_dir() / "mutator" / _digest(_JAVA_SOURCES)


def mutator_classpath(config: MutantsConfig | None = None,
                      log: Callable[[str], None] = print) -> str:
    """The built mutator's classpath, building it with Maven first if need be."""
    config = config or MutantsConfig()
    home = mutator_home()
    jar, lib = home / "target" / "mutator.jar", home / "target" / "lib"
    if not (jar.is_file() and lib.is_dir()):
        _build_mutator(home, config, log)
    return f"{jar}{os.pathsep}{lib}/*"


def _build_mutator(home: Path, config: MutantsConfig, log: Callable[[str], None]) -> None:
    if shutil.which("mvn") is None or shutil.which("java") is None:
        raise HarnessError("Maven (mvn) and Java are needed to build the mutator; run "
                           "scripts/setup.sh first")
    log("building the mutator with Maven (once)")
    home.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=home.parent))
    try:
        for name in _JAVA_SOURCES:
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_bytes(_java().joinpath(name).read_bytes())
        try:
            proc = subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", "-f",
                                   str(work / "pom.xml"), "package"], capture_output=True,
                                  text=True, timeout=config.mutator_build_timeout_s)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"Maven did not build the mutator within "
                               f"{config.mutator_build_timeout_s:.0f} s") from None
        if proc.returncode != 0:
            said = [line for line in (proc.stdout + proc.stderr).splitlines() if "ERROR" in line]
            raise HarnessError("Maven could not build the mutator: "
                               + (said[0] if said else "no error line")[:300])
        move_into_place(work, home)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for older in home.parent.iterdir():  # builds of earlier sources: the cache's own
        if older != home and not older.name.startswith("build-"):
            shutil.rmtree(older, ignore_errors=True)


def mutant_home(mutant: Mutant, version: str) -> Path:
    return cache_dir() / "mutants" / version / f"{mutant.name}-{mutant.digest}"


def is_built(home: Path) -> bool:
    return (home / MUTANT_FILE).is_file() and (home / "libs").is_dir()


def fix_home(fix: Fix, version: str) -> Path:
    return cache_dir() / "fixes" / version / f"{fix.name}-{fix.digest}"


def build_mutant(mutant: Mutant, release: KafkaDistribution,
                 config: MutantsConfig | None = None,
                 log: Callable[[str], None] = print) -> Path:
    """The mutant of `release` (a Kafka from Maven, or a user's), built once: the
    folder `--kafka-dist` takes."""
    return _build(mutant, release, mutant_home(mutant, release.version),
                  {"rule": mutant.rule, "breaks": mutant.breaks}, "mutant",
                  config or MutantsConfig(), log)


def build_fix(fix: Fix, release: KafkaDistribution, config: MutantsConfig | None = None,
              log: Callable[[str], None] = print) -> Path:
    """A candidate fix of `release` (fixes.toml), built as a mutant is, in a folder of
    its own (cache/fixes/): the folder `--kafka-dist` takes. Its probe must decide
    otherwise than the release, or the fix changes nothing."""
    return _build(fix, release, fix_home(fix, release.version),
                  {"kind": "fix", "fixes": fix.fixes, "says": fix.says}, "fix",
                  config or MutantsConfig(), log)


def _build(mutant: Mutant | Fix, release: KafkaDistribution, home: Path, about: dict,
           what: str, config: MutantsConfig, log: Callable[[str], None]) -> Path:
    if release.version not in mutant.versions:
        raise BadInput(f"{what} {mutant.name!r} was written against Kafka "
                       f"{', '.join(mutant.versions)}, not {release.version}: its body may not "
                       f"fit that release's code (add the release to its `versions` once "
                       f"checked against its bytecode)")
    if is_built(home):
        return home
    target = release.libs / mutant.jar_file(release.version)
    if not target.is_file():
        raise BadInput(f"{what} {mutant.name!r}: Kafka {release.version}'s libs/ has no "
                       f"{target.name}")
    classpath = mutator_classpath(config, log)
    home.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{mutant.name}-", dir=home.parent))
    try:
        libs = work / "libs"
        libs.mkdir()
        for jar in sorted(release.libs.iterdir()):
            if jar.name != target.name and jar.is_file():
                _link_or_copy(jar, libs / jar.name)
        body = work / "body.java"
        body.write_text(mutant.body)
        _rewrite(classpath, release, mutant, body, libs / target.name, config)
        body.unlink()
        probe = _probe_both(mutant, release, libs, config, log, what)
        (work / MUTANT_FILE).write_text(json.dumps({
            "name": mutant.name, "release": release.version, "release_source": release.source,
            "jar": target.name, "class": mutant.class_name, "method": mutant.method,
            "descriptor": mutant.descriptor, "digest": mutant.digest, **about,
            "probe": probe}, indent=2) + "\n")
        move_into_place(work, home)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return home


def _probe_both(mutant: Mutant | Fix, release: KafkaDistribution, libs: Path,
                config: MutantsConfig, log: Callable[[str], None],
                what: str = "mutant") -> dict | None:
    """The probe's line on the release and on the rewrite (None without a probe);
    HarnessError when they agree and the catalog does not call the mutant
    equivalent (a fix never is: one that decides as the release does fixes nothing)."""
    if mutant.probe is None:
        return None
    classes = probe_classes(release, config, log)
    said = {"input": mutant.probe,
            "release": _probe(classes, release.libs, mutant.probe, config),
            what: _probe(classes, libs, mutant.probe, config)}
    if said["release"] == said[what] and not mutant.equivalent:
        raise HarnessError(f"{what} {mutant.name!r} is equivalent on its probe: the release "
                           f"and the {what} both decide {said['release'][:200]!r}; change its "
                           f"body" + (", or mark it `equivalent = true`" if what == "mutant"
                                      else ""))
    return said


def probe_classes(release: KafkaDistribution, config: MutantsConfig | None = None,
                  log: Callable[[str], None] = print) -> Path:
    """The probe, compiled against the release's jars once (javac)."""
    config = config or MutantsConfig()
    home = cache_dir() / "mutant-probe" / _digest((_PROBE_SOURCE,)) / release.version
    compiled = home / (_PROBE_CLASS.replace(".", "/") + ".class")
    if compiled.is_file():
        return home
    if shutil.which("javac") is None:
        raise HarnessError("javac is needed to compile the mutants' probe; run "
                           "scripts/setup.sh first")
    log(f"compiling the mutants' probe against Kafka {release.version} (once)")
    home.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="probe-", dir=home.parent))
    try:
        source = work / "ElrHarnessProbe.java"
        source.write_bytes(_java().joinpath(_PROBE_SOURCE).read_bytes())
        classes = work / "classes"
        proc = _java_run(["javac", "-nowarn", "-d", str(classes), "-cp",
                          f"{release.libs}/*", str(source)], config, "javac")
        if proc.returncode != 0:
            said = [line for line in proc.stderr.splitlines() if "error:" in line]
            raise HarnessError(f"the mutants' probe does not compile against Kafka "
                               f"{release.version}: {(said or ['no error line'])[0][:300]}")
        move_into_place(classes, home)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return home


def _probe(classes: Path, libs: Path, name: str, config: MutantsConfig) -> str:
    proc = _java_run(["java", "-cp", f"{classes}{os.pathsep}{libs}/*", _PROBE_CLASS, name],
                     config, "the probe")
    lines = [line for line in proc.stdout.splitlines() if line.startswith(f"{name}: ")]
    if proc.returncode != 0 or len(lines) != 1 or lines[0].endswith(": no such probe"):
        error = [line for line in proc.stderr.splitlines() if "Exception" in line]
        raise HarnessError(f"the probe {name!r} failed on {libs}: "
                           + (error[0] if error else (lines or ["no line"])[0])[:300])
    return lines[0].removeprefix(f"{name}: ")


def _java_run(argv: list[str], config: MutantsConfig, what: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True,
                              timeout=config.rewrite_timeout_s)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"{what} took over {config.rewrite_timeout_s:.0f} s") from None


def _rewrite(classpath: str, release: KafkaDistribution, mutant: Mutant | Fix, body: Path,
             out: Path, config: MutantsConfig) -> None:
    argv = ["java", "-cp", classpath, "elrharness.Mutate", str(release.libs),
            mutant.jar_file(release.version), mutant.class_name, mutant.method,
            mutant.descriptor or "-", str(body), str(out)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=config.rewrite_timeout_s)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"mutant {mutant.name!r}: the mutator took over "
                           f"{config.rewrite_timeout_s:.0f} s") from None
    if proc.returncode != 0 or not out.is_file():
        said = [line for line in proc.stderr.splitlines() if line.startswith("mutator:")]
        raise HarnessError(f"mutant {mutant.name!r}: "
                           + (said[0].removeprefix("mutator: ") if said
                              else f"the mutator exited {proc.returncode}")[:400])


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link (the cache is one file system, usually); a copy otherwise. Never
    a symlink: a node's container sees the folder, not the release beside it."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


if __name__ == "__main__":  # scripts/setup.sh: build the mutator now, not on first use
    import sys

    try:
        print(f"setup: mutator {mutator_classpath().split(os.pathsep)[0]}")
    except HarnessError as err:
        print(f"setup: {err.message}", file=sys.stderr)
        sys.exit(2)
