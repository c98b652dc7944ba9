"""The page-cache layer: the FUSE daemon under the brokers' log dirs that keeps
unsynced writes in memory (it runs inside the nodes, with its disk faults beside it),
and its host-side control."""
