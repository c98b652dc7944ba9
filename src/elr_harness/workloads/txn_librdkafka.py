"""librdkafka's transactional producer (confluent-kafka) as a TxnClient.

librdkafka does not implement KIP-890 (librdkafka#5423): it speaks the older
protocol whatever transaction.version the cluster finalized. Errors are judged
as librdkafka documents them for rd_kafka_commit_transaction: a retriable one
(a time-out) may be retried, one that requires an abort is followed by
abort_transaction, a fatal one leaves only a new instance. A transaction is
`fail` only when it certainly did not commit: no commit call was made, or the
abort after a commit error returned; `info` whenever a commit call may have
gone through.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from elr_harness.core.config import WorkloadConfig
from elr_harness.core.history import LIBRDKAFKA_CLIENT, OpType
from elr_harness.workloads.client_conf import txn_producer_conf
from elr_harness.workloads.txn_plan import TxnOutcome, TxnPlan

log = logging.getLogger(__name__)

ProducerFactory = Callable[[dict[str, Any]], Any]

#: commit_transaction's and abort_transaction's timeout: the transaction's remaining
#: time, as librdkafka strongly recommends ("other values risk internal state
#: desynchronization in case any of the underlying protocol requests fail").
REMAINING_TXN_TIME = -1


def _kafka_error(err: BaseException) -> KafkaError | None:
    first = err.args[0] if err.args else None
    return first if isinstance(first, KafkaError) else None


def _name(err: BaseException) -> str:
    kafka = _kafka_error(err)
    if kafka is not None:
        return kafka.name()
    return "_QUEUE_FULL" if isinstance(err, BufferError) else type(err).__name__


class LibrdkafkaTxnClient:
    """One confluent-kafka transactional Producer at a time for one transactional.id."""

    name = LIBRDKAFKA_CLIENT

    def __init__(self, *, txn_id: str, bootstrap: list[str], config: WorkloadConfig,
                 producer_factory: ProducerFactory = Producer,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.txn_id = txn_id
        self._conf = txn_producer_conf(bootstrap, txn_id, config)
        self._factory = producer_factory
        self._clock = clock
        self._timeout_s = config.txn_max_block_ms / 1000
        self._attempts = config.txn_commit_attempts
        self._producer: Any = None
        self._ready = False

    def ready(self) -> bool:
        return self._ready

    def alive(self) -> bool:
        return True

    def init(self) -> str | None:
        """init_transactions; a retriable error keeps the instance for the next try."""
        if self._producer is None:
            self._producer = self._factory(dict(self._conf))
        try:
            self._producer.init_transactions(self._timeout_s)
        except KafkaException as err:
            kafka = _kafka_error(err)
            if kafka is None or not kafka.retriable() or kafka.fatal():
                self.close()
            return _name(err)
        self._ready = True
        return None

    def run(self, plan: TxnPlan) -> TxnOutcome:
        producer = self._producer
        offsets: list[int | None] = [None] * len(plan.sends)
        try:
            producer.begin_transaction()
        except KafkaException as err:  # nothing was sent: no transaction began
            self.close()
            return TxnOutcome(OpType.FAIL.value, error=_name(err), detail=str(err),
                              replaced=True)
        try:
            for index, (topic, partition, value) in enumerate(plan.sends):
                producer.produce(topic, value=str(value).encode("ascii"), partition=partition,
                                 on_delivery=functools.partial(_delivered, offsets, index))
        except (BufferError, KafkaException) as err:
            # no commit call: it cannot have committed, whatever the abort says
            end_ns = self._clock()
            failed = self._end(producer.abort_transaction)
            if failed is not None:
                self.close()
            return TxnOutcome(OpType.FAIL.value, (), end_ns, _name(err), str(err),
                              replaced=failed is not None)
        end_ns = self._clock()
        if plan.abort:
            failed = self._end(producer.abort_transaction)
            if failed is None:
                return TxnOutcome(OpType.OK.value, self._offsets(offsets), end_ns)
            self.close()  # aborted on purpose and never committed: closed, it stays so
            return TxnOutcome(OpType.FAIL.value, (), end_ns, _name(failed), str(failed),
                              replaced=True)
        failed = self._end(producer.commit_transaction)
        if failed is None:
            return TxnOutcome(OpType.OK.value, self._offsets(offsets), end_ns)
        kafka = _kafka_error(failed)
        if kafka is not None and kafka.txn_requires_abort() and not kafka.fatal():
            abort_failed = self._end(producer.abort_transaction)
            if abort_failed is None:  # the abort returned: the commit did not happen
                return TxnOutcome(OpType.FAIL.value, (), end_ns, _name(failed), str(failed))
        seen = self._offsets(offsets)
        self.close()  # timed out, fatal, or an abort that did not return: it may have committed
        return TxnOutcome(OpType.INFO.value, seen, end_ns, _name(failed), str(failed),
                          replaced=True)

    def _end(self, call: Callable[[float], None]) -> KafkaException | None:
        """commit_transaction or abort_transaction, again while the error is retriable
        (librdkafka: "it is okay to call this function again"); None when it returned."""
        last: KafkaException | None = None
        for _ in range(self._attempts):
            try:
                call(REMAINING_TXN_TIME)
                return None
            except KafkaException as err:
                last = err
                kafka = _kafka_error(err)
                if kafka is None or not kafka.retriable() or kafka.fatal():
                    return err
        return last

    def _offsets(self, offsets: list[int | None]) -> tuple[int | None, ...]:
        """The delivery reports served so far (the commit served them; poll for stragglers)."""
        try:
            self._producer.poll(0)
        except (KafkaException, RuntimeError) as err:
            log.debug("%s: poll failed: %s", self.txn_id, err)
        return tuple(offsets)

    def close(self) -> None:
        """Drop the instance; the next init makes a new one with the same transactional.id."""
        producer, self._producer, self._ready = self._producer, None, False
        if producer is None:
            return
        try:
            producer.purge(in_queue=True, in_flight=True, blocking=False)
            producer.poll(0)
        except (KafkaException, RuntimeError) as err:
            log.debug("%s: purge failed: %s", self.txn_id, err)


def _delivered(offsets: list[int | None], index: int, err: KafkaError | None,
               msg: Any) -> None:
    """A delivery report: the offset the broker gave the record, if it gave one."""
    if err is None and msg is not None and msg.offset() is not None and msg.offset() >= 0:
        offsets[index] = msg.offset()
