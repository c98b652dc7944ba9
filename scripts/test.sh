#!/usr/bin/env bash
# The whole test suite: lint, unit tests, then integration tests against real
# containers and real Kafka. Exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1

status=0
echo "== ruff"
ruff check . || status=1

echo "== tests"
python3 -m pytest -q -p no:cacheprovider --durations=15 tests "$@"
rc=$?
# pytest's 5 means "no tests ran": that is a failure here, never a pass.
[ $rc -ne 0 ] && status=1

# Whatever happened, leave no test cluster behind.
docker ps -aq --filter label=elr-harness | xargs -r docker rm -f >/dev/null 2>&1 || true
exit $status
