"""Kafka's own Java client as the transactional workload's client (`--txn-client java`).

txn_java/TxnClient.java is compiled with javac against the kafka-clients jar of
the Kafka under test (its libs/; nothing else is downloaded) and cached under
the cache folder by the jar's and the source's hash. It runs as one JVM on this
host (classpath: the distribution's libs/*) with one producer thread per
transactional.id; JavaTxnProcess speaks its line protocol (commands on stdin,
one JSON object a line on stdout, its log on stderr into the run's log), and a
JavaTxnClient is one of its slots as a TxnClient for txn_plan.TxnLoop. With
transaction.version 2 finalized the Java client speaks KIP-890's protocol.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from elr_harness.core.config import WorkloadConfig, cache_dir
from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.core.files import move_into_place
from elr_harness.core.history import JAVA_CLIENT, OpType
from elr_harness.workloads.txn_plan import TxnOutcome, TxnPlan

log = logging.getLogger(__name__)
#: The JVM's own log lines (kafka-clients' log4j output, on its stderr).
JVM_LOG = logging.getLogger("elr_harness.workloads.txn_java")

_SOURCE = "txn_java/TxnClient.java"
MAIN_CLASS = "elrharness.TxnClient"
_CLASS_FILE = "elrharness/TxnClient.class"
#: log4j2's configuration for the JVM: everything to stderr, at the level asked.
LOG4J_CONFIG = """status = error
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %d{HH:mm:ss.SSS} %-5p [%t] %c{1}: %m%n
rootLogger.level = ${sys:elr.log.level:-WARN}
rootLogger.appenderRef.err.ref = err
"""
_LOG4J_FILE = "log4j2.properties"
#: Transaction events of a slot; "died" is put in every slot's queue when the JVM ends.
_SLOT_EVENTS = frozenset({"ready", "init_failed", "done", "error"})


def clients_jar(libs: Path) -> Path:
    """The distribution's kafka-clients jar, or BadInput naming what is missing."""
    jars = sorted(Path(libs).glob("kafka-clients-*.jar"))
    if not jars:
        raise BadInput(f"--txn-client java: {str(libs)[:120]} holds no kafka-clients-*.jar "
                       "(the Java client is built against the Kafka under test's own); "
                       "use --txn-client librdkafka")
    return jars[0]


def client_home(jar: Path) -> Path:
    """Where the client compiled against `jar` is kept: by the jar's and the source's hash."""
    digest = hashlib.sha256()
    digest.update(jar.read_bytes())
    digest.update(resources.files(__package__).joinpath(_SOURCE).read_bytes())
    digest.update(LOG4J_CONFIG.encode())
    return cache_dir() / "txn-client" / digest.hexdigest()[:16]


def build_java_client(libs: Path, config: WorkloadConfig,
                      say: Callable[[str], None] = log.info) -> Path:
    """The client's classes, compiled with javac against `libs`' kafka-clients once;
    BadInput (one line, exit 2) when no jar or no JDK can build it."""
    jar = clients_jar(libs)
    home = client_home(jar)
    if (home / _CLASS_FILE).is_file():
        return home
    for tool in ("javac", "java"):
        if shutil.which(tool) is None:
            raise BadInput(f"--txn-client java needs a JDK ({tool} is not on PATH) to compile "
                           f"its client against {jar.name}: install one (e.g. Debian's "
                           "openjdk-17-jdk-headless) or use --txn-client librdkafka")
    say(f"compiling the Java transactional client against {jar.name} (once)")
    home.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="txn-client-", dir=home.parent))
    try:
        source = work / "TxnClient.java"
        source.write_bytes(resources.files(__package__).joinpath(_SOURCE).read_bytes())
        classes = work / "classes"
        try:
            proc = subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(classes),
                                   "-cp", str(jar), str(source)], capture_output=True,
                                  text=True, timeout=config.txn_compile_timeout_s)
        except subprocess.TimeoutExpired:
            raise BadInput(f"--txn-client java: javac took over "
                           f"{config.txn_compile_timeout_s:g} s") from None
        if proc.returncode != 0:
            said = [line for line in proc.stderr.splitlines() if "error" in line]
            first = said[0] if said else f"javac exited {proc.returncode}"
            raise BadInput(f"--txn-client java: the client does not compile against "
                           f"{jar.name}: {first[:300]}")
        (classes / _LOG4J_FILE).write_text(LOG4J_CONFIG)
        move_into_place(classes, home)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return home


def java_argv(classes: Path, libs: Path, bootstrap: Sequence[str], config: WorkloadConfig,
              txn_id_prefix: str) -> list[str]:
    """The JVM's command line: one JVM, config.txn_producers producer slots."""
    props = {
        "bootstrap.servers": ",".join(bootstrap),
        "acks": "all",
        "enable.idempotence": "true",
        "transaction.timeout.ms": config.txn_timeout_ms,
        "max.block.ms": config.txn_max_block_ms,
        "request.timeout.ms": config.request_timeout_ms,
        "delivery.timeout.ms": config.txn_delivery_timeout_ms,
        "linger.ms": config.linger_ms,
        "metadata.max.age.ms": config.metadata_refresh_interval_ms,
    }
    return ["java", *config.txn_java_heap.split(), "-XX:+UseSerialGC",
            f"-Dlog4j2.configurationFile={classes / _LOG4J_FILE}",
            f"-Delr.log.level={config.txn_java_log_level}",
            "-cp", f"{classes}{os.pathsep}{libs}/*", MAIN_CLASS,
            str(config.txn_producers), str(config.txn_commit_attempts), txn_id_prefix,
            str(config.txn_max_block_ms), *(f"{key}={value}" for key, value in props.items())]


class JavaTxnProcess:
    """The client's JVM: commands in, each slot's JSON events out, its log to ours."""

    def __init__(self, argv: list[str], slots: int, *,
                 popen: Callable[..., Any] = subprocess.Popen) -> None:
        self._argv = argv
        self._popen = popen
        self._queues = [queue.Queue() for _ in range(slots)]
        self._started: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._proc: Any = None
        self._dead = threading.Event()
        #: System.nanoTime() the JVM printed as it started (checks the shared clock)
        self.started_nanos: int | None = None

    def start(self, timeout_s: float) -> None:
        """Start the JVM and wait for its `started` line."""
        try:
            self._proc = self._popen(self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1,
                                     encoding="utf-8", errors="replace")
        except OSError as err:
            raise HarnessError(f"cannot start the Java transactional client: {err}") from err
        threading.Thread(target=self._read_events, name="txn-java-out", daemon=True).start()
        threading.Thread(target=self._read_log, name="txn-java-err", daemon=True).start()
        try:
            started = self._started.get(timeout=timeout_s)
        except queue.Empty:
            self.close(1.0)
            raise HarnessError(f"the Java transactional client did not start within "
                               f"{timeout_s:g} s (see harness.log)") from None
        if started.get("event") != "started":
            self.close(1.0)
            raise HarnessError("the Java transactional client exited as it started "
                               "(see harness.log)")
        self.started_nanos = started.get("nanos")

    def _read_events(self) -> None:
        try:
            for line in self._proc.stdout:
                try:
                    event = json.loads(line)
                except ValueError:
                    log.warning("Java client: not a JSON line: %.200s", line)
                    continue
                slot = event.get("slot") if isinstance(event, dict) else None
                if isinstance(slot, int) and 0 <= slot < len(self._queues) and \
                        event.get("event") in _SLOT_EVENTS:
                    self._queues[slot].put(event)
                elif isinstance(event, dict) and event.get("event") == "started":
                    self._started.put(event)
                elif isinstance(event, dict) and event.get("event") == "exit":
                    log.info("the Java transactional client closed its producers")
                else:
                    log.warning("Java client said: %.300s", line.strip())
        finally:
            self._dead.set()
            self._started.put({"event": "died"})
            for events in self._queues:
                events.put({"event": "died"})

    def _read_log(self) -> None:
        for line in self._proc.stderr:
            JVM_LOG.info("%s", line.rstrip())

    def alive(self) -> bool:
        return self._proc is not None and not self._dead.is_set()

    def send(self, command: str) -> bool:
        """One command line to the JVM; False when it can no longer take one."""
        with self._lock:
            if not self.alive():
                return False
            try:
                self._proc.stdin.write(command + "\n")
                self._proc.stdin.flush()
            except (OSError, ValueError):
                return False
        return True

    def event(self, slot: int, timeout_s: float) -> dict[str, Any] | None:
        """The slot's next event, or None when none came within timeout_s."""
        try:
            return self._queues[slot].get(timeout=timeout_s)
        except queue.Empty:
            return None

    def close(self, timeout_s: float) -> int | None:
        """`quit` (every producer closed), then the JVM's end; killed after timeout_s."""
        if self._proc is None:
            return None
        self.send("quit")
        try:
            if self._proc.stdin:
                self._proc.stdin.close()
        except OSError:
            pass
        try:
            return self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("the Java transactional client did not exit within %.0f s; killed",
                        timeout_s)
            self._proc.kill()
            return self._proc.wait()


class JavaTxnClient:
    """One producer slot of the JVM as a TxnClient."""

    name = JAVA_CLIENT

    def __init__(self, process: JavaTxnProcess, slot: int, txn_id: str,
                 config: WorkloadConfig) -> None:
        self.txn_id = txn_id
        self._process = process
        self._slot = slot
        block_s = config.txn_max_block_ms / 1000
        # a transaction's calls: a send (metadata), commit and abort attempts, a close
        self._run_s = block_s * (2 + 2 * config.txn_commit_attempts) + 10.0
        self._init_s = block_s * 2 + 10.0
        self._ready = False
        self._lost = False

    def ready(self) -> bool:
        return self._ready

    def alive(self) -> bool:
        return not self._lost and self._process.alive()

    def init(self) -> str | None:
        if not self._process.send(f"init {self._slot}"):
            self._lost = True
            return "CLIENT_DIED"
        event = self._process.event(self._slot, self._init_s)
        if event is None or event.get("event") in ("died", "error"):
            self._lost = True
            return "CLIENT_DIED" if event else "CLIENT_NO_ANSWER"
        if event.get("event") == "ready":
            self._ready = True
            return None
        return str(event.get("error") or "INIT_FAILED")

    def run(self, plan: TxnPlan) -> TxnOutcome:
        words = [f"txn {self._slot} {1 if plan.abort else 0} {len(plan.sends)}"]
        words += [f"{topic} {partition} {value}" for topic, partition, value in plan.sends]
        event = self._process.event(self._slot, self._run_s) \
            if self._process.send(" ".join(words)) else {"event": "died"}
        if event is None or event.get("event") != "done":
            # the slot may still be running it: it is unknown, and the slot is given up
            self._lost = True
            self._ready = False
            error = "CLIENT_NO_ANSWER" if event is None else "CLIENT_DIED"
            return TxnOutcome(OpType.INFO.value, error=error,
                              detail=str(event.get("detail", "")) if event else None,
                              replaced=True)
        return outcome_of(event, self)

    def close(self) -> None:
        self._ready = False  # the JVM closes its producers when it is told to quit


def outcome_of(event: dict[str, Any], client: JavaTxnClient | None = None) -> TxnOutcome:
    """A `done` event as a TxnOutcome; anything malformed is `info` (unknown)."""
    op_type = event.get("type")
    offsets = event.get("offsets") if isinstance(event.get("offsets"), list) else []
    end_ns = event.get("end_time")
    replaced = bool(event.get("replaced"))
    if op_type not in (OpType.OK, OpType.FAIL, OpType.INFO) or \
            not all(o is None or (type(o) is int and o >= 0) for o in offsets) or \
            (end_ns is not None and type(end_ns) is not int):
        op_type, offsets, end_ns, replaced = OpType.INFO.value, [], None, True
        event = {"error": "CLIENT_BAD_ANSWER", "detail": json.dumps(event)[:300]}
    if replaced and client is not None:
        client.close()
    return TxnOutcome(str(op_type), tuple(offsets), end_ns,
                      None if op_type == OpType.OK else str(event.get("error") or "UNKNOWN"),
                      None if op_type == OpType.OK else event.get("detail"), replaced)
