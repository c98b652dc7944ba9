"""Mutant Kafkas (#54): a released Kafka with one method rewritten into a plausible
bug, built as a distribution the harness runs like any other (`--kafka-dist`), to
measure what a VALID verdict is worth. catalog.toml lists them; build.py makes them."""
