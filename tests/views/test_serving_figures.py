"""Key figures of a serving recommendation: TTFT at the SLO percentile, TPOT, the hosted API reference."""
from workbook.views import text


def test_key_figures_show_the_ttft_tail_and_tpot_with_their_targets():
    figs = dict((k, v) for v, k in text.key_figures(
        {"usd_per_month": 1000.0, "ttft_ms_at_slo_percentile": 398.9, "ttft_slo_percentile": 99.0,
         "ttft_slo_ms": 500.0, "tpot_ms": 49.64, "tpot_slo_ms": 50.0}))
    assert figs["to first token at P99 under load (target 500 ms)"] == "399 ms"
    assert figs["per output token (target 50 ms)"] == "49.6 ms"


def test_without_a_request_rate_the_unloaded_ttft_is_shown():
    figs = [k for _v, k in text.key_figures({"ttft_ms": 120.0, "tpot_ms": 20.0})]
    assert "to first token" in figs and not any("P99" in k for k in figs)


def test_key_figures_show_the_hosted_api_reference():
    figs = dict((k, v) for v, k in text.key_figures(
        {"hosted_api_usd_per_million_output_tokens": 6.0, "hosted_api_breakeven_requests_per_s": 2.98394}))
    assert figs["per million output tokens on a hosted API at your quote (reference)"] == "$6.00"
    assert figs["break-even with the hosted API (self-hosting costs less above it)"] == "2.98 requests/s"
