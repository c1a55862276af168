"""Serving decisions quote the TTFT tail at the SLO's percentile and a hosted API at the user's quote
as a reference with its break-even request rate (workbook.decision.recommend)."""
import pytest

from workbook import analysis
from workbook.errors import InputError
from workbook.scenario import load_scenario, parse_scenario

from pricing_helpers import LIVE, decide, offering, offers, serve_perf

API = {"hosted_api_usd_per_million_input_tokens": 3.0, "hosted_api_usd_per_million_output_tokens": 15.0}


def _live(percentile=95.0, pricing=None):
    return parse_scenario({**LIVE, "workload": {**LIVE["workload"], "ttft_slo_percentile": percentile},
                           "pricing": {**LIVE["pricing"], "models": ["on_demand"], **(pricing or {})}})


def _perf():
    perf = serve_perf()
    perf["ttft_ms_p50"], perf["ttft_ms_p99"], perf["ttft_ms_at_slo_percentile"] = 120.0, 300.0, 250.0
    return perf


def test_the_latency_reason_quotes_ttft_at_the_slo_percentile_under_load():
    rec, _ = decide(_live(95.0), _perf(), offers(offering("o1", od=80.0)))
    line = next(r for r in rec.reasons if "TTFT" in r)
    assert "TTFT 250 ms at P95 under 10 requests/s (target 500; 100 ms unloaded)" in line
    assert rec.figures["ttft_ms_at_slo_percentile"] == 250.0 and rec.figures["ttft_slo_percentile"] == 95.0
    assert rec.figures["tpot_ms"] == 20.0 and rec.figures["tpot_slo_ms"] == 50.0


def test_the_shipped_realtime_chat_decision_quotes_its_p99_ttft():
    s = load_scenario("chat-70b-realtime")
    a = analysis.analyse(s, n_draws=2000)
    rec = a.recommendation
    p99 = float(a.perf.loc[a.perf["accelerator"] == rec.accelerator, "ttft_ms_p99"].iloc[0])
    assert rec.figures["ttft_ms_at_slo_percentile"] == pytest.approx(p99)
    assert f"TTFT {p99:.0f} ms at P99 under 20 requests/s" in " ".join(rec.reasons)
    assert p99 <= s.workload.ttft_slo_ms


def test_a_hosted_api_quote_is_a_reference_with_its_breakeven_rate():
    s = _live(pricing=API)
    rec, priced = decide(s, _perf(), offers(offering("o1", od=80.0)))
    win = priced[(priced["offering"] == rec.offering) & (priced["pricing_model"] == rec.pricing_model)].iloc[0]
    # one request: 1,000 x $3/M + 100 x $15/M = $0.0045; per million output tokens: $45
    assert rec.figures["hosted_api_usd_per_million_output_tokens"] == pytest.approx(45.0)
    # 10 requests/s around the clock: 10 x 2,628,000 s x $0.0045 = $118,260 a month
    assert rec.figures["hosted_api_usd_per_month"] == pytest.approx(118_260.0)
    be = float(win["usd_per_month"]) / (2_628_000 * 0.0045)
    assert rec.figures["hosted_api_breakeven_requests_per_s"] == pytest.approx(be)
    line = next(r for r in rec.reasons if r.startswith("Reference, not an offer"))
    assert "$45.00 per million output tokens" in line and f"{be:.3g} requests/s" in line
    # never ranked as an option
    assert not rec.ranking.astype(str).apply(lambda c: c.str.contains("hosted", case=False)).any().any()


def test_without_a_quote_there_is_no_hosted_api_reference():
    rec, _ = decide(_live(), _perf(), offers(offering("o1", od=80.0)))
    assert not any(k.startswith("hosted_api") for k in rec.figures)
    assert not any("hosted API" in r for r in rec.reasons)


def test_half_a_quote_is_refused_when_the_scenario_is_read_naming_the_missing_key():
    with pytest.raises(InputError, match="pricing: hosted_api_usd_per_million_input_tokens: expected both prices"):
        _live(pricing={"hosted_api_usd_per_million_output_tokens": 10.0})
    with pytest.raises(InputError, match="pricing: hosted_api_usd_per_million_output_tokens: expected both prices"):
        _live(pricing={"hosted_api_usd_per_million_input_tokens": 3.0})
