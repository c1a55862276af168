"""Money: billing formulas (``rates``), the bill of every option (``bill``), its uncertainty
(``uncertainty``). Nothing here imports the performance model or the decision: the performance
table and the porting cost per accelerator are inputs."""
from . import bill, energy, hosting, location, pricebook, rates, reliability, uncertainty
from .bill import is_latency_bound, price_options
from .pricebook import offer_prices, requested_models
from .breakeven import breakeven, breakeven_curves, max_interruptions_per_hour
from .rates import (Z90, breakeven_interruptions_spot, breakeven_interruptions_spot_spares,
                    breakeven_months_commit, breakeven_months_purchase, breakeven_utilization_commit,
                    energy_usd_per_hour, lognormal_from_band, poisson_sf, reserved_factor, spare_instances,
                    spot_goodput_breakeven, spot_overhead_factor, spot_serving_factor, spot_spares_factor)
from .uncertainty import mc_draws, mc_draws_both, mc_histogram, monte_carlo, tornado

__all__ = ["bill", "energy", "hosting", "location", "pricebook", "rates", "reliability", "uncertainty", "breakeven", "breakeven_curves", "is_latency_bound",
           "max_interruptions_per_hour", "offer_prices", "price_options", "requested_models", "Z90",
           "breakeven_interruptions_spot", "breakeven_interruptions_spot_spares", "breakeven_months_commit",
           "breakeven_months_purchase", "breakeven_utilization_commit", "energy_usd_per_hour", "lognormal_from_band",
           "poisson_sf", "reserved_factor", "spare_instances", "spot_goodput_breakeven", "spot_overhead_factor",
           "spot_serving_factor", "spot_spares_factor", "mc_draws", "mc_draws_both", "mc_histogram", "monte_carlo", "tornado"]
