"""A class-data-sharing archive of Kafka's classes for the Docker nodes' JVMs.

A run starts more than a dozen Kafka JVMs on freshly made nodes (six storage
formats, six servers, a restart, log dumps) on a machine whose set-up is
CPU-bound, and most of a JVM's start is loading and verifying Kafka's classes.
The JDK's documented class-data sharing (-XX:ArchiveClassesAtExit,
-XX:SharedArchiveFile) maps them from an archive instead. Measured in a node
(Kafka 4.4.0, JDK 17, one JVM at a time): a one-node server's start to "Kafka
Server started" took 1.7-1.8 s and 2.2-2.3 s of CPU, 0.84-1.06 s and
1.15-1.42 s with the archive; a storage format 0.92-1.09 s, 0.52-0.66 s.

The archive is trained once per node image and Kafka distribution (its jars'
names, sizes and times, so a rebuilt local distribution gets its own): a
throwaway container of the cluster, without a network, runs a one-node Kafka
to "Kafka Server started" and stops it cleanly, and its JVM writes the archive
as it exits. Each node mounts the archive read-only at kraft.CLASS_ARCHIVE and
every Kafka JVM names that path. A JVM that finds no archive there (a host over
SSH, a training that failed) or one that does not match starts as before,
without a word (kraft.CLASS_ARCHIVE_OPTIONS). The archive holds parsed
classes, no state: Kafka behaves the same with it and without it.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import docker

from elr_harness.cluster import kraft
from elr_harness.core.config import LABEL, ClusterConfig, cache_dir

#: What the training's one-node Kafka prints once it serves (every 4.x release).
STARTED = "Kafka Server started"
_TRAINING_DIR = "/tmp/elr-class-training"
#: The name of a training's folder in the cache, before mkdtemp's random part.
_TRAINING_PREFIX = "training-"
_OUT_DIR = "/out"
_OUT_FILE = "classes.jsa"
_SERVER_PROPERTIES = "\n".join([
    "process.roles=broker,controller",
    "node.id=1",
    "controller.quorum.voters=1@127.0.0.1:9093",
    "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
    "controller.listener.names=CONTROLLER",
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    f"log.dirs={_TRAINING_DIR}/logs",
    "offsets.topic.replication.factor=1",
    "",
])
_LOG4J = "\n".join([
    "appender.console.type = Console",
    "appender.console.name = STDOUT",
    "appender.console.layout.type = PatternLayout",
    "appender.console.layout.pattern = %m%n",
    "rootLogger.level = INFO",
    "rootLogger.appenderRef.console.ref = STDOUT",
    "",
])


def archive_path(image: str, kafka_home: str) -> Path:
    """Where the archive of this image and distribution is kept on this machine."""
    digest = hashlib.sha256(image.encode())
    for jar in sorted((Path(kafka_home) / "libs").glob("*.jar")):
        stat = jar.stat()
        digest.update(f"\0{jar.name}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return cache_dir() / "class-archives" / f"{digest.hexdigest()[:24]}.jsa"


def ensure_archive(client: docker.DockerClient, config: ClusterConfig, image: str,
                   kafka_home: str, labels: dict[str, str],
                   log: Callable[[str], None]) -> Path | None:
    """The archive for these nodes, trained first if there is none yet; None when
    it is turned off or its training failed (the nodes then start without one)."""
    if not config.class_archive:
        return None
    path = archive_path(image, kafka_home)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_abandoned_trainings(path.parent, 2 * config.timeouts.class_archive_training_s)
    if path.is_file():
        return path
    work = Path(tempfile.mkdtemp(prefix=_TRAINING_PREFIX, dir=path.parent))
    try:
        log("training the class archive of Kafka's JVMs (once per release and image)")
        problem = _train(client, config, image, kafka_home, work, labels)
        if problem:
            log(f"no class archive ({problem}); Kafka's JVMs start without one")
            return None
        os.replace(work / _OUT_FILE, path)  # whole or not at all, for a run beside
        return path
    finally:
        shutil.rmtree(work, ignore_errors=True)


def sweep_abandoned_trainings(folder: Path, older_than_s: float,
                              now: float | None = None) -> list[str]:
    """Remove the training folders a harness killed with -9 mid-training left in
    `folder` (the cache's class-archives/): a `training-*` folder untouched for
    older_than_s, which a live training never is (it ends or gives up within its
    bound). Only real folders of that name: a link or a file is left alone.
    Returns the names removed."""
    now = time.time() if now is None else now
    removed = []
    for entry in sorted(folder.glob(f"{_TRAINING_PREFIX}*")):
        try:
            if entry.is_symlink() or not entry.is_dir():
                continue
            if now - entry.stat().st_mtime < older_than_s:
                continue
        except OSError:  # gone meanwhile (another run swept it)
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry.name)
    return removed


def _train(client: docker.DockerClient, config: ClusterConfig, image: str, kafka_home: str,
           work: Path, labels: dict[str, str]) -> str | None:
    """Run the training container to its end; what went wrong, or None."""
    container = client.containers.run(
        image, ["sh", "-c", training_script(config)], detach=True, network_mode="none",
        labels={**labels, f"{LABEL}.node": "class-archive-training"},
        volumes={kafka_home: {"bind": kraft.KAFKA_HOME, "mode": "ro"},
                 str(work): {"bind": _OUT_DIR, "mode": "rw"}})
    try:
        try:
            status = container.wait(timeout=config.timeouts.class_archive_training_s)
        except Exception:  # noqa: BLE001 - the engine's timeout: a slow or stuck start
            return f"its training took over {config.timeouts.class_archive_training_s:.0f} s"
        if status.get("StatusCode") != 0:
            tail = container.logs(tail=3).decode(errors="replace").strip()
            return f"its training exited {status.get('StatusCode')}: {tail[-300:]}"
        if not (work / _OUT_FILE).is_file():
            return "its training wrote no archive"
        return None
    finally:
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            pass


def training_script(config: ClusterConfig) -> str:
    """A one-node Kafka formatted, started, and stopped cleanly once it serves; its
    JVM, run with the nodes' options, writes the archive as it exits."""
    properties = f"{_TRAINING_DIR}/server.properties"
    log4j = f"{_TRAINING_DIR}/log4j2.properties"
    out = f"{_TRAINING_DIR}/stdout"
    server = shlex.join([
        "java", *config.broker_heap.split(), *config.jvm_opts.split(),
        f"-XX:ArchiveClassesAtExit={_OUT_DIR}/{_OUT_FILE}", *kraft.CLASS_ARCHIVE_QUIET,
        f"-Dlog4j2.configurationFile={log4j}", "-cp", f"{kraft.KAFKA_HOME}/libs/*",
        kraft.KAFKA_MAIN_CLASS, properties])
    fmt = shlex.join(kraft.tool_command(
        "128m", "kafka.tools.StorageTool", "format", "--config", properties,
        "--cluster-id", "elrHarnessTrainingAAAA", "--ignore-formatted"))
    polls = int(config.timeouts.class_archive_training_s / 0.1)
    return "\n".join([
        "set -e",
        f"mkdir -p {_TRAINING_DIR}",
        f"printf %s {shlex.quote(_SERVER_PROPERTIES)} > {properties}",
        f"printf %s {shlex.quote(_LOG4J)} > {log4j}",
        f"{fmt} > /dev/null",
        f"{server} > {out} 2>&1 &",
        "pid=$!",
        "n=0",
        f"until grep -q {shlex.quote(STARTED)} {out}; do",
        "  kill -0 $pid || { tail -3 " + out + "; exit 3; }",
        f"  n=$((n + 1)); [ $n -lt {polls} ] || exit 4",
        "  sleep 0.1",
        "done",
        "kill -TERM $pid",
        "wait $pid || true",
        f"test -s {_OUT_DIR}/{_OUT_FILE}",
        "",
    ])
