"""Where the Kafka under test comes from: Maven Central, a tarball or a build.

A distribution here is a folder with `libs/*.jar`: everything `java -cp
'libs/*' kafka.Kafka` needs. It is mounted read-only into every node, so the
image never changes with the Kafka version. Maven resolution runs once per
version into the cache; a user's tarball is unpacked once per content hash.
"""

from __future__ import annotations

import functools
import hashlib
import re
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from elr_harness.cluster.releases import LATEST, resolve_version
from elr_harness.core.config import SCALA_BINARY_VERSION, ReleasesConfig, cache_dir
from elr_harness.core.errors import DistributionError
from elr_harness.core.files import MISSING, move_into_place, path_problem

#: log4j2 runtime Kafka 4.x logs through (Maven brings no binding along); Kafka
#: uses slf4j 1.7, hence the log4j-slf4j-impl binding, as its own tarball does.
LOG4J_VERSION = "2.24.3"
_COMPLETE_MARKER = ".complete"


@dataclass(frozen=True)
class KafkaDistribution:
    home: Path
    version: str
    source: str

    @property
    def libs(self) -> Path:
        return self.home / "libs"

    @functools.cache  # noqa: B019 - few frozen distributions; the scenario asks each poll
    def main_class(self, candidates: tuple[str, ...]) -> str:
        """The first of `candidates` (fully qualified class names) that the
        distribution's jars hold: Kafka moves tools between releases (the log dump
        tool left the Scala `kafka.tools` for Java's `org.apache.kafka.tools` in 4.2).
        Read once per distribution: the scenario's controller view asks at every poll."""
        wanted = {name.replace(".", "/") + ".class": name for name in candidates}
        found = set()
        for jar in sorted(self.libs.glob("kafka*.jar")):
            with zipfile.ZipFile(jar) as archive:
                found |= wanted.keys() & set(archive.namelist())
        for path, name in wanted.items():
            if path in found:
                return name
        raise DistributionError(f"{self.source}: none of {', '.join(candidates)} in "
                                f"{self.libs}; is this a Kafka distribution?")


def check_request(version: str, dist: Path | None) -> None:
    """What can be told of the asked-for distribution without downloading or
    unpacking anything: a version's form, a path's existence."""
    if dist is None:
        if version != LATEST:
            _check_version_name(version)
        return
    _check_exists(dist)


def _check_exists(dist: Path) -> None:
    problem = path_problem(Path(dist).expanduser())
    if problem == MISSING:
        problem = "no such file or directory"
    if problem is not None:
        raise DistributionError(f"--kafka-dist {str(dist)[:120]}: {problem}")


def _check_version_name(version: str) -> None:
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)*([-.][A-Za-z0-9]+)*", version):
        raise DistributionError(f"--kafka-version: '{version[:60]}' is not a Kafka version "
                                "(e.g. 4.1.1)")
    if int(version.split(".")[0]) < 4:
        raise DistributionError(
            f"Kafka {version} is not supported: the harness runs Kafka 4.x (KRaft, KIP-966)"
        )


def resolve_distribution(version: str, dist: Path | None,
                         log: Callable[[str], None] = print,
                         releases: ReleasesConfig | None = None) -> KafkaDistribution:
    """The distribution to test: a user's `dist` if given, else `version` (or the
    newest release, for `latest`) from Maven."""
    if dist is not None:
        return _from_user_dist(Path(dist).expanduser().resolve(), log)
    return _from_maven(resolve_version(version, releases or ReleasesConfig(), log), log)


# -- Maven Central -----------------------------------------------------------


def _from_maven(version: str, log: Callable[[str], None]) -> KafkaDistribution:
    _check_version_name(version)
    home = cache_dir() / "kafka" / f"maven-{version}"
    if (home / _COMPLETE_MARKER).exists():
        return KafkaDistribution(home, version, f"maven:{version}")
    if shutil.which("mvn") is None:
        raise DistributionError("Maven (mvn) is not installed; run scripts/setup.sh first")
    log(f"resolving Kafka {version} from Maven Central (once)")
    home.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"maven-{version}-", dir=home.parent))
    try:
        (work / "pom.xml").write_text(_pom(version))
        proc = subprocess.run(
            ["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(work / "pom.xml"),
             "dependency:copy-dependencies",
             f"-DoutputDirectory={work / 'libs'}", "-DincludeScope=runtime"],
            capture_output=True, text=True,
        )
        if proc.returncode != 0:
            tried = ", ".join(f"org.apache.kafka:{a}:{version}" for a in _kafka_artifacts())
            detail = _maven_error(proc.stdout + proc.stderr)
            raise DistributionError(
                f"Kafka {version} does not resolve from Maven Central (tried {tried}): {detail}"
            )
        (work / _COMPLETE_MARKER).write_text(version)
        move_into_place(work, home)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return KafkaDistribution(home, version, f"maven:{version}")


def _kafka_artifacts() -> list[str]:
    return [f"kafka_{SCALA_BINARY_VERSION}", "kafka-tools"]


def _pom(version: str) -> str:
    kafka = "".join(
        f"<dependency><groupId>org.apache.kafka</groupId><artifactId>{a}</artifactId>"
        f"<version>{version}</version></dependency>"
        for a in _kafka_artifacts()
    )
    log4j = "".join(
        f"<dependency><groupId>org.apache.logging.log4j</groupId><artifactId>{a}</artifactId>"
        f"<version>{LOG4J_VERSION}</version></dependency>"
        for a in ("log4j-api", "log4j-core", "log4j-slf4j-impl")
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>elr-harness</groupId><artifactId>kafka-dist</artifactId><version>1</version>"
        f"<dependencies>{kafka}{log4j}</dependencies></project>"
    )


def _maven_error(output: str) -> str:
    for line in output.splitlines():
        if "[ERROR]" in line and ("Could not" in line or "Failed" in line):
            return re.sub(r"\x1b\[[0-9;]*m", "", line).replace("[ERROR]", "").strip()[:400]
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1][:400] if lines else "no output from mvn"


# -- a user's tarball, unpacked distribution or Kafka build tree -------------


def _from_user_dist(path: Path, log: Callable[[str], None]) -> KafkaDistribution:
    _check_exists(path)
    if path.is_file():
        return _from_tarball(path, log)
    if (path / "libs").is_dir():
        return KafkaDistribution(path, _version_of(path / "libs"), str(path))
    built = sorted((path / "core" / "build" / "distributions").glob("kafka_*.tgz"))
    built = [t for t in built if "-site-docs" not in t.name and "-src" not in t.name]
    if built:
        return _from_tarball(built[-1], log)
    raise DistributionError(
        f"--kafka-dist {path}: expected a Kafka tarball, an unpacked distribution (with libs/), "
        "or a Kafka source tree built with `./gradlew releaseTarGz` "
        "(core/build/distributions/kafka_*.tgz)"
    )


def _from_tarball(tarball: Path, log: Callable[[str], None]) -> KafkaDistribution:
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()[:16]
    home = cache_dir() / "kafka" / f"dist-{digest}"
    if not (home / _COMPLETE_MARKER).exists():
        log(f"unpacking {tarball.name}")
        home.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="dist-", dir=home.parent))
        try:
            try:
                with tarfile.open(tarball) as tar:
                    tar.extractall(work, filter="data")
            except (tarfile.TarError, OSError) as err:
                raise DistributionError(
                    f"--kafka-dist {tarball}: not a readable tarball ({err})") from err
            roots = [p for p in work.iterdir() if (p / "libs").is_dir()]
            if not roots:
                raise DistributionError(f"--kafka-dist {tarball}: no libs/ folder inside")
            roots[0].rename(work / "_root")
            (work / "_root" / _COMPLETE_MARKER).write_text(str(tarball))
            move_into_place(work / "_root", home)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return KafkaDistribution(home, _version_of(home / "libs"), str(tarball))


def _version_of(libs: Path) -> str:
    """Kafka's own version string, from kafka-clients' kafka-version.properties."""
    clients = sorted(libs.glob("kafka-clients-*.jar"))
    if not clients:
        raise DistributionError(f"{libs}: no kafka-clients jar; is this a Kafka distribution?")
    with zipfile.ZipFile(clients[0]) as jar:
        try:
            text = jar.read("kafka/kafka-version.properties").decode()
        except KeyError:
            return clients[0].name.removeprefix("kafka-clients-").removesuffix(".jar")
    match = re.search(r"^version=(.+)$", text, re.M)
    return match.group(1).strip() if match else "unknown"
