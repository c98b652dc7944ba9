"""`python -m elr_harness.cli`: the `harness` program."""

from elr_harness.cli.main import entry

entry()
