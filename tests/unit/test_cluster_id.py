"""Cluster ids the storage tool accepts."""

from __future__ import annotations

import base64
import uuid
from unittest import mock

from elr_harness.cluster.cluster import kafka_uuid


def test_a_cluster_id_never_starts_with_a_dash() -> None:
    dash = uuid.UUID(bytes=base64.urlsafe_b64decode("-Ml4MIL1QAKBMzRB9iI79w=="))
    plain = uuid.UUID(int=12345)
    with mock.patch("elr_harness.cluster.cluster.uuid.uuid4", side_effect=[dash, dash, plain]):
        cid = kafka_uuid()
    assert not cid.startswith("-")
    assert uuid.UUID(bytes=base64.urlsafe_b64decode(cid + "==")) == plain
    assert len(kafka_uuid()) == 22
