#!/usr/bin/env bash
# Installs everything elr-harness needs on a fresh Debian machine, in the project's
# own virtual environment (.venv, no system site-packages: a package installed by
# hand elsewhere can never hide a missing declaration), and makes sure a Docker
# engine answers. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
venv="$repo/.venv"

need_apt=()
command -v dockerd >/dev/null || need_apt+=(docker.io)
command -v iptables >/dev/null || need_apt+=(iptables)
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
command -v fusermount3 >/dev/null || need_apt+=(fuse3)
[ -e /usr/lib/x86_64-linux-gnu/libfuse3.so.3 ] || ls /usr/lib/*/libfuse3.so.3 >/dev/null 2>&1 \
  || need_apt+=(libfuse3-3)
command -v mvn >/dev/null || need_apt+=(maven)
command -v java >/dev/null || need_apt+=(openjdk-17-jre-headless)
# a JDK: Maven compiles the mutator, javac the mutants' probe (#54)
command -v javac >/dev/null || need_apt+=(openjdk-17-jdk-headless)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
python3 -c 'import ensurepip, venv' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  [ "$(id -u)" = 0 ] || { echo "setup: run as root (apt-get and dockerd need it)" >&2; exit 2; }
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# A Docker engine: use the one that answers, else start dockerd in the background.
if ! docker info >/dev/null 2>&1; then
  echo "setup: starting dockerd"
  mkdir -p /var/log
  nohup dockerd >/var/log/elr-harness-dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || {
    echo "setup: dockerd did not start; see /var/log/elr-harness-dockerd.log" >&2
    tail -n 20 /var/log/elr-harness-dockerd.log >&2 || true
    exit 2
  }
fi

# The project's environment. Reinstalled only when pyproject.toml changed (the
# stamp holds its hash), so a second run only checks.
stamp="$venv/.elr-harness-installed"
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv"
  python3 -m venv "$venv"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing elr-harness and its test extra into $venv"
  # --no-compile: pip would byte-compile every module of every package (pyspark's
  # thousands) up front; Python compiles the ones it imports when it first does
  # (a fresh environment: 27 s -> 17 s here)
  "$venv/bin/python" -m pip install -q --no-compile --disable-pip-version-check -e '.[test]'
  echo "$want" >"$stamp"
fi
"$venv/bin/python" -m pip check --disable-pip-version-check >/dev/null || {
  echo "setup: the environment's packages conflict:" >&2
  "$venv/bin/python" -m pip check >&2
  exit 2
}

# actionlint, which the tests run on .github/workflows (built from the Go module
# proxy into the environment's bin; Debian's golang-go when no Go is installed).
actionlint_version=v1.7.7
if [ "$("$venv/bin/actionlint" -version 2>/dev/null | head -n 1)" != "$actionlint_version" ]; then
  go=$(command -v go || echo /usr/local/go/bin/go)
  if [ ! -x "$go" ]; then
    echo "setup: installing golang-go (to build actionlint)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null
    go=$(command -v go)
  fi
  echo "setup: building actionlint $actionlint_version"
  GOBIN="$(realpath "$venv")/bin" "$go" install "github.com/rhysd/actionlint/cmd/actionlint@$actionlint_version"
fi

# `harness` on the PATH of the next command: a link to this clone's entry point.
bindir=/usr/local/bin
[ -w "$bindir" ] || bindir="$HOME/.local/bin"
mkdir -p "$bindir"
if [ "$(readlink "$bindir/harness" 2>/dev/null)" != "$venv/bin/harness" ]; then
  ln -sfn "$venv/bin/harness" "$bindir/harness"
  echo "setup: linked $bindir/harness -> $venv/bin/harness"
fi
command -v harness >/dev/null || {
  echo "setup: $bindir is not on PATH; add it, or run $venv/bin/harness" >&2
  exit 2
}

# The mutator of `harness mutants build` (#54): a small javassist program, built
# by Maven into the cache once (a second run only checks).
"$venv/bin/python" -m elr_harness.cluster.mutants.build

# Spark's classes, parsed and verified once into a JVM class archive: every check
# starts 5-7 s sooner. Built once per Java runtime and Spark (a second run only
# checks); an optimisation, so a failure only warns.
"$venv/bin/python" -m elr_harness.checker.jvm_archive || echo "setup: no class archive; checks will start slower" >&2

"$venv/bin/python" - <<'PY'
import platform
import subprocess
from importlib.metadata import version

from elr_harness.core.config import DEFAULT_KAFKA_VERSION

def out(*cmd: str) -> str:
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except OSError as err:
        return f"not found ({err})"
    return (run.stdout or run.stderr).strip().splitlines()[0] if (run.stdout or run.stderr) else "?"

print("setup: ready")
print(f"  docker          {out('docker', 'version', '--format', '{{.Server.Version}}')}")
print(f"  java            {out('java', '-version')}")
print(f"  python          {platform.python_version()} ({__import__('sys').prefix})")
print(f"  pyspark         {version('pyspark')}")
print(f"  confluent-kafka {version('confluent-kafka')}")
print(f"  kafka (default) {DEFAULT_KAFKA_VERSION}")
PY
