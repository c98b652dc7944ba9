#!/usr/bin/env bash
# The whole test suite, in the project's own environment (scripts/setup.sh makes
# it): lint, then the unit tests beside the integration tests (real containers,
# real Kafka). Exits non-zero on any failure; under CI=true a skipped test fails too.
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
  # The integration tests mostly wait on Kafka (session timeouts, elections,
  # restarts) and the other tests mostly compute (Spark): they run side by side,
  # the computing half at a lower CPU priority, so that the containers' Kafka
  # keeps its timings while the spare CPU is used (a sequential suite took about
  # 55 minutes). The integration log is printed when both are done (and if this
  # script is stopped).
  log=$(mktemp -t elr-integration.XXXXXX)
  # Each half runs in its own session (setsid), so that stopping this script
  # stops both halves and everything they started at once: bash runs a trap
  # only between commands, and a half left running would have outlived it.
  trap 'kill -TERM -- "-${integration:-0}" "-${unit:-0}" 2>/dev/null
        wait 2>/dev/null; echo "== integration tests (stopped)"
        cat "$log"; rm -f "$log"
        remove_own_clusters
        exit 1' INT TERM
  echo "== integration tests: in the background (their output follows the other tests')"
  # In two workers, a test file each at a time (pytest-xdist, --dist loadfile): a
  # file's tests share its cluster, and every file's clusters have their own name
  # and subnet (the README's test alone runs on the default one), so two run side
  # by side; they mostly wait on Kafka, and one worker took 47 minutes.
  setsid "$python" -m pytest -q -rs -p no:cacheprovider --durations=0 \
    -n 2 --dist loadfile tests/integration \
    >"$log" 2>&1 &
  integration=$!
  echo "== unit and browser tests"
  # -rs: every skip's reason in the summary; --durations: the 40 slowest here and
  # every integration test's time, so CI's own log shows where its time went (#60). In two workers, a file each at a time
  # (its module fixtures, such as a batch of checks, stay one per file), each with
  # its own Spark session: a Spark job on a small history is mostly one thread's
  # work, so two keep both cores busy once the integration half is done with them.
  setsid nice -n 10 "$python" -m pytest -q -rs -p no:cacheprovider --durations=40 \
    -n 2 --dist loadfile tests --ignore=tests/integration --ignore=tests/cluster_runs &
  unit=$!
  wait "$unit"
  rc=$?
  # pytest's 5 means "no tests ran": that is a failure here, never a pass.
  [ $rc -ne 0 ] && status=1
  wait "$integration"
  rc=$?
  trap - INT TERM
  echo "== integration tests"
  cat "$log"
  rm -f "$log"
  [ $rc -ne 0 ] && status=1
fi

# Whatever happened, leave none of this suite's clusters behind.
remove_own_clusters
exit $status
