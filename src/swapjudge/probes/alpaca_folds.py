"""The cross-validation folds of AlpacaEval's length-controlled fit, written out so that they do not depend on the
installed scikit-learn or numpy.

AlpacaEval duplicates every row of its fit (a label-1 and a label-0 copy) and splits the rows with scikit-learn's
GroupKFold(5), a row's two copies in one group. Every group then holds two rows, so GroupKFold's rule (the largest
group first, each into the lightest fold, the first such fold on a tie) deals the groups round-robin, in the reverse
of the order its sort of the group sizes leaves the ties in. That order is what changed between versions:

- `numpy_quicksort`: scikit-learn up to 1.8 sorted the sizes with numpy's default argsort, which is not stable. Where
  numpy has no SIMD argsort for the CPU (no AVX-512 or AVX2 argsort: numpy before 1.25, or a non-x86 machine) that is
  numpy's portable introsort, and its order of equal keys is `numpy_quicksort_ties`. This assignment reproduces
  AlpacaEval's published length-controlled figures: alpaca-7b on AlpacaEval 2 and claude on AlpacaEval 1 to the
  last digit. The other orders below change claude's from 76.832 to 76.497.
- `stable`: scikit-learn 1.9 sorts with kind="stable": the ties stay in index order, so group g goes to fold
  (n - 1 - g) mod 5.
- Not written out: numpy 1.26.4 with its AVX-512 argsort (x86-simd-sort, since numpy 1.25) leaves the ties in
  yet another order (alpaca-7b then lands at 5.978 instead of the published 5.875); numpy 2.4.6 with its AVX2 and
  AVX-512 argsort left equal keys in index order (measured up to 2,415 keys), the folds of `stable`.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

FoldOrder = Literal["numpy_quicksort", "stable"]
FOLD_ORDERS: tuple[FoldOrder, ...] = ("numpy_quicksort", "stable")
DEFAULT_FOLD_ORDER: FoldOrder = "numpy_quicksort"  # the order behind AlpacaEval's published leaderboards
SMALL_QUICKSORT = 15  # numpy's cut-over to insertion sort, which leaves equal keys where they are


def numpy_quicksort_ties(n: int) -> np.ndarray:
    """The permutation numpy's portable introsort argsort (npysort's aquicksort) returns for n equal keys.

    With every key equal no comparison is true: the median of three swaps nothing, each scan of the partition
    stops after one step, and the partition swaps its two ends inward until they meet in the middle, so the
    recursion stays balanced and never falls back to heapsort. Runs of at most 16 are left as they are."""
    order = list(range(n))
    pending: list[tuple[int, int]] = []
    low, high = 0, n - 1
    while True:
        while high - low > SMALL_QUICKSORT:
            middle = low + ((high - low) >> 1)
            order[middle], order[high - 1] = order[high - 1], order[middle]  # the pivot parked next to the end
            i, j = low, high - 1
            while True:
                i, j = i + 1, j - 1
                if i >= j:
                    break
                order[i], order[j] = order[j], order[i]
            order[i], order[high - 1] = order[high - 1], order[i]  # the pivot to its place
            if i - low < high - i:  # the larger side waits, the smaller is partitioned next
                pending.append((i + 1, high))
                high = i - 1
            else:
                pending.append((low, i - 1))
                low = i + 1
        if not pending:
            return np.array(order, dtype=np.intp)
        low, high = pending.pop()


def group_folds(groups: int, splits: int = 5, order: FoldOrder = DEFAULT_FOLD_ORDER) -> np.ndarray:
    """Each group's fold (0 .. splits - 1) under GroupKFold's rule when all `groups` are of one size, with the ties
    in the sort left in `order`'s arrangement."""
    if order not in FOLD_ORDERS:
        raise ValueError(f"order must be one of {', '.join(FOLD_ORDERS)}, got {order!r}")
    tie_order = numpy_quicksort_ties(groups) if order == "numpy_quicksort" else np.arange(groups, dtype=np.intp)
    fold = np.empty(groups, dtype=np.intp)
    fold[tie_order[::-1]] = np.arange(groups) % splits  # the sort reversed (largest first), dealt round-robin
    return fold


def duplicated_row_splits(rows: int, splits: int = 5, order: FoldOrder = DEFAULT_FOLD_ORDER
                          ) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) row indices over AlpacaEval's duplicated rows (copy 1 of rows 0..rows-1, then copy 0 of the
    same rows; row i's two copies are group i), in GroupKFold's order of folds."""
    fold = np.tile(group_folds(rows, splits, order), 2)
    return [(np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(splits)]
