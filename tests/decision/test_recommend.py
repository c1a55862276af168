"""The recommendation (workbook.decision.recommend): reasons with numbers, the runner-up, JSON, speed."""
import json

import numpy as np
import pandas as pd

from workbook.views import text

from workbook import analysis, catalog, cost, decision
from workbook.scenario import load_scenario, parse_scenario, with_overrides

from pricing_helpers import SERVE, decide, offering, offers, price, scenario, serve_perf, train_perf


def test_nothing_feasible_gives_no_recommendation_and_says_why():
    rec, _ = decide(scenario(constraints={"deadline_days": 1}))
    assert rec.accelerator is None
    assert "deadline" in rec.reasons[0]


def test_reasons_are_sentences_with_numbers():
    rec, _ = decide(scenario())
    assert len(rec.reasons) >= 4
    assert all(r.endswith(".") for r in rec.reasons)
    assert any("$" in r for r in rec.reasons)
    assert any("Monte Carlo" in r for r in rec.reasons)


def test_recommendation_is_json_ready_and_renders_as_a_table():
    rec, _ = decide(scenario())
    d = rec.as_dict()
    json.dumps(d)
    assert d["accelerator"] == rec.accelerator and d["reasons"] == rec.reasons
    summary = text.recommendation_table(rec)
    assert list(summary.columns) == ["", "detail"] and len(summary) >= 3
    assert "Recommendation" in text.recommendation_markdown(rec)


def test_recommend_over_the_whole_catalog_names_a_priced_winner():
    # its speed (< 1 s) is a benchmark figure (benchmarks/bench_montecarlo.py), not a timed test that flakes under load
    s = parse_scenario(SERVE)
    perf = pd.concat([serve_perf(), serve_perf(acc="A100-SXM4-80GB", tpot=30.0)], ignore_index=True)
    priced = price(s, perf)
    mc = cost.monte_carlo(s, priced)
    rec = decision.recommend(s, perf, priced, mc)
    assert len(catalog.offerings()) and len(priced) > 100
    assert rec.accelerator is not None and rec.pricing_model is not None and rec.reasons
    assert rec.ranking.iloc[0]["option"] in set(priced["option"])


def test_a_stale_price_in_the_recommendation_is_said_in_the_reasons():
    # A decision that rests on a price read long ago must say so where the reader looks first, not
    # only in the ledger (a hand-made offering dated 2025-05-31, the date of the pre-June-2025 AWS snapshot).
    s = scenario()
    stale = offers(offering("h", od=100.0, spot=np.nan, c1=np.nan, c3=np.nan, as_of="2025-05-31"))
    rec, _ = decide(s, perf=train_perf(), offs=stale)
    assert rec.offering == "h"
    assert any("Check its price before committing" in r and "2025-05-31" in r for r in rec.reasons)


def test_a_superseded_price_row_is_never_recommended():
    """Issue 11: in us-east-1, AWS H100 spot is priced only by the pre-June-2025 snapshot's -superseded row
    (the newer skypilot-catalog v8 snapshot's us-east-1 p5 row is kept out by the dated on-demand row; its
    spot rows are in us-east-2/us-west-2); it is listed among the offers with its reason but is not
    recommended, even as the only priced option."""
    s = with_overrides(load_scenario("chat-70b-realtime"),
                       **{"candidates.accelerators": ["H100-SXM5-80GB"], "candidates.clouds": ["AWS"],
                          "candidates.regions": ["us-east-1"], "pricing.models": ["spot"]})
    a = analysis.analyse(s, n_draws=500)
    sup = a.priced[a.priced["offering"].str.endswith("-superseded") & a.priced["usd_per_instance_hour"].notna()]
    assert len(sup) and all("superseded" in c for c in sup["excluded_codes"])
    assert a.recommendation.offering is None
    listed = a.offers[a.offers["offering"].isin(sup["offering"])]
    assert len(listed) == len(sup) and listed["rank"].isna().all()
    assert listed["excluded_reason"].str.contains("superseded").all()


def test_realtime_chat_recommendation_is_feasible_and_explains_spot_spares():
    """The shipped chat-70b-realtime scenario, at its default target and at 99.9%: whatever wins
    passes every hard constraint, and a spot winner says how many spares keep the latency targets."""
    base = load_scenario("chat-70b-realtime")
    for s in (base, with_overrides(base, **{"pricing.spot_availability_target": 0.999})):
        a = analysis.analyse(s, n_draws=2000)
        perf_df, priced, mc = a.perf, a.priced, a.mc
        rec = decision.recommend(s, perf_df, priced, mc, n_draws=2000)
        win = priced[(priced["accelerator"] == rec.accelerator) & (priced["offering"] == rec.offering)
                     & (priced["pricing_model"] == rec.pricing_model)].iloc[0]
        assert pd.isna(win["excluded_reason"])
        if rec.pricing_model == "spot":
            k = int(win["spare_instances"])
            assert f"with {k} spare instance" in " ".join(rec.reasons)
            assert "availability target" in " ".join(rec.reasons)
        ledger = decision.assumptions(s, perf_df, priced)
        assert (ledger["item"] == "pricing.spot_availability_target").any()


def _excluded_groups_by_pandas(ex: pd.DataFrame) -> pd.DataFrame:
    """``rules.excluded_groups`` as it was: a pandas groupby (verbatim, the reference)."""
    return (ex.assign(offering=ex["offering"].fillna("-"))
            .groupby(["accelerator", "pricing_model", "kinds"], sort=False)
            .agg(offerings=("offering", "nunique"), constraint=("excluded_reason", "first")).reset_index())


def test_excluded_groups_equal_the_pandas_groupby(analysed):
    """The excluded table's groups made in one pass over the rows equal the groupby they replace (every column,
    dtype and order) on every shipped scenario's excluded rows, and on copies with missing offerings, reasons
    and keys and shuffled rows."""
    import importlib
    rules_mod = importlib.import_module("workbook.decision.rules")
    from workbook.scenario import scenario_names
    rng = np.random.default_rng(11)
    for name in scenario_names():
        priced = analysed(name, n_draws=200).priced
        ex = priced[priced["excluded_reason"].notna()][["accelerator", "pricing_model", "offering", "excluded_reason",
                                                         "excluded_codes"]].copy()
        ex["kinds"] = ex["excluded_codes"].map(", ".join)
        variants = [ex, ex.sample(frac=1.0, random_state=3)]
        if len(ex) > 4:
            odd = ex.copy()
            at = rng.choice(len(odd), size=max(1, len(odd) // 5), replace=False)
            odd.iloc[at[: len(at) // 2 + 1], odd.columns.get_loc("offering")] = None
            odd.iloc[at[len(at) // 2:], odd.columns.get_loc("excluded_reason")] = None
            odd.iloc[at[:1], odd.columns.get_loc("pricing_model")] = None
            variants.append(odd)
        for v in variants:
            pd.testing.assert_frame_equal(rules_mod.excluded_groups(v), _excluded_groups_by_pandas(v), check_exact=True)
