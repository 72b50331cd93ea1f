"""The folds of AlpacaEval's cross-validated length-controlled fit written out (probes/alpaca_folds.py), against
numpy's own portable sort and scikit-learn's own GroupKFold, run as the published AlpacaEval runs ran them and as
scikit-learn 1.9 runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.model_selection import GroupKFold

from swapjudge.probes.alpaca_folds import duplicated_row_splits, group_folds, numpy_quicksort_ties

SIZES = [0, 1, 5, 16, 17, 18, 31, 32, 33, 100, 257, 805, 1000, 2414, 2415, 4830]


def _portable_numpy(code: str) -> str:
    """Run `code` in a Python whose numpy dispatches to none of its SIMD kernels (its portable introsort is then
    the argsort, as on a machine without AVX2 / AVX-512 argsort or before numpy 1.25)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    disabled = " ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f))
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": disabled}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_tie_order_equals_numpys_portable_argsort():
    out = _portable_numpy(
        "import json, numpy as np\n"
        f"print(json.dumps([np.argsort(np.full(n, 2, dtype=np.intp)).tolist() for n in {SIZES!r}]))\n")
    for n, numpy_order in zip(SIZES, json.loads(out), strict=True):
        assert numpy_quicksort_ties(n).tolist() == numpy_order, n
    assert numpy_quicksort_ties(2415)[:4].tolist() != [0, 1, 2, 3]  # not the stable order: the ties move


def test_numpy_quicksort_folds_equal_group_kfold_as_scikit_learn_up_to_1_8_sorted():
    """scikit-learn up to 1.8 called np.argsort(sizes) without `kind`; 1.9 passes kind="stable". Dropping `kind`
    gives 1.9's GroupKFold the older call, and the portable numpy gives that call the published runs' order."""
    code = (
        "import json, numpy as np\n"
        "from sklearn.model_selection import GroupKFold\n"
        "plain = np.argsort\n"
        "np.argsort = lambda a, *args, **kwargs: plain(a)  # the call of scikit-learn <= 1.8\n"
        "out = []\n"
        f"for n in {SIZES[2:]!r}:\n"
        "    groups = np.tile(np.arange(n), 2)\n"
        "    splits = GroupKFold(5).split(np.zeros((2 * n, 1)), groups=groups)\n"
        "    out.append([[train.tolist(), test.tolist()] for train, test in splits])\n"
        "print(json.dumps(out))\n")
    for n, splits in zip(SIZES[2:], json.loads(_portable_numpy(code)), strict=True):
        mine = duplicated_row_splits(n, 5, "numpy_quicksort")
        assert [[a.tolist(), b.tolist()] for a, b in mine] == splits, n


def test_stable_folds_equal_group_kfold_with_a_stable_sort(monkeypatch):
    plain = np.argsort
    monkeypatch.setattr(np, "argsort", lambda a, *args, **kwargs: plain(a, kind="stable"))  # scikit-learn 1.9
    for n in SIZES[2:]:
        groups = np.tile(np.arange(n), 2)
        theirs = list(GroupKFold(5).split(np.zeros((2 * n, 1)), groups=groups))
        mine = duplicated_row_splits(n, 5, "stable")
        assert all(np.array_equal(a, c) and np.array_equal(b, d) for (a, b), (c, d) in zip(mine, theirs,
                                                                                          strict=True)), n
    assert group_folds(7, 5, "stable").tolist() == [1, 0, 4, 3, 2, 1, 0]  # group g in fold (n - 1 - g) mod 5


def test_folds_are_balanced_and_cover_every_row_once():
    for order in ("numpy_quicksort", "stable"):
        splits = duplicated_row_splits(2415, 5, order)
        tests = np.concatenate([test for _train, test in splits])
        assert np.array_equal(np.sort(tests), np.arange(4830))
        assert {test.size for _train, test in splits} == {966}
        for train, test in splits:  # a row's two copies sit in the same fold
            assert np.array_equal(np.unique(test % 2415), np.sort(test[test < 2415]))
            assert np.intersect1d(train, test).size == 0
    with pytest.raises(ValueError, match="order must be one of numpy_quicksort, stable"):
        group_folds(10, 5, "quick")  # type: ignore[arg-type]
