"""The wire codec of the observer's settings (cluster.kafka_wire_config), byte for
byte against Kafka's message schemas (kafka-clients 4.4.0's
common/message/<Name>.json; 4.0.2 and 4.1.1 have the same versions):

    DescribeConfigs (key 32) v4   flexible      request header v2, response header v1
    ApiVersions     (key 18) v4   flexible body request header v2, response header v0
                                  (ApiVersionsResponse's header is v0 in every version)

The golden vectors are hex written from the schema JSON, not from the module's
encoder; tests/integration/test_cluster.py decodes real brokers' answers."""

from __future__ import annotations

import socket
import struct
import threading

import pytest
from test_kafka_wire import _golden, _recv

from elr_harness.cluster.kafka_wire import WireConnection
from elr_harness.cluster.kafka_wire_config import (
    Features,
    TopicConfigs,
    decode_api_versions_features,
    decode_describe_configs_response,
    encode_api_versions_request,
    encode_describe_configs_request,
)
from elr_harness.cluster.wire_codec import WireError

MIN_ISR = "146d696e2e696e73796e632e7265706c69636173"  # compact "min.insync.replicas" (19)
ELR = "21" + b"eligible.leader.replicas.version".hex()  # compact string, 32 bytes
MV = "11" + b"metadata.version".hex()  # compact string, 16 bytes

# DescribeConfigsRequest.json v4 ("validVersions": "1-4", "flexibleVersions": "4+"),
# request header v2: min.insync.replicas of topics "t" and "u".
DESCRIBE_CONFIGS_REQUEST = _golden(
    "00000043",  # int32 size prefix: 67 bytes follow
    "0020",  # RequestHeader v2 RequestApiKey int16 = 32 (DescribeConfigs)
    "0004",  # RequestApiVersion int16 = 4
    "00000007",  # CorrelationId int32 = 7
    "0002 6162",  # ClientId "ab" (int16 length even in header v2)
    "00",  # header tagged fields: count 0
    "03",  # Resources: compact array of 2
    "02",  # Resources[0].ResourceType int8 = 2 (TOPIC)
    "02 74",  # Resources[0].ResourceName: compact string "t"
    "02", MIN_ISR,  # Resources[0].ConfigurationKeys: compact array of 1
    "00",  # Resources[0] tagged fields: count 0
    "02 02 75 02", MIN_ISR, "00",  # Resources[1]: TOPIC "u", the same key, no tags
    "00",  # IncludeSynonyms bool = false
    "00",  # IncludeDocumentation bool = false (versions 3+)
    "00",  # request tagged fields: count 0
)

# DescribeConfigsResponse.json v4, response header v1: "t" with min.insync.replicas "2"
# (Kafka's default, with one synonym and an unknown tagged field), "u" unknown
# (error 3, no configs), and a broker resource (type 4), which is left out.
DESCRIBE_CONFIGS_RESPONSE = _golden(
    "00000009",  # ResponseHeader v1 CorrelationId int32 = 9
    "00",  # header tagged fields: count 0
    "00000000",  # ThrottleTimeMs int32 = 0
    "04",  # Results: compact array of 3
    "0000",  # Results[0].ErrorCode int16 = 0
    "00",  # Results[0].ErrorMessage: compact nullable string, null
    "02",  # Results[0].ResourceType int8 = 2 (TOPIC)
    "02 74",  # Results[0].ResourceName "t"
    "02",  # Results[0].Configs: compact array of 1
    MIN_ISR,  # .Name "min.insync.replicas"
    "02 32",  # .Value: compact nullable string "2"
    "00",  # .ReadOnly bool = false
    "05",  # .ConfigSource int8 = 5 (DEFAULT_CONFIG)
    "00",  # .IsSensitive bool = false
    "02",  # .Synonyms: compact array of 1
    MIN_ISR, "02 32 05 00",  # Synonyms[0]: Name, Value "2", Source 5, no tagged fields
    "03",  # .ConfigType int8 = 3 (INT; versions 3+)
    "00",  # .Documentation: null (versions 3+)
    "01 07 01 ff",  # config tagged fields: 1 field, tag 7, size 1 (unknown: skipped)
    "00",  # Results[0] tagged fields: count 0
    "0003",  # Results[1].ErrorCode int16 = 3 (UNKNOWN_TOPIC_OR_PARTITION)
    "05 676f6e65",  # Results[1].ErrorMessage "gone"
    "02 02 75",  # Results[1].ResourceType 2, ResourceName "u"
    "01",  # Results[1].Configs: compact array of 0
    "00",  # Results[1] tagged fields
    "0000 00 04 02 31 01 00",  # Results[2]: no error, BROKER "1", no configs, no tags
    "00",  # response tagged fields: count 0
)

# ApiVersionsRequest.json v4 ("flexibleVersions": "3+"), request header v2.
API_VERSIONS_REQUEST = _golden(
    "0000001c",  # int32 size prefix: 28 bytes follow
    "0012",  # RequestHeader v2 RequestApiKey int16 = 18 (ApiVersions)
    "0004",  # RequestApiVersion int16 = 4
    "00000007",  # CorrelationId int32 = 7
    "0002 6162",  # ClientId "ab"
    "00",  # header tagged fields: count 0
    "0c 656c722d6861726e657373",  # ClientSoftwareName: compact string "elr-harness"
    "02 31",  # ClientSoftwareVersion: compact string "1"
    "00",  # request tagged fields: count 0
)


def _api_versions_response(finalized_elr: bool = True, epoch: str = "0000000000000005",
                           error: str = "0000") -> bytes:
    """ApiVersionsResponse.json v4, response header v0: two APIs, the features as
    tagged fields of the body (SupportedFeatures 0, FinalizedFeaturesEpoch 1,
    FinalizedFeatures 2), ELR finalized at 1 or left out (KRaft's level 0)."""
    finalized = (["03", ELR, "0001 0001 00"] if finalized_elr else ["02"]) + \
        [MV, "001b 001b 00"]  # MaxVersionLevel, MinVersionLevel, no tags
    finalized_bytes = _golden(*finalized)
    return _golden(
        "00000009",  # ResponseHeader v0 CorrelationId int32 = 9 (no tagged fields, ever)
        error,  # ErrorCode int16
        "03",  # ApiKeys: compact array of 2
        "0012 0000 0004 00",  # ApiVersions: min 0, max 4, no tagged fields
        "0020 0001 0004 00",  # DescribeConfigs: min 1, max 4
        "00000000",  # ThrottleTimeMs int32 = 0
        "04",  # tagged fields: 4
        "00 3d",  # tag 0 SupportedFeatures, 61 bytes:
        "03", ELR, "0000 0001 00",  # ELR: MinVersion 0, MaxVersion 1, no tags
        MV, "0007 001b 00",  # metadata.version: 7 to 27
        "01 08", epoch,  # tag 1 FinalizedFeaturesEpoch: int64
        "02", f"{len(finalized_bytes):02x}", finalized_bytes.hex(),  # tag 2
        "03 01 00",  # tag 3 ZkMigrationReady bool = false
    )


def test_describe_configs_request_matches_the_schema_bytes() -> None:
    assert encode_describe_configs_request(7, "ab", ["t", "u"], ["min.insync.replicas"]) \
        == DESCRIBE_CONFIGS_REQUEST


def test_describe_configs_response_gives_each_topics_value_or_error() -> None:
    assert decode_describe_configs_response(DESCRIBE_CONFIGS_RESPONSE) == (9, {
        "t": TopicConfigs(0, {"min.insync.replicas": "2"}), "u": TopicConfigs(3, {})})


def test_api_versions_request_matches_the_schema_bytes() -> None:
    assert encode_api_versions_request(7, "ab") == API_VERSIONS_REQUEST


def test_api_versions_response_gives_the_features() -> None:
    correlation, features = decode_api_versions_features(_api_versions_response())
    assert correlation == 9
    assert features == Features(
        supported={"eligible.leader.replicas.version": (0, 1), "metadata.version": (7, 27)},
        epoch=5, finalized={"eligible.leader.replicas.version": 1, "metadata.version": 27})
    assert features.level("eligible.leader.replicas.version") == 1


def test_a_supported_feature_left_out_of_the_finalized_ones_is_at_level_0() -> None:
    _, features = decode_api_versions_features(_api_versions_response(finalized_elr=False))
    assert features.level("eligible.leader.replicas.version") == 0
    assert features.level("no.such.feature") is None, "unsupported: it cannot say"
    _, unknown = decode_api_versions_features(
        _api_versions_response(epoch="ffffffffffffffff"))
    assert unknown.level("eligible.leader.replicas.version") is None, "epoch -1: no view"


def test_an_api_versions_error_is_no_view() -> None:
    with pytest.raises(WireError, match="ApiVersions error 35"):
        decode_api_versions_features(_api_versions_response(error="0023"))


@pytest.mark.parametrize(("decode", "golden"), [
    (decode_describe_configs_response, DESCRIBE_CONFIGS_RESPONSE),
    (decode_api_versions_features, _api_versions_response()),
], ids=["describe-configs", "api-versions"])
def test_every_truncation_is_a_wire_error(decode, golden: bytes) -> None:
    for cut in range(len(golden)):
        with pytest.raises(WireError):
            decode(golden[:cut])


def test_a_connection_asks_for_configs_and_features_on_one_socket() -> None:
    """A fake broker on a local socket answers both requests in turn: each response
    is matched to its request by correlation id (ApiVersions' header v0 included)."""
    server = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []
    answers = [DESCRIBE_CONFIGS_RESPONSE.replace(b"\x00\x00\x00\x09", b"\x00\x00\x00\x01", 1),
               _api_versions_response().replace(b"\x00\x00\x00\x09", b"\x00\x00\x00\x02", 1)]

    def broker() -> None:
        conn, _ = server.accept()
        with conn:
            for answer in answers:
                size = struct.unpack(">i", _recv(conn, 4))[0]
                received.append(_recv(conn, size))
                conn.sendall(struct.pack(">i", len(answer)) + answer)

    thread = threading.Thread(target=broker, daemon=True)
    thread.start()
    connection = WireConnection(f"127.0.0.1:{server.getsockname()[1]}", 5.0, client_id="ab")
    try:
        configs = connection.topic_configs(["t", "u"], ["min.insync.replicas"])
        features = connection.features()
    finally:
        connection.close()
        thread.join(5.0)
        server.close()
    assert [r[:8] for r in received] == [bytes.fromhex("0020000400000001"),
                                         bytes.fromhex("0012000400000002")]
    assert configs["t"].values == {"min.insync.replicas": "2"}
    assert features.level("eligible.leader.replicas.version") == 1
