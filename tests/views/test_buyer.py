"""What a buyer reads first (workbook.views.buyer), the unknown-model hint (workbook.names) and the CLI's
ranking table and --set, on small hand-made summaries: the same functions feed the report header, the
CLI and the app."""
import io
import json
from contextlib import redirect_stdout

import pytest

from workbook import names
from workbook.cli import _parse_sets, main
from workbook.errors import InputError
from workbook.report.assemble import headline
from workbook.views import buyer


def _summary(ties=(), warnings=(), basis="secondary", age=200, reasons=(), runner_up_score=0.5):
    offers = [
        {"rank": 1, "offering": "x-a-1", "provider": "X", "instance": "a-1", "region": "eu-1", "accelerator": "A",
         "pricing_model": "on_demand", "usd_per_million_tokens": 0.5, "ttft_ms_at_slo_percentile": 300.0,
         "tie": bool(ties), "price_basis": basis, "price_age_days": age, "excluded_reason": None},
        {"rank": 2, "offering": "y-b-8", "provider": "Y", "instance": "b-8", "region": "us-1", "accelerator": "B",
         "pricing_model": "spot", "usd_per_million_tokens": 0.6, "ttft_ms_at_slo_percentile": 200.0,
         "tie": bool(ties), "price_basis": "catalog", "price_age_days": 10, "excluded_reason": None},
        {"rank": None, "offering": "z", "pricing_model": "spot", "excluded_reason": "latency"},
    ]
    rec = {"accelerator": "A", "offering": "x-a-1", "provider": "X", "pricing_model": "on_demand",
           "summary": "A on on-demand (X, a-1, eu-1)", "metric": "usd_per_million_tokens",
           "figures": {"usd_per_million_tokens": 0.5, "score": 0.6, "ttft_ms_at_slo_percentile": 300.0,
                       "ttft_slo_percentile": 99.0, "tpot_ms": 40.0},
           "runner_up": {"offering": "y-b-8", "pricing_model": "spot", "score": runner_up_score},
           "warnings": list(warnings), "reasons": list(reasons), "ties": list(ties)}
    return {"scenario": "t", "title": "T", "task": "inference", "generated_utc": "2026-12-01T00:00:00Z",
            "options": [{"accelerator": "A", "ttft_ms": 250.0, "tpot_ms": 40.0}], "offers": offers,
            "recommendation": rec}


TIE = {"option": "B | y-b-8 | spot", "score_gap": 0.01, "gap_p10": -0.2, "gap_p90": 0.2, "p_top_leads": 0.57}


def test_a_tie_is_said_with_the_share_of_draws_and_a_lower_scored_winner_is_explained():
    s = _summary(ties=[TIE], runner_up_score=0.7)
    text = buyer.tie_text(s)
    assert text.startswith("Tie:") and "57%" in text and "2,000" in text
    assert "runner-up scores higher (0.700 vs 0.600)" in text
    assert buyer.tie_text(_summary()).startswith("Clear lead:")
    doubt = buyer.tie_text(_summary(ties=[{**TIE, "cause": "price doubt"}]))
    assert doubt.startswith("Tie on the doubt of the prices") and "order is kept" in doubt


LEVEL = {"option": "A | x-a-1-us | on_demand", "score_gap": 0.0, "gap_p10": 0.0, "gap_p90": 0.0, "p_top_leads": 0.0}


def test_an_offer_level_in_every_draw_is_said_level_not_led_in_0_percent():
    """The same instance in another region scores the same as the first in every draw (its price doubt is
    drawn once per instance): the headline said the first "leads 6 other offers in only 0%" of the draws
    (llama-70b-pretrain's report); it now gives the share over the others and says the twin is level."""
    mixed = _summary(ties=[LEVEL, TIE])
    text = buyer.tie_text(mixed)
    assert "leads 1 other offer in only 57%" in text and "level with 1 more in every draw" in text
    assert " 0%" not in text and buyer.tie_short(mixed) == "tie (leads in 57% of draws)"
    only = _summary(ties=[LEVEL])
    assert buyer.tie_text(only).startswith("Tie: the best-scored offer is level with 1 other offer in every draw")
    assert buyer.tie_short(only) == "tie (same plan, same price)"
    assert buyer.tie_facts(only)["share"] is None and buyer.tie_facts(only)["level"] == [LEVEL["option"]]


def test_the_winners_price_says_its_basis_and_age():
    p = buyer.price_facts(_summary(), "x-a-1", "on_demand")
    assert (p["basis"], p["age_days"]) == ("secondary", 200)
    assert buyer.price_text(p).startswith("secondary note") and "undated" in buyer.price_text(p)  # no as_of given
    assert "7 months old" in buyer.price_text({**p, "as_of": "2026-05-15"})


def test_before_acting_holds_every_caveat_once():
    port = "It needs porting (PyTorch support on TPU is partial; porting cost not priced (...))"
    c = buyer.caveats(_summary(ties=[TIE], warnings=["Undated price: x"], reasons=[port]))
    assert c[0] == "Undated price: x"
    assert any(x.startswith("Secondary price") for x in c)
    assert any(x.startswith("Porting cost not priced") for x in c)
    assert any(x.startswith("Tie:") for x in c)
    # a warning that already says it is not repeated
    c2 = buyer.caveats(_summary(warnings=["Secondary price: from a note"]))
    assert sum("econdary" in x for x in c2) == 1


def test_the_ranking_has_the_buyers_columns_and_verdicts():
    df = buyer.ranking_frame(_summary(ties=[TIE]))
    assert list(df.columns) == ["rank", "offer", "pay", "price", "cost", "first token P99 (under load)", "verdict"]
    assert list(df["verdict"]) == ["winner, tied", "tied with the winner"]
    assert df["price"].iloc[0] == "secondary, 7 months old" and df["price"].iloc[1] == "catalog, 10 days old"
    assert buyer.ranking_frame(_summary())["verdict"].iloc[1] == "runner-up"


def test_a_generic_services_ranking_is_per_million_requests_and_request_latency():
    """embedding-service's CLI table said "$0.717/M tok" for a cost per million requests."""
    s = _summary()
    assert buyer.ranking_frame(s)["cost"].iloc[0] == "$0.5/M tok"
    s["recommendation"]["unit"] = "per million requests"
    df = buyer.ranking_frame(s)
    assert df["cost"].iloc[0] == "$0.5/M req" and "request latency P99 (under load)" in df.columns


def test_the_report_header_reads_price_tie_and_labelled_latency():
    h = headline(_summary(ties=[TIE]))
    assert h["price"].startswith("secondary note") and h["tie"] is True and h["tie_share"] == pytest.approx(0.57)
    assert h["confidence"].startswith("Tie:")
    assert h["time"] == "40 ms per output token, first token 300 ms at P99 under load (250 ms unloaded)"
    assert any(w.startswith("Secondary price") for w in h["warning_list"])


def test_an_unknown_model_is_matched_by_family_and_size_and_names_hf_config():
    rows = [("qwen2.5-0.5b", 4.9e8), ("mistral-7b", 7.3e9), ("llama-3-8b", 8e9), ("qwen2.5-72b", 7.2e10)]
    hint = names.suggest_model("qwen2.5-7b", rows)
    assert "mistral-7b" in hint and "llama-3-8b" in hint and "workload.hf_config" in hint
    assert "did you mean" not in hint and "qwen2.5-72b is the same family but 10x larger" in hint
    assert names.model_size_params("mixtral-8x7b") == 5.6e10 and names.model_size_params("gpt-j") is None


def test_set_reads_dotted_keys_as_yaml_values_and_refuses_a_bare_word():
    assert _parse_sets(["workload.requests_per_s=40", "candidates.clouds=[GCP, AWS]"]) == {
        "workload.requests_per_s": 40, "candidates.clouds": ["GCP", "AWS"]}
    with pytest.raises(InputError, match="KEY=VALUE"):
        _parse_sets(["requests"])


def test_estimate_with_set_changes_the_load_and_prints_the_ranking():
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["estimate", "small-model-cheap", "--set", "workload.requests_per_s=40", "--json"]) == 0
    d = json.loads(out.getvalue())
    assert d["title"].endswith("(with workload.requests_per_s=40)")
    assert "40 requests/s" in " ".join(d["recommendation"]["reasons"])
    text = io.StringIO()
    with redirect_stdout(text):
        main(["estimate", "small-model-cheap"])
    assert "Best offers (price: basis, age" in text.getvalue() and " winner" in text.getvalue()
