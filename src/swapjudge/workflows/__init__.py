"""What each command does, from its inputs to its result objects, in one place per command family: the CLI
(which parses and renders) and `import swapjudge` both call these, so a command and its Python twin cannot
drift apart. `sources` reads what a command or a notebook gives (paths, stdin, DataFrames, run stores);
`audit` is `analyze`; `run`, `stored`, `rank`, `probes`, `report`, `review`, `calibrate`, `history` the rest."""
