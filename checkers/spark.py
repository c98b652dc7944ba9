"""A quiet SparkSession for the checker: local[*] by default, any master by URL.

The checker starts Spark itself (no user set-up). Spark's own chatter goes to a
log file rather than the user's terminal: log4j is set to ERROR through a
properties file and the JVM's stderr (JDK notices, launcher warnings) is sent
to a file while the JVM starts.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from harness.core.config import LOG_FORMAT, CheckerConfig, cache_dir
from harness.core.errors import HarnessError

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


def _log4j_file() -> Path:
    path = cache_dir() / "logs" / "log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J)
        tmp.replace(path)
    return path


@contextmanager
def _stderr_to(path: Path):
    """Send fd 2 to path while a child (the JVM) inherits it."""
    saved = os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def jvm_options(config: CheckerConfig, history_bytes: int | None = None) -> str:
    """The JVM options for a history of this size (ELR_CHECKER_JVM_OPTIONS overrides)."""
    if "ELR_CHECKER_JVM_OPTIONS" in os.environ:
        return os.environ["ELR_CHECKER_JVM_OPTIONS"]
    quick = history_bytes is None or history_bytes < config.quick_jit_below_bytes
    return f"{config.jvm_options} -XX:TieredStopAtLevel=1" if quick else config.jvm_options


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


#: The name prefix of a local executor's task threads, running or idle.
_TASK_THREAD = "Executor task"


@contextmanager
def codegen_shared_with_tasks(spark):
    """Inside the block, the calling thread compiles generated code under the same
    class loader as the local executor's tasks, so each class is compiled once.

    Spark's codegen cache is keyed by the thread's context class loader. While
    planning, the driver thread compiles every whole-stage class (to check it
    compiles); in local mode the tasks then compile the same source again under
    the executor's own loader: at 10k operations 31 of 173 compilations were such
    repeats. Both loaders delegate to the same application class path, so the
    classes are the same. Needs a finished local job (its task threads keep their
    loader); otherwise, and on a cluster, nothing changes.
    """
    jvm = spark.sparkContext._jvm
    thread = jvm.java.lang.Thread
    me = thread.currentThread()
    previous = me.getContextClassLoader()
    task_loader = None
    if spark.sparkContext.master.startswith("local"):
        for other in thread.getAllStackTraces().keySet():
            if other.getName().startswith(_TASK_THREAD):
                task_loader = other.getContextClassLoader()
                break
    if task_loader is not None:
        me.setContextClassLoader(task_loader)
    try:
        yield
    finally:
        if task_loader is not None:
            me.setContextClassLoader(previous)


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


def running_context():
    """The SparkContext this process runs, whichever thread started it
    (getActiveSession is per thread, and check_history starts Spark in a helper)."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context


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


def get_spark(config: CheckerConfig, history_bytes: int | None = None):
    """The running SparkSession for config's master, started quietly if needed
    (with the JIT chosen for a history of history_bytes, see jvm_options)."""
    warnings.filterwarnings("ignore", message=".*pandas.*", category=FutureWarning)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON", "python3"))
    try:
        from pyspark.sql import SparkSession
    except ImportError as err:  # pragma: no cover - pyspark is a dependency
        raise HarnessError(f"pyspark is not installed ({err}); pip install pyspark") from err

    running = running_context()
    if running is None or running.master != config.spark_master:
        _require_reachable_master(config)
    if running is not None:
        if running.master == config.spark_master:
            return SparkSession.builder.getOrCreate()  # the running session, as it is
        running.stop()
    from checkers.jvm_archive import startup_options

    spark_log_path().parent.mkdir(parents=True, exist_ok=True)
    _keep_newest_logs(config.spark_logs_kept)
    _root_log_to(spark_log_path())
    log4j = _log4j_file()
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j} {jvm_options(config, history_bytes)}"
    # the archive holds the driver's class path: executors elsewhere start without it
    driver_opts = f"{java_opts} {startup_options(config)}".rstrip()
    builder = (
        SparkSession.builder.master(config.spark_master)
        .appName("elr-harness-checker")
        .config("spark.driver.memory", config.driver_memory)
        .config("spark.executor.memory", config.executor_memory)
        .config("spark.sql.shuffle.partitions", str(config.shuffle_partitions))
        .config("spark.default.parallelism", str(config.shuffle_partitions))
        .config("spark.sql.files.maxPartitionBytes", str(config.max_partition_bytes))
        .config("spark.sql.ansi.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", driver_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.sql.autoBroadcastJoinThreshold", str(32 * 1024 * 1024))
        # fixed, size-chosen shuffle partitions (checks.py) beat re-planning each stage
        .config("spark.sql.adaptive.enabled", "false")
        # the per-partition windows hold a whole topic-partition: keep it in memory
        # longer before the disk-backed buffer takes over
        .config("spark.sql.windowExec.buffer.in.memory.threshold", str(1 << 20))
        # the checks' cached tables are read once or twice: compressing them
        # (a dictionary per column) cost more than it saved (1M operations: 1.5 s)
        .config("spark.sql.inMemoryColumnarStorage.compressed", "false")
        # the Parquet cache is written uncompressed: it is read from the page cache,
        # where decompressing cost more than the bytes saved (10M operations:
        # 1.7 GB instead of 0.8 GB, recheck 55.7 -> 53.2 s; 1M: 17.2 -> 16.7 s)
        .config("spark.sql.parquet.compression.codec", "uncompressed")
        # the events tables the checks register are external (their files sit beside
        # the history); the catalog's own folder would otherwise be made in the cwd
        .config("spark.sql.warehouse.dir", str(Path(tempfile.gettempdir())
                                               / "elr-harness-spark-warehouse"))
    )
    extra_conf = os.environ.get("ELR_CHECKER_SPARK_CONF", "")
    settings = list(config.spark_conf) + [tuple(kv.split("=", 1)) for kv in
                                          extra_conf.split(",") if "=" in kv]
    for key, value in settings:
        builder = builder.config(key, value)
    try:
        with _stderr_to(spark_log_path()):
            spark = builder.getOrCreate()
    except Exception as err:  # Py4J or launcher errors: say where to look
        raise HarnessError(
            f"could not start Spark (master {config.spark_master}): {err}; "
            f"see {spark_log_path()}") from err
    spark.sparkContext.setLogLevel("ERROR")
    return spark
