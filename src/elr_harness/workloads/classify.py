"""What a client error means for the history: `fail` (certainly did not happen)
or `info` (may have happened), and which consumer errors move a read position.

The send table follows librdkafka's own persistence status for produce errors
(rdkafka_request.c, rd_kafka_handle_Produce_error / rd_kafka_err_action):
errors it marks MSG_NOT_PERSISTED are broker or client refusals of a request
that appended nothing; MSG_POSSIBLY_PERSISTED ones (transport loss, time-outs,
NOT_ENOUGH_REPLICAS_AFTER_APPEND) may have appended. One exception, seen in a
real ELR-on run: NOT_LEADER_OR_FOLLOWER, which librdkafka counts as not
persisted, is also how a leader answers an acks=all request it had already
appended when it loses leadership while waiting for its followers (Kafka's
DelayedProduce); if that broker is later elected again (from the ELR) the
record is in the log. So it is never a definite failure, and a re-send it
caused is caught like the others (client_conf.ResendWatch). This holds for one
attempt per send, so non-idempotent producers run with retries=0 (librdkafka
still re-sends after refusals it marks not persisted, such as
NOT_LEADER_FOR_PARTITION, without counting a retry: no earlier attempt of such
a send can have been appended; the one exception, a request on the wire when
librdkafka drops its broker handle, is caught by client_conf.ResendWatch and
such sends are `info` whatever their report says). Idempotent producers retry internally, so any
error they end with may follow an appended attempt: always `info`. Anything
not in the definite list is `info`: when in doubt, the history says unknown.
"""

from __future__ import annotations

from typing import Literal

from confluent_kafka import KafkaError

Outcome = Literal["fail", "info"]

#: Final send errors after which the record was certainly not appended
#: (librdkafka names, as KafkaError.name() gives them).
DEFINITE_SEND_FAILURES = frozenset({
    # the broker refused the request before appending
    "NOT_ENOUGH_REPLICAS",
    "LEADER_NOT_AVAILABLE",
    "BROKER_NOT_AVAILABLE",
    "REPLICA_NOT_AVAILABLE",
    "FENCED_LEADER_EPOCH",
    "UNKNOWN_LEADER_EPOCH",
    "UNKNOWN_TOPIC_OR_PART",
    "TOPIC_AUTHORIZATION_FAILED",
    "MSG_SIZE_TOO_LARGE",
    "RECORD_LIST_TOO_LARGE",
    "INVALID_MSG",
    "INVALID_RECORD",
    "INVALID_REQUIRED_ACKS",
    "POLICY_VIOLATION",
    # the client never sent it
    "_QUEUE_FULL",
    "_UNKNOWN_PARTITION",
    "_UNKNOWN_TOPIC",
    "_PURGE_QUEUE",
    "_INVALID_ARG",
})

#: Consumer errors after which librdkafka stops fetching the partition
#: (auto.offset.reset=error) and the consumer must reposition it explicitly.
REPOSITION_ERRORS = frozenset({"_AUTO_OFFSET_RESET", "OFFSET_OUT_OF_RANGE", "_LOG_TRUNCATION"})


def classify_send_error(error_name: str, *, idempotent: bool) -> Outcome:
    """`fail` only when the send certainly appended nothing, else `info`."""
    if idempotent:
        return "info"
    return "fail" if error_name in DEFINITE_SEND_FAILURES else "info"


def needs_reposition(error_name: str) -> bool:
    """True when the consumer must seek the partition itself to read on."""
    return error_name in REPOSITION_ERRORS


def error_name(err: BaseException) -> str:
    """librdkafka's name for an exception a client call raised."""
    first = err.args[0] if err.args else None
    return first.name() if isinstance(first, KafkaError) else type(err).__name__
