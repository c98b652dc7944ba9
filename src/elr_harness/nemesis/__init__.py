"""What the harness does to the cluster: fault kinds (faults/), scripted scenarios
(scenarios/), schedules as data (schedule/), the guided search (guided/) and the
page-cache layer (pagecache/); here, what they share: the injector, the registry of
`--nemesis`, the random mix, targets by role and what a kind needs of a run."""
