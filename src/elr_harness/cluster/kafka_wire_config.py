"""Two more APIs of the harness's wire client, for the settings KIP-966 depends on:
DescribeConfigs (key 32) v4 for a topic's effective min.insync.replicas, and
ApiVersions (key 18) v4 for the finalized level of eligible.leader.replicas.version.

The observer reads both just before and just after it describes the partitions
(the observe line's `min_isr` and `elr_feature`, HISTORY.md). Schemas:
clients/src/main/resources/common/message/DescribeConfigs{Request,Response}.json
and ApiVersions{Request,Response}.json of apache/kafka (4.0 to 4.4 accept both
versions).

- DescribeConfigs v4 is flexible (request header v2, response header v1). Asked
  for a topic, a broker answers the value in effect for it: the topic's own
  setting, else the cluster's dynamic default, else the broker's static
  config, else Kafka's default (its ConfigSource says which).
- ApiVersions v4 is flexible in its body, but its response header is always v0
  (no tagged fields), so that any client can read an old broker's answer. The
  features are tagged fields of the body: SupportedFeatures (tag 0),
  FinalizedFeaturesEpoch (tag 1, -1 = unknown), FinalizedFeatures (tag 2). A
  feature finalized at level 0 is left out of FinalizedFeatures (KRaft drops
  it from the finalized set); version 4 is the first whose SupportedFeatures
  lists features whose lowest level is 0 (KAFKA-17011), so a feature the broker
  supports but that is absent from the finalized ones is at level 0.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from elr_harness.cluster.wire_codec import (
    Reader,
    WireError,
    compact_string,
    framed,
    header_v1,
    uvarint,
)

DESCRIBE_CONFIGS_KEY = 32
DESCRIBE_CONFIGS_VERSION = 4
#: ConfigResource.Type TOPIC.
RESOURCE_TOPIC = 2
API_VERSIONS_KEY = 18
API_VERSIONS_VERSION = 4
#: ApiVersions' ClientSoftwareName/Version (Kafka checks them against
#: [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?).
SOFTWARE_NAME, SOFTWARE_VERSION = "elr-harness", "1"
_SUPPORTED_TAG, _EPOCH_TAG, _FINALIZED_TAG = 0, 1, 2


@dataclass(frozen=True)
class TopicConfigs:
    """One topic's answer: an error code (0: none) and the asked configs' values."""

    error_code: int
    values: dict[str, str | None]


@dataclass(frozen=True)
class Features:
    """A broker's features: supported name -> (min, max); finalized name -> max
    level, valid only when epoch >= 0."""

    supported: dict[str, tuple[int, int]]
    epoch: int
    finalized: dict[str, int]

    def level(self, name: str) -> int | None:
        """The finalized level of a feature: 0 when the broker supports it but has
        none finalized; None when it cannot say (unknown epoch, unknown feature)."""
        if self.epoch < 0:
            return None
        if name in self.finalized:
            return self.finalized[name]
        return 0 if name in self.supported else None


def encode_describe_configs_request(correlation_id: int, client_id: str,
                                    topics: Sequence[str], keys: Sequence[str]) -> bytes:
    """A size-prefixed DescribeConfigs v4 request (request header v2) for the given
    config keys of each topic, without synonyms or documentation."""
    header = header_v1(DESCRIBE_CONFIGS_KEY, DESCRIBE_CONFIGS_VERSION, correlation_id,
                       client_id) + b"\x00"  # no tagged fields
    body = uvarint(len(topics) + 1)
    for name in topics:
        body += struct.pack(">b", RESOURCE_TOPIC) + compact_string(name)
        body += uvarint(len(keys) + 1) + b"".join(compact_string(k) for k in keys)
        body += b"\x00"  # resource tagged fields
    body += struct.pack(">??", False, False) + b"\x00"  # synonyms, documentation, tags
    return framed(header, body)


def decode_describe_configs_response(payload: bytes) -> tuple[int, dict[str, TopicConfigs]]:
    """(correlation id, {topic: TopicConfigs}) of a v4 response (after the size prefix);
    results of other resource types are left out."""
    r = Reader(payload)
    correlation_id = r.int32()
    r.skip_tagged_fields()  # response header v1
    r.int32()  # throttle time
    result: dict[str, TopicConfigs] = {}
    for _ in range(max(r.uvarint() - 1, 0)):
        error_code = r.int16()
        r.compact_nullable_string()  # error message
        resource_type = r.int8()
        name = r.compact_nullable_string() or ""
        values: dict[str, str | None] = {}
        for _ in range(max(r.uvarint() - 1, 0)):
            key = r.compact_nullable_string() or ""
            values[key] = r.compact_nullable_string()
            r.int8()  # read only
            r.int8()  # config source
            r.int8()  # is sensitive
            for _ in range(max(r.uvarint() - 1, 0)):  # synonyms (none asked)
                r.compact_nullable_string()
                r.compact_nullable_string()
                r.int8()
                r.skip_tagged_fields()
            r.int8()  # config type
            r.compact_nullable_string()  # documentation
            r.skip_tagged_fields()
        r.skip_tagged_fields()
        if resource_type == RESOURCE_TOPIC:
            result[name] = TopicConfigs(error_code, values)
    r.skip_tagged_fields()
    return correlation_id, result


def encode_api_versions_request(correlation_id: int, client_id: str) -> bytes:
    """A size-prefixed ApiVersions v4 request (request header v2)."""
    header = header_v1(API_VERSIONS_KEY, API_VERSIONS_VERSION, correlation_id,
                       client_id) + b"\x00"  # no tagged fields
    body = compact_string(SOFTWARE_NAME) + compact_string(SOFTWARE_VERSION) + b"\x00"
    return framed(header, body)


def decode_api_versions_features(payload: bytes) -> tuple[int, Features]:
    """(correlation id, Features) of an ApiVersions v4 response (response header v0);
    an error code is a WireError (an old broker answers UNSUPPORTED_VERSION in v0)."""
    r = Reader(payload)
    correlation_id = r.int32()  # response header v0: no tagged fields
    error_code = r.int16()
    if error_code != 0:
        raise WireError(f"ApiVersions error {error_code}")
    for _ in range(max(r.uvarint() - 1, 0)):
        r.take(6)  # api key, min and max version
        r.skip_tagged_fields()
    r.int32()  # throttle time
    tagged = r.tagged_fields()
    supported: dict[str, tuple[int, int]] = {}
    if _SUPPORTED_TAG in tagged:
        t = Reader(tagged[_SUPPORTED_TAG])
        for _ in range(max(t.uvarint() - 1, 0)):
            name = t.compact_nullable_string() or ""
            supported[name] = (t.int16(), t.int16())
            t.skip_tagged_fields()
    epoch = Reader(tagged[_EPOCH_TAG]).int64() if _EPOCH_TAG in tagged else -1
    finalized: dict[str, int] = {}
    if _FINALIZED_TAG in tagged:
        t = Reader(tagged[_FINALIZED_TAG])
        for _ in range(max(t.uvarint() - 1, 0)):
            name = t.compact_nullable_string() or ""
            finalized[name] = t.int16()  # max version level
            t.int16()  # min version level
            t.skip_tagged_fields()
    return correlation_id, Features(supported, epoch, finalized)
