"""The app's comparison tab and decision card show TTFT under load (workbook.app.panels), without a browser."""
import re

from workbook import analysis, load_scenario
from workbook.app import panels
from workbook.views import text


def test_comparison_tab_shows_ttft_median_and_p99_under_load():
    s = load_scenario("chat-70b-realtime")
    a = analysis.analyse(s, n_draws=500)
    html = panels.comparison(s, a, {})
    for label in ("TTFT under load, median (ms)", "TTFT under load, P99 (ms)"):
        assert label in html
    p99 = a.perf.loc[a.perf["accelerator"] == a.recommendation.accelerator, "ttft_ms_p99"].iloc[0]
    card = text.recommendation_html(a.recommendation)
    assert re.search(rf"<b>{p99:,.0f} ms</b><span>to first token at P99 under load \(target 500 ms\)", card)
