#!/usr/bin/env bash
# The whole test suite, in the project's own environment (scripts/setup.sh makes
# it): lint, unit tests, then integration tests against real containers and real
# Kafka. Exits non-zero on any failure; under CI=true a skipped test fails too.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
python=.venv/bin/python
[ -x "$python" ] || { echo "test: no .venv here; run scripts/setup.sh first" >&2; exit 2; }

status=0
echo "== ruff"
"$python" -m ruff check . || status=1

echo "== tests"
# -rs: every skip's reason in the summary
"$python" -m pytest -q -rs -p no:cacheprovider --durations=15 tests "$@"
rc=$?
# pytest's 5 means "no tests ran": that is a failure here, never a pass.
[ $rc -ne 0 ] && status=1

# Whatever happened, leave no test cluster behind.
docker ps -aq --filter label=elr-harness | xargs -r docker rm -f >/dev/null 2>&1 || true
exit $status
