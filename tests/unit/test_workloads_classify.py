"""Send error classification: definite fails only where librdkafka says nothing
was appended; everything uncertain is info."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from elr_harness.workloads.classify import (
    DEFINITE_SEND_FAILURES,
    REPOSITION_ERRORS,
    classify_send_error,
    error_name,
    needs_reposition,
)


@pytest.mark.parametrize("name", [
    "NOT_ENOUGH_REPLICAS",          # refused before append (min ISR not met)
    "UNKNOWN_TOPIC_OR_PART",
    "_QUEUE_FULL",
    "_PURGE_QUEUE",
])
def test_refusals_are_definite_fails(name: str) -> None:
    assert classify_send_error(name, idempotent=False) == "fail"


@pytest.mark.parametrize("name", [
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",  # the record *was* appended
    # a leader that lost leadership while an appended acks=all request waited
    "NOT_LEADER_FOR_PARTITION",
    "REQUEST_TIMED_OUT",                 # broker gave up waiting for replicas, after append
    "_MSG_TIMED_OUT",
    "_TIMED_OUT",
    "_TRANSPORT",
    "_PURGE_INFLIGHT",
    "KAFKA_STORAGE_ERROR",
    "NETWORK_EXCEPTION",
    "SOMETHING_NEW_IN_A_LATER_LIBRDKAFKA",
])
def test_uncertain_outcomes_are_info(name: str) -> None:
    assert classify_send_error(name, idempotent=False) == "info"


@pytest.mark.parametrize("name", sorted(DEFINITE_SEND_FAILURES))
def test_idempotent_final_errors_are_always_info(name: str) -> None:
    assert classify_send_error(name, idempotent=True) == "info"


@pytest.mark.parametrize("name", sorted(DEFINITE_SEND_FAILURES | REPOSITION_ERRORS))
def test_every_listed_name_is_a_real_librdkafka_error(name: str) -> None:
    # a misspelt name would silently turn a fail into info (or miss a reposition)
    code = getattr(KafkaError, name)
    assert KafkaError(code).name() == name


def test_reposition_errors() -> None:
    assert needs_reposition("_AUTO_OFFSET_RESET")
    assert needs_reposition("_LOG_TRUNCATION")
    assert not needs_reposition("_TRANSPORT")


def test_error_name_of_client_exceptions() -> None:
    assert error_name(KafkaException(KafkaError(KafkaError._TRANSPORT))) == "_TRANSPORT"
    assert error_name(RuntimeError("consumer closed")) == "RuntimeError"
