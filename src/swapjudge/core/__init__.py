"""Records, pairs and the statistics of the swap: pure functions of records, no I/O beyond reading them."""
