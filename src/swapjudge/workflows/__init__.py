"""What each command does, from its inputs to its result objects, in one place per command family: the CLI
(which parses and renders) and `import swapjudge` both call these, so a command and its Python twin cannot
drift apart. `sources` reads what a command or a notebook gives (paths, stdin, DataFrames, run stores);
`audit` is `analyze`; `judging` (run, runs, export), `standings` (rank), `probing` (the probes),
`reporting`, `reviewing`, `correcting` (calibrate) and `tracking` (history, compare, releases) the rest."""
