"""The one pipeline: ``analysis.analyse`` and the JSON it gives to the CLI and the reports."""
import json

import numpy as np
import pandas as pd

from workbook import analysis
from workbook.scenario import load_scenario


def test_summary_json_is_strict_json_even_with_numpy_and_nan():
    data = analysis.jsonable({"a": np.float64("nan"), "b": np.int64(3), "c": [np.float32(1.5)], "d": float("inf"),
                              "e": pd.NA})
    assert json.loads(json.dumps(data, allow_nan=False)) == {"a": None, "b": 3, "c": [1.5], "d": None, "e": None}


def test_analyse_computes_every_table_once_and_the_summary_is_strict_json(analysed):
    a = analysed("small-model-cheap", n_draws=500)
    assert {"perf", "priced", "mc", "recommendation"} <= set(vars(a))
    d = analysis.summary_json(a)
    assert d["recommendation"]["accelerator"] in set(a.perf["accelerator"])
    json.dumps(d, allow_nan=False)


def test_analyse_composes_fit_prices_and_exclusions(analysed):
    a = analysed("llama2-7b-pretrain", n_draws=200)
    assert set(a.fit["accelerator"]) == set(a.perf["accelerator"])
    assert {"excluded_reason", "excluded_codes"} <= set(a.priced)
    passing = a.priced["excluded_reason"].isna()
    assert (a.priced.loc[passing, "excluded_codes"].map(len) == 0).all()
    assert (a.priced.loc[~passing, "excluded_codes"].map(len) > 0).all()


def test_when_nothing_fits_the_nearest_changes_name_another_precision():
    """Llama 3.1 70B in bf16 (141 GB of weights) cannot be served on one 80 GB H100: the nearest
    changes name both more chips and the first lower precision with which one chip passes (int4:
    fp8/int8 weights, 70.6 GB, leave no room under the 10% headroom for the KV cache of the load)."""
    from workbook.scenario import parse_scenario

    s = parse_scenario({"name": "t", "workload": {"task": "inference", "model": "llama-3.1-70b", "precision": "bf16",
                                                 "input_tokens": 1024, "output_tokens": 256, "requests_per_s": 1},
                        "candidates": {"accelerators": ["H100-SXM5-80GB"]}, "constraints": {"max_chips": 1}})
    a = analysis.analyse(s, n_draws=500)
    assert a.recommendation.accelerator is None
    changes = [c["changes"] for c in a.recommendation.nearest_changes]
    assert {"workload.precision": {"from": "bf16", "to": "int4"}} in changes
    assert any("constraints.max_chips" in c for c in changes)
    assert any("workload.precision from bf16 to int4" in f for f in a.recommendation.flip_conditions)


def test_records_are_jsonable_to_dict_for_every_column_kind():
    # records converts numeric and string columns a column at a time: the same dicts as the row-by-row path
    df = pd.DataFrame({"f": [1.5, np.nan, np.inf], "i": [1, 2, 3], "b": [True, False, True],
                       "s": pd.array(["a", None, "c"], dtype="str"), "S": pd.array(["x", None, "z"], dtype="string"),
                       "o": [("a",), None, [1, np.nan]], "I": pd.array([1, None, 3], dtype="Int64")})
    out = analysis.records(df)
    assert out == [analysis.jsonable(r) for r in df.to_dict("records")]
    assert out[1]["s"] is None and out[1]["S"] is None and out[0]["s"] == "a"


def test_records_of_object_and_extension_columns_are_the_row_by_row_json():
    # the columns that are neither numpy numbers nor strings are converted a column at a time too: the same
    # JSON, types included (an int stays an int), as jsonable of to_dict's rows
    df = pd.DataFrame({"B": pd.array([True, None, False], dtype="boolean"), "F": pd.array([0.5, None, 2.0], dtype="Float64"),
                       "I": pd.array([7, None, -1], dtype="Int64"),
                       "o": [np.int64(3), np.float64("nan"), np.bool_(True)], "d": [{"k": np.int64(1)}, None, {"k": [np.nan]}],
                       "t": pd.to_datetime(["2026-01-02", None, "2026-12-02"]), "c": pd.Categorical(["x", "y", None]),
                       "m": ["a", 1, 2.5]})
    out = analysis.records(df)
    assert json.dumps(out) == json.dumps([analysis.jsonable(r) for r in df.to_dict("records")])
    assert out[0]["I"] == 7 and type(out[0]["I"]) is int and out[1]["B"] is None and out[0]["o"] == 3


def _option_costs_by_groupby(priced: pd.DataFrame, accelerator: str) -> dict:
    """The per-accelerator filter and group-by that ``analysis.option_costs`` replaced (reference below)."""
    rows = priced[priced["accelerator"] == accelerator]
    if "excluded_reason" in rows:
        rows = rows[rows["excluded_reason"].isna()]
    if rows.empty:
        return {}
    key = "cost_usd" if "cost_usd" in rows and rows["cost_usd"].notna().any() else "usd_per_million_tokens"
    out = {}
    for pm, grp in rows.groupby("pricing_model", sort=False):
        grp = grp.dropna(subset=[key])
        if grp.empty:
            continue
        best = grp.loc[grp[key].idxmin()]
        entry = {"offering": best.get("offering"), "provider": best.get("provider")}
        entry.update({k: analysis.jsonable(best[k]) for k in analysis._ENTRY_KEYS if k in best.index})
        if pm == "capacity_block" and "block_days" in best.index:
            entry["block_days"] = analysis.jsonable(best["block_days"])
        out[pm] = entry
    return out


def test_option_costs_in_one_pass_equal_the_group_by_per_accelerator(analysed):
    rng = np.random.default_rng(30)
    for name in ("llama2-7b-pretrain", "chat-70b-realtime"):
        priced = analysed(name, n_draws=200).priced
        # ties and missing figures too: some costs rounded to a few values, some blanked, some pricing models missing
        shaken = priced.copy()
        for col in ("cost_usd", "usd_per_million_tokens"):
            if col in shaken and np.nanmax(shaken[col].to_numpy(dtype=float), initial=0.0) > 0:
                v = shaken[col].to_numpy(dtype=float).copy()
                v = np.where(rng.random(len(v)) < 0.5, np.round(v, -int(np.log10(np.nanmax(v))) + 1), v)
                v[rng.random(len(v)) < 0.1] = np.nan
                shaken[col] = v
        shaken.loc[rng.random(len(shaken)) < 0.05, "pricing_model"] = None
        for frame in (priced, shaken):
            fast = analysis.option_costs(frame)
            for acc in frame["accelerator"].unique():
                ref = _option_costs_by_groupby(frame, acc)
                got = fast.get(acc, {})
                assert json.dumps(analysis.jsonable(got)) == json.dumps(analysis.jsonable(ref))
                assert list(got) == list(ref) and all(list(got[k]) == list(ref[k]) for k in ref)
