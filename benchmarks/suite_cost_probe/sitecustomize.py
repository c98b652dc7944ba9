"""The suite-cost probe (benchmarks/suite_cost.py): loaded by every Python process
of a measured suite run (this folder is put first on PYTHONPATH), it notes each
fixed cost the suite pays, as JSON lines appended to $SUITE_COST_EVENTS:

- a Spark session started (elr_harness.checker.spark.get_spark with none running);
- a JVM started on this machine (java, javac, mvn, spark-submit) or in a node
  (a Kafka tool, `*.sh` or `java`, through DockerNode.exec);
- a cluster set up (Cluster.up);
- a wait (core.wait.wait_until: how long, and whether it timed out) and a plain
  time.sleep, by the code that called it.

Nothing is noted, and nothing is changed, when SUITE_COST_EVENTS is unset.
"""

from __future__ import annotations

import os

if os.environ.get("SUITE_COST_EVENTS"):
    import atexit
    import functools
    import importlib.abc
    import importlib.util
    import json
    import subprocess
    import sys
    import threading
    import time

    _PATH = os.environ["SUITE_COST_EVENTS"]
    _lock = threading.Lock()
    _sleeps: dict[tuple[str, bool], list[float]] = {}

    def _half() -> str:
        return os.environ.get("SUITE_COST_HALF", "?")

    def note(kind: str, **fields: object) -> None:
        line = json.dumps({"kind": kind, "pid": os.getpid(), "ppid": os.getppid(), "half": _half(),
                           "at": time.time(), **fields}) + "\n"
        with _lock:
            fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)

    def _caller(depth: int = 2) -> str:
        frame = sys._getframe(depth)
        while frame is not None and frame.f_code.co_filename.endswith(
                ("sitecustomize.py", "core/wait.py", "threading.py", "subprocess.py")):
            frame = frame.f_back
        if frame is None:
            return "?"
        name = frame.f_code.co_filename
        for cut in ("/src/elr_harness/", "/tests/", "/site-packages/"):
            if cut in name:
                name = name.split(cut, 1)[1]
                break
        return f"{name}:{frame.f_code.co_name}"

    _real_sleep = time.sleep

    def _sleep(seconds: float) -> None:
        if sys._getframe(1).f_code.co_filename.endswith("core/wait.py"):
            return _real_sleep(seconds)  # noted as the wait it is part of
        started = time.monotonic()
        try:
            _real_sleep(seconds)
        finally:
            key = (_caller(), threading.current_thread() is threading.main_thread())
            with _lock:
                entry = _sleeps.setdefault(key, [0, 0.0])
                entry[0] += 1
                entry[1] += time.monotonic() - started

    time.sleep = _sleep

    def _flush_sleeps() -> None:
        with _lock:
            items = list(_sleeps.items())
            _sleeps.clear()
        for (caller, main), (count, total) in items:
            note("sleep", caller=caller, main_thread=main, count=count, secs=total)

    atexit.register(_flush_sleeps)

    _JVM_TOOLS = ("java", "javac", "mvn", "spark-submit")

    def _jvm_name(args: object) -> str | None:
        argv = [args] if isinstance(args, (str, bytes)) else list(args or [])
        if not argv:
            return None
        first = os.path.basename(str(argv[0]))
        if first in _JVM_TOOLS:
            return first
        if first in ("sh", "bash") and len(argv) >= 3:
            words = str(argv[2]).split()
            return next((os.path.basename(w) for w in words
                         if os.path.basename(w) in _JVM_TOOLS), None)
        return None

    _real_popen_init = subprocess.Popen.__init__
    _real_popen_wait = subprocess.Popen.wait

    def _popen_init(self, args, *rest, **kw):
        _real_popen_init(self, args, *rest, **kw)
        name = _jvm_name(args)
        if name is not None:
            self._suite_cost = (name, time.monotonic(), _caller())
            if name == "spark-submit":  # the gateway lives as long as its session
                note("jvm", tool=name, where="local", secs=None, caller=self._suite_cost[2])
                self._suite_cost = None

    def _popen_wait(self, timeout=None):
        rc = _real_popen_wait(self, timeout)
        cost = getattr(self, "_suite_cost", None)
        if cost is not None:
            self._suite_cost = None
            note("jvm", tool=cost[0], where="local", secs=time.monotonic() - cost[1],
                 caller=cost[2])
        return rc

    subprocess.Popen.__init__ = _popen_init
    subprocess.Popen.wait = _popen_wait

    def _node_tool(cmd: object) -> str | None:
        text = cmd if isinstance(cmd, str) else " ".join(str(c) for c in cmd)
        for word in text.split():
            base = os.path.basename(word)
            if base.startswith("kafka-") and base.endswith(".sh") or base == "java":
                return base
        return None

    def _wrap_exec(original):
        @functools.wraps(original)
        def exec_(self, cmd, *args, **kw):
            tool = _node_tool(cmd)
            if tool is None or kw.get("detach"):
                return original(self, cmd, *args, **kw)
            started = time.monotonic()
            try:
                return original(self, cmd, *args, **kw)
            finally:
                note("jvm", tool=tool, where="node", secs=time.monotonic() - started,
                     caller=_caller())
        return exec_

    def _wrap_get_spark(original):
        @functools.wraps(original)
        def get_spark(*args, **kw):
            from elr_harness.checker.spark import running_session
            fresh = running_session() is None
            started = time.monotonic()
            session = original(*args, **kw)
            if fresh:
                note("spark-session", secs=time.monotonic() - started, caller=_caller())
            return session
        return get_spark

    def _wrap_up(original):
        @functools.wraps(original)
        def up(self, *args, **kw):
            started = time.monotonic()
            try:
                return original(self, *args, **kw)
            finally:
                note("cluster-up", secs=time.monotonic() - started, caller=_caller())
        return up

    def _wrap_wait_until(original):
        @functools.wraps(original)
        def wait_until(predicate, timeout, *args, **kw):
            started = time.monotonic()
            result = original(predicate, timeout, *args, **kw)
            note("wait", secs=time.monotonic() - started, timeout=timeout,
                 timed_out=not result, caller=_caller(),
                 main_thread=threading.current_thread() is threading.main_thread())
            return result
        return wait_until

    def _patch_class(module, cls: str, attr: str, wrap) -> None:
        owner = getattr(module, cls, None)
        if owner is not None and attr in owner.__dict__:
            setattr(owner, attr, wrap(owner.__dict__[attr]))

    _PATCHES = {
        "elr_harness.checker.spark": lambda m: setattr(m, "get_spark",
                                                       _wrap_get_spark(m.get_spark)),
        "elr_harness.cluster.cluster": lambda m: _patch_class(m, "Cluster", "up", _wrap_up),
        "elr_harness.cluster.docker_backend": lambda m: _patch_class(m, "DockerNode", "exec",
                                                                     _wrap_exec),
        "elr_harness.core.wait": lambda m: setattr(m, "wait_until",
                                                   _wrap_wait_until(m.wait_until)),
    }

    class _Loader(importlib.abc.Loader):
        def __init__(self, inner, name):
            self.inner, self.name = inner, name

        def create_module(self, spec):
            return self.inner.create_module(spec)

        def exec_module(self, module):
            self.inner.exec_module(module)
            _PATCHES[self.name](module)

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name not in _PATCHES:
                return None
            for finder in sys.meta_path:
                if finder is self:
                    continue
                spec = getattr(finder, "find_spec", lambda *a: None)(name, path, target)
                if spec is not None and spec.loader is not None:
                    spec.loader = _Loader(spec.loader, name)
                    return spec
            return None

    sys.meta_path.insert(0, _Finder())
