"""Schedules as data: the schedule file format, its steps and the conditions they
wait for, how schedules compose, the player, and the recorder and writer of what a
run played (schedule.toml)."""
