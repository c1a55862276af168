"""Column conversions the model's tables share, without pandas' per-value dispatch where it costs: the
comparison's whole-number columns (``model.estimate.compare``)."""
from __future__ import annotations

import numpy as np
import pandas as pd


def whole_numbers(col: pd.Series):
    """``pd.array(col.astype("Float64").round(), dtype="Int64")`` (a missing value NA, the others rounded half
    to even) from the column's values as floats, rounded by numpy as ``Float64.round`` rounds them, and
    their missing mask: the same array in a tenth of the time (15 columns per comparison cost ~9 ms through
    the nullable dtypes); a value that is not finite, a whole number beyond 2^53 or not a number takes
    pandas' own path (which refuses it as before)."""
    values = col.to_numpy(dtype=object)
    missing = pd.isna(values)
    try:
        x = np.array([0.0 if m else float(v) for v, m in zip(values.tolist(), missing.tolist())], dtype=float)
    except (TypeError, ValueError):
        x = None
    if x is not None:
        r = np.round(x)
        if np.isfinite(r).all() and (np.abs(r) <= 2.0 ** 53).all():
            return pd.arrays.IntegerArray(r.astype(np.int64), missing.astype(bool))
    return pd.array(col.astype("Float64").round(), dtype="Int64")
