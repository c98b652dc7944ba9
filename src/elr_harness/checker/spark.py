"""A quiet SparkSession for the checker: local[*] by default, any master by URL.

The checker starts Spark itself (no user set-up). Spark's own chatter goes to a
log file rather than the user's terminal, by Spark's public means only: log4j
is set to ERROR through a properties file (-Dlog4j2.configurationFile), and the
JVM's stdout and stderr (the JDK's notice of incubator modules that Spark's
launcher enables, launcher warnings) go to the check's log file: PySpark's
launch_gateway takes the Popen arguments of the JVM it starts ("capturing
stdout/stderr" is what its popen_kwargs are for), and the SparkContext is
made on that gateway.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from elr_harness.checker.jvm_options import jvm_options
from elr_harness.core.config import LOG_FORMAT, CheckerConfig, cache_dir
from elr_harness.core.errors import HarnessError

_log = logging.getLogger(__name__)

_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
"""


def spark_log_path() -> Path:
    """Where the JVM's own stderr goes while the checker runs (one file per check,
    under the cache rather than /tmp, where they piled up)."""
    return cache_dir() / "logs" / f"spark-{os.getpid()}.log"


def _keep_newest_logs(kept: int) -> None:
    """Delete all but the newest `kept` Spark logs of past checks."""
    logs = sorted(spark_log_path().parent.glob("spark-*.log"),
                  key=lambda p: p.stat().st_mtime, reverse=True)
    for old in logs[kept:]:
        old.unlink(missing_ok=True)


def _root_log_to(path: Path) -> None:
    """py4j reports a Ctrl-C in flight with logging.exception on the root logger;
    when nothing configured logging (`harness check`), that would print its
    traceback on the terminal: send it to the Spark log instead."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(handler)


def _written(path: Path, text: str) -> Path:
    """path holding text (replaced atomically when it differs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def _log4j_file() -> Path:
    return _written(cache_dir() / "logs" / "log4j2.properties", _LOG4J)


@contextmanager
def session_conf(spark, key: str, value: str):
    """A SQL setting for the queries planned inside the block, the previous one after."""
    previous = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, previous)


@contextmanager
def computed_meanwhile(spark, *frames):
    """Inside the block, a background job computes these persisted frames into
    their cache while the calling thread plans the queries that read them.

    Planning the checks is single-threaded driver work (2-3 s in a fresh JVM),
    during which the other core would idle; the later job then finds the blocks
    made, or waits for the ones being made, instead of computing them. On
    leaving, the background job is waited for (cancelled first if the block
    raised), so nothing of it outlives the check. Its own failure is not
    raised: the block's job computes the same frames, and reports any error.
    """
    context = spark.sparkContext
    group = f"elr-computed-meanwhile-{os.getpid()}-{id(frames)}"

    def compute() -> None:
        context.setJobGroup(group, "the checks' cached tables", interruptOnCancel=True)
        for frame in frames:
            frame.count()

    pool = ThreadPoolExecutor(1, thread_name_prefix="spark-cache")
    computing = pool.submit(compute)
    try:
        yield
    except BaseException:
        context.cancelJobGroup(group)
        raise
    finally:
        pool.shutdown(wait=True)
        if computing.exception() is not None:
            _log.debug("computing the cached tables ahead failed: %s", computing.exception())


def stop_running_tasks(spark, timeout_s: float, settle_s: float = 0.0) -> None:
    """Cancel this session's jobs until none has run a task for settle_s, waiting at
    most timeout_s.

    A cancelled job ends at once, its tasks only at their next record: until
    then a writing task may still open files, and Hadoop's committer makes their
    folders again. And after a Ctrl-C the JVM (which ignores SIGINT) may still be
    planning a command Python gave up on, whose job starts later: cancelling
    again until the session stays idle stops that one too. A JVM that no longer
    answers runs no task either.
    """
    try:
        context = spark.sparkContext
        tracker = context.statusTracker()
        deadline = time.monotonic() + timeout_s
        idle_since = None
        while time.monotonic() < deadline:
            context.cancelAllJobs()
            # a cancelled job's tasks run on until their next record: the executors
            # count them (getExecutorInfos: public in PySpark since 4.3, SPARK-55610)
            busy = (tracker.getActiveJobsIds()
                    or any(e.numRunningTasks for e in tracker.getExecutorInfos()))
            now = time.monotonic()
            if busy:
                idle_since = None
            elif idle_since is None:
                idle_since = now
            if idle_since is not None and now - idle_since >= settle_s:
                return
            time.sleep(0.05)
        _log.warning("Spark jobs still ran after %.0f s of cancelling", timeout_s)
    except Exception as err:  # Py4J: the JVM is gone or going
        _log.debug("no running Spark tasks to wait for: %s", err)


def running_session():
    """The SparkSession this process runs, whichever thread started it, or None
    (SparkSession.active: the thread's own session, else the builder's default;
    the soak starts Spark in a helper thread)."""
    from pyspark.errors import PySparkRuntimeError
    from pyspark.sql import SparkSession

    try:
        return SparkSession.active()
    except PySparkRuntimeError:
        return None


def stop_session() -> None:
    """Stop the running session, whichever thread started it (its JVM exits)."""
    session = running_session()
    if session is not None:
        session.stop()


def end_jvm(wait_s: float) -> None:
    """Stop the session and end the JVM this process launched (waiting at most
    wait_s for it to exit, then killing it). A command Python gave up on (a
    Ctrl-C) runs on in the JVM until the JVM exits: a Parquet write it was
    planning still makes its committer's folders after every job was cancelled."""
    global _gateway
    try:
        stop_session()
    except Exception as err:  # Py4J: the JVM is gone or going
        _log.debug("the session did not stop: %s", err)
    proc = getattr(_gateway, "proc", None)
    _gateway = None
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _require_reachable_master(config: CheckerConfig) -> None:
    """A spark:// master that accepts no connection is one clear line within a few
    seconds, not a minute of Spark's retries and a Java stack trace."""
    master = config.spark_master
    if not master.startswith("spark://"):
        return
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            with socket.create_connection((host, int(port)),
                                          timeout=config.spark_master_connect_timeout_s):
                return
        except (OSError, ValueError):
            continue
    raise HarnessError(f"Spark master {master} does not answer (no connection within "
                       f"{config.spark_master_connect_timeout_s:.0f} s); is it running?")


#: The JVM this process launched for Spark (launch_gateway's), reused by every
#: later session: PySpark keeps a stopped context's JVM and its gateway.
_gateway = None


def _chain_sigint(handler_before, context) -> None:
    """A SparkContext made in the main thread replaces SIGINT's handler with its
    own (cancel the jobs, raise KeyboardInterrupt): the handler that was there
    (the CLI's, which remembers the interrupt so that the py4j error it causes
    reads as one) would no longer run. Both run now: the jobs are cancelled, then
    the earlier handler has its say."""
    spark_handler = signal.getsignal(signal.SIGINT)
    if not callable(handler_before) or handler_before is signal.default_int_handler \
            or spark_handler is handler_before:
        return

    def cancel_then_before(signum, frame):
        try:
            context.cancelAllJobs()
        except Exception:  # noqa: BLE001 - a JVM already gone has no jobs to cancel
            pass
        handler_before(signum, frame)

    signal.signal(signal.SIGINT, cancel_then_before)


def get_spark(config: CheckerConfig, history_bytes: int | None = None,
              cached: bool = False):
    """The running SparkSession for config's master, started quietly if needed
    (with the JIT chosen for a history of history_bytes, to be converted or with
    its Parquet cache current (`cached`), see jvm_options; a session that checks
    many histories, the soak's, gives a size at or above quick_jit_below_bytes)."""
    warnings.filterwarnings("ignore", message=".*pandas.*", category=FutureWarning)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON", "python3"))
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.java_gateway import launch_gateway
        from pyspark.sql import SparkSession
    except ImportError as err:  # pragma: no cover - pyspark is a dependency
        raise HarnessError(f"pyspark is not installed ({err}); pip install pyspark") from err

    running = running_session()
    master = running.sparkContext.master if running is not None else None
    if master != config.spark_master:
        _require_reachable_master(config)
    if running is not None:
        if master == config.spark_master:
            return running  # the running session, as it is
        running.stop()
    from elr_harness.checker.jvm_archive import startup_options

    spark_log_path().parent.mkdir(parents=True, exist_ok=True)
    _keep_newest_logs(config.spark_logs_kept)
    _root_log_to(spark_log_path())
    log4j = _log4j_file()
    jit = jvm_options(config, history_bytes, cached)
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j} {jit}"
    # the archive holds the driver's class path: executors elsewhere start without it;
    # ELR_CHECKER_JVM_OPTIONS replaces every option (the archive's training sets it)
    archive = "" if "ELR_CHECKER_JVM_OPTIONS" in os.environ else startup_options(config)
    driver_opts = f"{java_opts} {archive}".rstrip()
    conf = (
        SparkConf().setMaster(config.spark_master)
        .setAppName("elr-harness-checker")
        .set("spark.driver.memory", config.driver_memory)
        .set("spark.executor.memory", config.executor_memory)
        .set("spark.sql.shuffle.partitions", str(config.shuffle_partitions))
        .set("spark.default.parallelism", str(config.shuffle_partitions))
        .set("spark.sql.files.maxPartitionBytes", str(config.max_partition_bytes))
        .set("spark.sql.ansi.enabled", "false")
        .set("spark.sql.session.timeZone", "UTC")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.driver.extraJavaOptions", driver_opts)
        .set("spark.executor.extraJavaOptions", java_opts)
        .set("spark.sql.autoBroadcastJoinThreshold", str(32 * 1024 * 1024))
        # fixed, size-chosen shuffle partitions (checks.py) beat re-planning each stage
        .set("spark.sql.adaptive.enabled", "false")
        # the per-partition windows hold a whole topic-partition: keep it in memory
        # longer before the disk-backed buffer takes over
        .set("spark.sql.windowExec.buffer.in.memory.threshold", str(1 << 20))
        # the checks' cached tables are read once or twice: compressing them
        # (a dictionary per column) cost more than it saved (1M operations: 1.5 s)
        .set("spark.sql.inMemoryColumnarStorage.compressed", "false")
        # the Parquet cache is written uncompressed: it is read from the page cache,
        # where decompressing cost more than the bytes saved (10M operations:
        # 1.7 GB instead of 0.8 GB, recheck 55.7 -> 53.2 s; 1M: 17.2 -> 16.7 s)
        .set("spark.sql.parquet.compression.codec", "uncompressed")
        # the events tables the checks register are external (their files sit beside
        # the history); the catalog's own folder would otherwise be made in the cwd
        .set("spark.sql.warehouse.dir", str(Path(tempfile.gettempdir())
                                               / "elr-harness-spark-warehouse"))
    )
    extra_conf = os.environ.get("ELR_CHECKER_SPARK_CONF", "")
    settings = list(config.spark_conf) + [tuple(kv.split("=", 1)) for kv in
                                          extra_conf.split(",") if "=" in kv]
    for key, value in settings:
        conf = conf.set(key, value)
    global _gateway
    try:
        # launch_gateway keeps the JVM's Popen as .proc (None: a gateway it was given)
        proc = getattr(_gateway, "proc", None)
        if _gateway is None or (proc is not None and proc.poll() is not None):
            with spark_log_path().open("ab") as log:
                _gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
        # a context stopped earlier leaves its JVM running (PySpark reuses it): the
        # next one is made on the same gateway, never on a second JVM
        handler_before = signal.getsignal(signal.SIGINT)
        context = SparkContext(conf=conf, gateway=_gateway)
        _chain_sigint(handler_before, context)
        spark = SparkSession.builder.getOrCreate()  # the session of that context
    except Exception as err:  # Py4J or launcher errors: say where to look
        raise HarnessError(
            f"could not start Spark (master {config.spark_master}): {err}; "
            f"see {spark_log_path()}") from err
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class EarlyStart:
    """The session started in a helper thread while the caller does other work
    (a run's collect and teardown), so that the check after it does not wait for
    the JVM. Made in a helper thread, the context leaves the main thread's SIGINT
    handler alone, as the soak's does. A start that fails is only logged: the
    check's own get_spark then meets the same error and reports it."""

    def __init__(self, config: CheckerConfig, history_bytes: int) -> None:
        self._thread = threading.Thread(target=self._start, args=(config, history_bytes),
                                        name="spark-early-start", daemon=True)
        self._thread.start()

    @staticmethod
    def _start(config: CheckerConfig, history_bytes: int) -> None:
        try:
            get_spark(config, history_bytes)
        except Exception as err:  # noqa: BLE001 - the check starts it again and says why
            _log.info("Spark's early start failed (the check tries again): %s", err)

    def wait(self) -> None:
        """Block until the start is done (whether it worked or not)."""
        self._thread.join()

    def cancel(self, wait_s: float) -> None:
        """No check follows: wait for the start, then end the JVM it made."""
        self.wait()
        end_jvm(wait_s)
