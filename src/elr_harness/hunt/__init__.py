"""Taking runs apart after the fact: replay a run's schedule, shrink it to a
minimal reproducer and its BUG.md, and score the harness on mutant Kafkas. Above the
soak: the score plays the soak's plan, and every tool here starts its runs as the
soak's children do."""
