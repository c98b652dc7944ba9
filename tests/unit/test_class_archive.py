"""cluster/class_archive.py without Kafka: which archive a node image and a Kafka
distribution get, the training's script, and what the harness does when a
training works, fails or is turned off (tests/integration/test_cluster.py shows a
real node's JVM loading Kafka's classes from the archive)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from elr_harness.cluster import class_archive, kraft
from elr_harness.cluster.class_archive import (
    archive_path,
    ensure_archive,
    sweep_abandoned_trainings,
    training_script,
)
from elr_harness.cluster.node import NodeSpec, Role
from elr_harness.core.config import ClusterConfig


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ELR_HARNESS_CACHE", str(tmp_path / "cache"))


def _dist(tmp_path: Path) -> Path:
    libs = tmp_path / "kafka" / "libs"
    libs.mkdir(parents=True)
    for name in ("kafka_2.13-4.4.0.jar", "kafka-clients-4.4.0.jar"):
        (libs / name).write_bytes(b"PK" + name.encode())
    return libs.parent


def test_an_archive_belongs_to_one_image_and_one_build_of_the_jars(tmp_path):
    dist = _dist(tmp_path)
    first = archive_path("elr-harness/node:aaa", str(dist))
    assert first == archive_path("elr-harness/node:aaa", str(dist)), "stable"
    assert first.parent == tmp_path / "cache" / "class-archives"
    assert archive_path("elr-harness/node:bbb", str(dist)) != first, "another image"
    jar = dist / "libs" / "kafka-clients-4.4.0.jar"
    jar.write_bytes(b"PK rebuilt, longer")
    assert archive_path("elr-harness/node:aaa", str(dist)) != first, "a rebuilt jar"


def test_every_kafka_jvm_of_a_node_names_the_archive_and_stays_quiet_without_one():
    config = ClusterConfig()
    tool = kraft.tool_command("128m", "kafka.tools.StorageTool", "random-uuid")
    assert f"-XX:SharedArchiveFile={kraft.CLASS_ARCHIVE}" in tool
    assert {"-Xlog:cds=off", "-Xlog:cds+dynamic=off"} <= set(tool)
    spec = NodeSpec("broker-1", Role.BROKER, 1, "10.213.77.14")
    assert f"-XX:SharedArchiveFile={kraft.CLASS_ARCHIVE}" in kraft.start_script(spec, config)


def test_the_training_script_is_a_shell_script_on_the_nodes_class_path_and_options():
    config = ClusterConfig(jvm_opts="-XX:+UseSerialGC -Xss512k")
    script = training_script(config)
    assert subprocess.run(["sh", "-n"], input=script, text=True).returncode == 0
    assert "-XX:ArchiveClassesAtExit=/out/classes.jsa" in script
    assert f"'{kraft.KAFKA_HOME}/libs/*'" in script, "the class path the nodes' JVMs use"
    assert "-XX:+UseSerialGC -Xss512k" in script and "kill -TERM" in script
    assert class_archive.STARTED in script


class _Container:
    def __init__(self, code: int, write: Path | None, logs: bytes = b""):
        self.code, self.write, self._logs, self.removed = code, write, logs, False

    def wait(self, timeout):
        if self.write is not None:
            (self.write / "classes.jsa").write_bytes(b"archive")
        return {"StatusCode": self.code}

    def logs(self, tail):
        return self._logs

    def remove(self, force):
        self.removed = True


class _Client:
    """Runs the training 'container': writes the archive into the mounted /out."""

    def __init__(self, code: int = 0, writes: bool = True, logs: bytes = b""):
        self.code, self.writes, self.logs, self.runs = code, writes, logs, []
        self.containers = self

    def run(self, image, command, **kwargs):
        self.runs.append(kwargs)
        out = next(Path(host) for host, bind in kwargs["volumes"].items()
                   if bind["bind"] == "/out")
        assert bind_modes(kwargs) == {kraft.KAFKA_HOME: "ro", "/out": "rw"}
        self.container = _Container(self.code, out if self.writes else None, self.logs)
        return self.container


def bind_modes(kwargs) -> dict[str, str]:
    return {bind["bind"]: bind["mode"] for bind in kwargs["volumes"].values()}


def test_a_trained_archive_is_kept_and_used_from_then_on(tmp_path):
    dist, said = _dist(tmp_path), []
    client = _Client()
    path = ensure_archive(client, ClusterConfig(), "img", str(dist), {"elr-harness": "1"},
                          said.append)
    assert path == archive_path("img", str(dist)) and path.read_bytes() == b"archive"
    [run] = client.runs
    assert run["network_mode"] == "none" and run["labels"]["elr-harness"] == "1"
    assert client.container.removed, "the training container is gone"
    assert os.listdir(path.parent) == [path.name], "no training folder left"
    again = _Client()
    assert ensure_archive(again, ClusterConfig(), "img", str(dist), {}, said.append) == path
    assert again.runs == [], "trained once"


@pytest.mark.parametrize(("client", "why"), [
    (_Client(code=3, writes=False, logs=b"Exception in thread main"), "exited 3"),
    (_Client(code=0, writes=False), "wrote no archive"),
])
def test_a_failed_training_leaves_nothing_and_the_nodes_start_without(tmp_path, client, why):
    dist, said = _dist(tmp_path), []
    assert ensure_archive(client, ClusterConfig(), "img", str(dist), {}, said.append) is None
    assert why in said[-1] and "start without one" in said[-1]
    assert client.container.removed
    assert os.listdir(tmp_path / "cache" / "class-archives") == []


def test_turned_off_no_training_and_no_archive(tmp_path):
    client = _Client()
    config = replace(ClusterConfig(), class_archive=False)
    assert ensure_archive(client, config, "img", str(_dist(tmp_path)), {}, print) is None
    assert client.runs == []


def test_a_training_folder_a_killed_run_left_is_swept_and_a_live_one_is_kept(tmp_path):
    folder = tmp_path / "class-archives"
    folder.mkdir()
    old, live = folder / "training-old1", folder / "training-live"
    for made in (old, live):
        made.mkdir()
        (made / "kafka-classes.jsa").write_bytes(b"half")
    os.utime(old, (1000.0, 1000.0))
    os.utime(live, (1200.0, 1200.0))
    # neither a link of that name nor what it points at is the harness's to remove
    elsewhere = tmp_path / "users-folder"
    elsewhere.mkdir()
    os.utime(elsewhere, (1000.0, 1000.0))
    (folder / "training-link").symlink_to(elsewhere)
    (folder / "training-file").write_bytes(b"x")
    os.utime(folder / "training-file", (1000.0, 1000.0))
    assert sweep_abandoned_trainings(folder, 240.0, now=1300.0) == ["training-old1"]
    assert not old.exists() and live.is_dir() and elsewhere.is_dir()
    assert (folder / "training-link").is_symlink() and (folder / "training-file").is_file()


def test_the_next_run_sweeps_a_left_training_folder_even_with_its_archive_made(tmp_path):
    dist = _dist(tmp_path)
    path = ensure_archive(_Client(), ClusterConfig(), "img", str(dist), {}, print)
    left = path.parent / "training-abc123"
    left.mkdir()
    os.utime(left, (1000.0, 1000.0))
    assert ensure_archive(_Client(), ClusterConfig(), "img", str(dist), {}, print) == path
    assert os.listdir(path.parent) == [path.name]
