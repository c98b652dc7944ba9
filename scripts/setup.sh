#!/usr/bin/env bash
# Installs everything elr-harness needs on a fresh Debian machine and makes sure a
# Docker engine answers. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v dockerd >/dev/null || need_apt+=(docker.io)
command -v iptables >/dev/null || need_apt+=(iptables)
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
command -v fusermount3 >/dev/null || need_apt+=(fuse3)
command -v mvn >/dev/null || need_apt+=(maven)
command -v java >/dev/null || need_apt+=(openjdk-17-jre-headless)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
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

python3 -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v "Running pip as the 'root'" || true
command -v harness >/dev/null || { echo "setup: the harness command was not installed" >&2; exit 2; }
# Spark's classes, parsed and verified once into a JVM class archive: every check
# starts 5-7 s sooner. Built once per Java runtime and Spark; an optimisation,
# so a failure only warns.
python3 -m checkers.jvm_archive || echo "setup: no class archive; checks will start slower" >&2
echo "setup: ready (docker $(docker version --format '{{.Server.Version}}'), $(java -version 2>&1 | head -n 1))"
