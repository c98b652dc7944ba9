#!/usr/bin/env bash
# The whole test suite, in the project's own environment (scripts/setup.sh makes
# it): lint, the unit and browser tests, then the integration tests (real
# containers, real Kafka). Exits non-zero on any failure; under CI=true a skipped test fails too.
# tests/cluster_runs/ is not part of it: whole scored runs on mutant Kafkas (#54),
# which the weekly workflow runs (.github/workflows/nightly.yml), as does
# `bash scripts/test.sh tests/cluster_runs` by hand.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
python=.venv/bin/python
[ -x "$python" ] || { echo "test: no .venv here; run scripts/setup.sh first" >&2; exit 2; }

# Every container and network the tests create carries this owner label
# (core/config.py OWNER_ENV), and the clean-up below removes those
# only: a user's cluster, or another suite's, is not this suite's to remove.
export ELR_HARNESS_OWNER="test-suite-$$-$(date +%s%N)"
remove_own_clusters() {
  docker ps -aq --filter "label=elr-harness.owner=$ELR_HARNESS_OWNER" \
    | xargs -r docker rm -f >/dev/null 2>&1
  docker network ls -q --filter "label=elr-harness.owner=$ELR_HARNESS_OWNER" \
    | xargs -r docker network rm >/dev/null 2>&1
  return 0
}

status=0
echo "== ruff"
"$python" -m ruff check . || status=1

if [ $# -gt 0 ]; then
  # the tests named on the command line, as one pytest run
  echo "== tests"
  "$python" -m pytest -q -rs -p no:cacheprovider --durations=15 "$@" || status=1
else
  # The unit and browser half, then the integration half (real containers, real
  # Kafka), one after the other, each in two pytest-xdist workers (--dist
  # loadfile: a file each at a time, so a file's module fixtures, a batch of checks
  # or a cluster, stay one per file; every file's clusters have their own name and
  # subnet). Each half alone keeps both cores busy (1.9 of 2), so side by side
  # they only took turns: the two halves cost some 500 CPU-s more together than
  # apart (Kafka's nodes and the harness's waits ran as long as the starved half
  # took), and the suite took longer (#60). Each half runs in its own session
  # (setsid), so that stopping this script stops it and all it started at once:
  # bash runs a trap only between commands.
  half=0
  trap '[ "$half" -ne 0 ] && kill -TERM -- "-$half" 2>/dev/null; wait 2>/dev/null
        echo "== stopped"; remove_own_clusters; exit 1' INT TERM
  run_half() {
    setsid "$python" -m pytest -q -rs -p no:cacheprovider -n 2 --dist loadfile "$@" &
    half=$!
    wait "$half"
    # pytest's 5 means "no tests ran": that is a failure here, never a pass.
    [ $? -ne 0 ] && status=1
    half=0
  }
  echo "== unit and browser tests"
  # -rs: every skip's reason in the summary; --durations: the 40 slowest here and
  # every integration test's time, so CI's own log shows where its time went (#60).
  # Both halves: the longest file first (tests/conftest.py), in that order.
  run_half --durations=40 --no-loadscope-reorder tests --ignore=tests/integration \
    --ignore=tests/cluster_runs
  echo "== integration tests"
  run_half --durations=0 --no-loadscope-reorder tests/integration
  trap - INT TERM
fi

# Whatever happened, leave none of this suite's clusters behind.
remove_own_clusters
exit $status
