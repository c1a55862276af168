"""The tie sentence's words for one tied offer (``recommend._tie_words``)."""
from collections import namedtuple

from workbook.decision.recommend import _tie_words

Tie = namedtuple("Tie", "option score_gap gap_p10 gap_p90 p_top_leads p_top_leads_fixed_prices cause")


def test_an_offer_level_in_every_draw_is_said_to_be_level_not_leading_in_0_percent():
    words = _tie_words(Tie("b", 0.0, 0.0, 0.0, 0.0, 0.0, "model noise"))
    assert "level with the first in every draw" in words
    assert "0%" not in words


def test_an_offer_behind_at_the_point_estimate_gets_its_lead_and_band():
    words = _tie_words(Tie("b", 0.029, -0.178, 0.227, 0.595, 0.6475, "model noise"))
    assert "leads by 0.029" in words and "in only 60% of the draws" in words and "-0.178 to +0.227" in words


def test_a_zero_point_gap_with_spread_draws_is_still_a_lead_figure():
    words = _tie_words(Tie("b", 0.0, -0.196, 0.190, 0.4995, 0.0, "model noise"))
    assert "in only 50% of the draws" in words
