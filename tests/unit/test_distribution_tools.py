"""Kafka moves its tools between releases: the harness finds them in the jars."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from elr_harness.cluster.distribution import KafkaDistribution
from elr_harness.cluster.metadata_log import DUMP_LOG_CLASSES
from elr_harness.core.errors import DistributionError


def _dist(tmp_path: Path, jars: dict[str, list[str]]) -> KafkaDistribution:
    libs = tmp_path / "libs"
    libs.mkdir()
    for jar, classes in jars.items():
        with zipfile.ZipFile(libs / jar, "w") as archive:
            for name in classes:
                archive.writestr(name, b"")
    return KafkaDistribution(tmp_path, "x", "test")


def test_the_4_1_layout_has_the_scala_dump_tool(tmp_path):
    dist = _dist(tmp_path, {"kafka_2.13-4.1.1.jar": ["kafka/tools/DumpLogSegments.class"],
                            "kafka-tools-4.1.1.jar": ["org/apache/kafka/tools/X.class"]})
    assert dist.main_class(DUMP_LOG_CLASSES) == "kafka.tools.DumpLogSegments"


def test_the_4_2_layout_has_the_java_one(tmp_path):
    """Seen in the 4.3.1 and 4.4.0 jars from Maven Central: `Could not find or load
    main class kafka.tools.DumpLogSegments` on those releases before this."""
    dist = _dist(tmp_path, {"kafka_2.13-4.3.1.jar": ["kafka/tools/StorageTool.class"],
                            "kafka-tools-4.3.1.jar":
                                ["org/apache/kafka/tools/DumpLogSegments.class"]})
    assert dist.main_class(DUMP_LOG_CLASSES) == "org.apache.kafka.tools.DumpLogSegments"


def test_a_distribution_without_the_tool_says_so(tmp_path):
    dist = _dist(tmp_path, {"kafka_2.13-9.jar": ["kafka/Kafka.class"]})
    with pytest.raises(DistributionError, match="none of org.apache.kafka.tools"):
        dist.main_class(DUMP_LOG_CLASSES)


@pytest.mark.parametrize("version, expected", [
    ("4.1.1", "kafka.tools.DumpLogSegments"),
])
def test_the_default_release_from_maven(version, expected):
    """The default release's real jars (scripts/setup.sh resolves them)."""
    from elr_harness.cluster.distribution import resolve_distribution

    dist = resolve_distribution(version, None, lambda _m: None)
    assert dist.main_class(DUMP_LOG_CLASSES) == expected
