"""The decision: hard constraints (``rules``), a transparent weighted ranking (``rank``), the
recommendation with its reasons (``recommend``), and the evidence: the assumptions ledger and the
public claims (``evidence``). ``decision.rank`` and ``decision.recommend`` are the functions (the
modules of the same names: ``from workbook.decision.rank import ...``)."""
from . import evidence, rules
from .evidence import FAILS, HOLDS, NA, STALE_DAYS, assumptions, check_claims, claims
from .rank import CRITERIA, pareto_front, rank, ranking_table
from .offers import OFFER_KEYS, energy_summary, offers_summary, offers_table
from .recommend import Recommendation, recommend
from .rules import (CONSTRAINTS, SUPPORT_SCORE, Exclusion, apply_constraints, exclusions, framework_fit,
                    needed_capabilities, supply_scores)

__all__ = ["evidence", "rules", "rank", "recommend", "FAILS", "HOLDS", "NA", "STALE_DAYS", "assumptions",
           "check_claims", "claims", "CRITERIA", "pareto_front", "ranking_table", "Recommendation", "CONSTRAINTS",
           "SUPPORT_SCORE", "Exclusion", "apply_constraints", "exclusions", "framework_fit", "needed_capabilities",
           "supply_scores", "OFFER_KEYS", "energy_summary", "offers_summary", "offers_table"]
