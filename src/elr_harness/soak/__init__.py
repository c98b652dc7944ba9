"""The soak: a plan of runs, one child `harness run` each, resumable, checked in one
warm Spark session, summed up as JUnit."""
