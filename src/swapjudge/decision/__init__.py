"""Pre-registered ship/keep decisions: a decision file written before any data, the bound on the candidate's win
rate over items (a fixed-sample interval, or an anytime-valid confidence sequence), the plan that says how many
items the registered power needs, and the verdict (ship, keep or inconclusive).

`file` (the decision file), `scores` (one score per item under the tie policy), `bounds` (the interval and the
sequence), `power` (items needed, checked by simulation), `simulate` (studies with known truth) and `verdict` are
pure: numpy and scipy, and of swapjudge only `core` and `errors`. `run` puts them together with the records, the
run store and the analysis. Nothing here imports the renderers. (The package is `decision`, not `decide`, so that
`swapjudge.decide`, the function, is never shadowed by a subpackage of the same name.)
"""
