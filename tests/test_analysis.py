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


def test_analyse_computes_every_table_once_and_the_summary_is_strict_json():
    a = analysis.analyse(load_scenario("small-model-cheap"), n_draws=500)
    assert {"perf", "priced", "mc", "recommendation"} <= set(vars(a))
    d = analysis.summary_json(a)
    assert d["recommendation"]["accelerator"] in set(a.perf["accelerator"])
    json.dumps(d, allow_nan=False)


def test_analyse_composes_fit_prices_and_exclusions():
    a = analysis.analyse(load_scenario("llama2-7b-pretrain"), n_draws=200)
    assert set(a.fit["accelerator"]) == set(a.perf["accelerator"])
    assert {"excluded_reason", "excluded_codes"} <= set(a.priced)
    passing = a.priced["excluded_reason"].isna()
    assert (a.priced.loc[passing, "excluded_codes"].map(len) == 0).all()
    assert (a.priced.loc[~passing, "excluded_codes"].map(len) > 0).all()
