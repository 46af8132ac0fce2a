"""The vector side of a query: the matrix in memory (`matrix`), its snapshot file beside the index (`snapshot`), and
which of them a process holds (`held`)."""
