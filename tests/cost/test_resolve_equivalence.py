"""``cost.doubt.resolve`` on numpy arrays equals the pandas sort-and-group-by it replaced (kept here
as the reference, verbatim), on the shipped catalog and on 120 random catalogs with
duplicates, ties, undated and superseded rows, unstated regions and missing prices."""
import numpy as np
import pandas as pd
import pytest

from workbook import catalog
from workbook.cost import doubt, pricebook
from workbook.cost.doubt import BASIS_ORDER, KEY, PRICE_COLUMN, UNSTATED_REGIONS, _norm, _price_dates, basis_of


def _region_spread_ref(g: pd.DataFrame) -> pd.Series:
    unstated = g["region"].isin(UNSTATED_REGIONS)
    out = pd.Series(0.0, index=g.index)
    if not unstated.any():
        return out
    named = g[~unstated & g["lp"].notna()].groupby(["provider", "instance"])["lp"].agg(["min", "max"])
    u = g.loc[unstated & g["lp"].notna(), ["provider", "instance", "lp"]]
    m = u.join(named, on=["provider", "instance"], how="inner")
    if len(m):
        out.loc[m.index] = np.maximum(m["max"], m["lp"]) - np.minimum(m["min"], m["lp"])
    return out


def resolve_ref(off: pd.DataFrame) -> pd.DataFrame:
    """The pandas implementation before the numpy one (commit 686d801)."""
    key = pd.DataFrame({k: _norm(off[k]) for k in KEY}, index=off.index)
    when = _price_dates(off)
    read = pd.to_datetime(off["as_of"].astype(str), errors="coerce") if "as_of" in off else when
    order = basis_of(off).map(BASIS_ORDER).fillna(len(BASIS_ORDER))
    old = catalog.is_superseded(off) if "notes" in off else off["offering"].str.endswith("-superseded")
    parts = []
    for model, col in PRICE_COLUMN.items():
        if col not in off:
            continue
        price = pd.to_numeric(off[col], errors="coerce")
        if model == "capacity_block" and "other_price_model" in off:
            price = price.where(off["other_price_model"].fillna("").astype(str).str.startswith("capacity_block"))
        have = price.notna()
        if not have.any():
            continue
        g = key[have].assign(row=off.index[have], offering=off.loc[have, "offering"].to_numpy(),
                             price=price[have], when=when[have], read=read[have], order=order[have],
                             live=~old[have])
        g = g.sort_values(["live", "when", "order", "read", "price"],
                          ascending=[False, False, True, False, False], na_position="last", kind="stable")
        g["lp"] = np.log(g["price"].where(g["live"]))
        grp = g.groupby(KEY, sort=False)
        first = grp["offering"].transform("first")
        spread = grp["lp"].transform("max") - grp["lp"].transform("min")
        n = grp["live"].transform("sum")
        kept = ~g.duplicated(KEY, keep="first")
        parts.append(pd.DataFrame({"row": g["row"].to_numpy(), "pricing_model": model,
                                   "duplicate_of": np.where(kept, None, first),
                                   "duplicates": n.to_numpy(int),
                                   "duplicate_spread": spread.fillna(0.0).to_numpy(float),
                                   "region_spread": _region_spread_ref(g).to_numpy(float)}))
    if not parts:
        return pd.DataFrame(columns=doubt.RESOLVED)
    out = pd.concat(parts, ignore_index=True)
    out["duplicate_of"] = out["duplicate_of"].astype(object).where(out["duplicate_of"].notna(), None)
    return out


def test_resolve_equals_the_pandas_reference_on_the_shipped_catalog():
    off = catalog.offerings()
    pd.testing.assert_frame_equal(doubt.resolve(off), resolve_ref(off))


def _random_catalog(rng: np.random.Generator) -> pd.DataFrame:
    n = int(rng.integers(1, 40))
    pick = lambda xs: [xs[i] for i in rng.integers(0, len(xs), n)]  # noqa: E731
    def prices(missing):
        p = np.round(rng.choice([1.0, 2.0, 2.5, 4.0, 10.0], n) * rng.choice([1.0, 1.0, 1.1], n), 2)
        return np.where(rng.random(n) < missing, np.nan, p)
    dates = [None, "2026-10-01", "2026-06-01", "2025-05-31"]
    return pd.DataFrame({
        "offering": [f"o{i}" + ("-superseded" if rng.random() < 0.08 else "") for i in range(n)],
        "provider": pick(["A", "a ", "B", None]), "instance": pick(["p5", "P5", "x1", "y"]),
        "region": pick(["east", "west", "", None, "unspecified", "Unspecified", "all"]),
        "price_as_of": pick(dates), "as_of": pick(["2026-11-20", "2026-11-01", None]),
        "price_basis": pick(["catalog", "provider_page", "transcription", "secondary", None]),
        "notes": pick([None, "", "SUPERSEDED by a cut", "a note"]),
        "on_demand_usd_per_hour": prices(0.1), "spot_usd_per_hour": prices(0.5),
        "commit_1y_usd_per_hour": prices(0.7), "commit_3y_usd_per_hour": prices(0.9), "monthly_usd": prices(0.8),
        "other_usd_per_hour": prices(0.5), "other_price_model": pick(["capacity_block", "capacity_block_x", None, "x"]),
    }, index=rng.permutation(np.arange(100, 100 + n)))


@pytest.mark.parametrize("seed", range(120))
def test_resolve_equals_the_pandas_reference_on_random_catalogs(seed):
    off = _random_catalog(np.random.default_rng(seed))
    pd.testing.assert_frame_equal(doubt.resolve(off), resolve_ref(off))


def _duplicates_ref(base: pd.DataFrame, res: pd.DataFrame, model) -> None:
    """``pricebook._duplicates`` before it read ``resolved_arrays`` (commit 686d801)."""
    r = res[res["pricing_model"] == model].set_index("row") if model else res.iloc[:0].set_index("row")
    base["duplicate_of"] = base.index.map(r["duplicate_of"]).astype(object)
    base["duplicates"] = base.index.map(r["duplicates"]).astype(float)
    base["duplicate_spread"] = base.index.map(r["duplicate_spread"]).astype(float)
    base["region_spread"] = base.index.map(r["region_spread"]).astype(float)
    if model in ("commit_1y", "commit_3y"):
        od = res[res["pricing_model"] == "on_demand"].set_index("row")
        own = base.index.isin(r.index)
        for c in ("duplicate_of", "duplicates", "duplicate_spread", "region_spread"):
            base.loc[~own, c] = base.index[~own].map(od[c])
    base["duplicates"] = base["duplicates"].fillna(1.0)
    base["duplicate_spread"] = base["duplicate_spread"].fillna(0.0)
    base["region_spread"] = base["region_spread"].fillna(0.0)
    base["duplicate_of"] = base["duplicate_of"].where(base["duplicate_of"].notna(), None)


@pytest.mark.parametrize("seed", range(60))
def test_duplicate_columns_equal_the_pandas_reference(seed):
    """Every way to pay (and none), on a random subset of a random catalog (``candidates.clouds``)."""
    rng = np.random.default_rng(1000 + seed)
    full = _random_catalog(rng)
    off = full[rng.random(len(full)) < 0.7]
    res = doubt.resolve(full)
    arrays = pricebook.resolved_arrays(res, full.index)
    at = full.index.get_indexer(off.index)
    for model in (*PRICE_COLUMN, None):
        new, old = off[["offering"]].copy(), off[["offering"]].copy()
        pricebook._duplicates(new, arrays, model, at)
        _duplicates_ref(old, res, model)
        pd.testing.assert_frame_equal(new, old)


def test_group_codes_are_pandas_factorize_codes():
    """``doubt._codes`` numbers the (provider, instance, region) tuples as pandas' factorize does (first appearance),
    on the shipped catalog's normalised keys and on random keys with many repeats; one column as ``pd.factorize``."""
    import numpy as np
    import pandas as pd

    from workbook import catalog
    from workbook.cost import doubt
    off = catalog.offerings()
    norm = [doubt._norm(off[k]).to_numpy(object) for k in doubt.KEY]
    rng = np.random.default_rng(0)
    rand = [rng.choice(np.array(["a", "b", "", "c d"], dtype=object), 500) for _ in range(3)]
    for cols in (norm, norm[:2], rand, rand[:2]):
        assert np.array_equal(doubt._codes(*cols), pd.MultiIndex.from_arrays(list(cols)).factorize()[0])
    assert np.array_equal(doubt._codes(norm[0]), pd.factorize(norm[0])[0])
    assert doubt._codes(np.array([], dtype=object), np.array([], dtype=object)).shape == (0,)
