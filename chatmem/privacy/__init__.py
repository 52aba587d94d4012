"""Privacy: secrets kept out of output, sensitive details kept out of memory, retention,
erasure and the export archive."""
