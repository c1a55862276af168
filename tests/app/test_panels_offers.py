"""The app's cost tab shows the offers table (workbook.app.panels.offers), without a browser."""
from workbook import analysis, load_scenario
from workbook.app import panels


def test_cost_tab_lists_every_offer_with_goodput_deadline_odds_and_contract():
    s = load_scenario("llama-70b-pretrain")
    a = analysis.analyse(s, n_draws=500)
    html = panels.offers(s, a)
    assert "Every offer, ranked" in html
    for label in ("p meets deadline", "goodput", "contract usd", "start days", "excluded reason"):
        assert f">{label}<" in html
    assert a.recommendation.offering in html
