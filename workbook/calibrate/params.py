"""The fitted parameters as ``data/efficiency.csv``: what each parameter means, its unit and how it is
fitted (``PARAM_DOCS``), and the refit-and-write step of ``calibrate --write``."""
from __future__ import annotations

import pandas as pd

from .. import catalog, paths
from ..model.efficiency import _from_csv
from ..model.generic import STEP_OVERHEAD
from .fit import BAND_MIN_RUNS, CV_FOLDS, FREE_METRIC, GAMMA_MIN_SCALES, fit


PARAM_DOCS = {
    "matmul_ceiling": ("fraction of the measured matmul ceiling (data/mamf.csv MAMF; of the dense peak where none is measured)",
                       "fixed point with the multi-chip model: median over the family's dense training runs of "
                       "(MFU / scaling-model compute share) / width / (MAMF / peak), at most 1; gpu/tpu/asic = median "
                       "over the calibrated families of that kind (used by families without runs, times their own "
                       "MAMF: MI300X's 51%); pooled = median over families"),
    "inference_matmul_ceiling": ("fraction of the dense peak of the compute precision",
                                 "grid search on the family's inference runs (prefill and compute-bound decode); "
                                 "pooled = median of families that constrain it"),
    "prefill_matmul_ceiling": ("fraction of the dense peak of the compute precision",
                               "grid search of the prefill's ceiling alone on the family's static-batch "
                               "time-to-first-token runs, its other inference parameters fixed at their fit; a family "
                               "without such runs: fitted with its decode ceiling on all its inference runs, at least "
                               "the decode ceiling and kept where identified (_fit_chunked_prefill)"),
    "width_hidden_per_ridge": ("hidden units per FLOP/byte of ridge point",
                               "grid search (L1 of log error) over all dense training runs, at the fixed point"),
    "moe_bytes_per_flop": ("bytes per FLOP", "each MoE training run solved exactly at the fixed point, median per "
                           "platform; pooled = median of all"),
    "moe_host_s_per_layer": ("seconds per MoE layer pass", "each GPU MoE training run solved exactly at the fixed point "
                             "for the host time per MoE layer pass (model.moe.host_s), median per platform and kind"),
    "network_loss_per_doubling": ("per doubling of fast domains (step-time fraction)",
                                  f"grid search at the fixed point, only for a family whose fit runs hold one model "
                                  f"and framework at >= {GAMMA_MIN_SCALES} chip counts beyond one fast domain; none "
                                  f"(0) for every other family"),
    "generic_train_scale": ("factor on the transformer-fitted training efficiency",
                            "median over the generic (non-transformer) fit runs of observed / predicted generic MFU"),
    "generic_inference_scale": ("factor on the transformer-fitted inference efficiency",
                                "median over the generic (non-transformer) fit runs of observed / predicted samples/s"),
    STEP_OVERHEAD: ("s per generic (non-transformer) training step", "grid search (L1 of log error, 0.25 ms steps) "
                    "over the generic training fit runs, the generic_train_scale refitted at each value"),
    "matmul_ratio_int8": ("int8 GEMM fraction of the int8 peak over the BF16 GEMM fraction of the BF16 peak",
                          "each int8 training fit run on a chip without a measured int8 MAMF solved exactly "
                          "(bisection) with the other parameters at their fit; median per family and kind"),
    "matmul_ratio_fp8": ("fp8 GEMM fraction of the fp8 peak over the BF16 GEMM fraction of the BF16 peak",
                         "each fp8 training fit run on a chip without a measured fp8 MAMF solved exactly "
                         "(bisection) with the other parameters at their fit; median per family and kind"),
    "decode_memory_efficiency": ("fraction of HBM bandwidth", "grid search on the family's inference runs; pooled = "
                                 "median of families that constrain it"),
    "tp_collective_latency_s": ("s per collective latency step (2 log2 ranks per all-reduce)", "grid search on the family's tensor-parallel inference runs; "
                                "pooled = median of families that constrain it"),
}


def _doc(name: str) -> tuple[str, str]:
    if name.startswith(f"band_p10_{FREE_METRIC}") or name.startswith(f"band_p90_{FREE_METRIC}"):
        return ("observed / predicted", f"{'lower' if 'p10' in name else 'upper'} end of the split-conformal 80% "
                f"interval (order statistics floor((n+1)/10), ceil(9(n+1)/10)) of {CV_FOLDS}-fold cross-validated "
                f"log(observed/predicted) of the fit training runs searched freely, nothing of their layout pinned "
                f"(family with >= {BAND_MIN_RUNS} fit runs, else pooled; 'uncalibrated' = predictions from pooled "
                f"parameters)")
    if name.startswith("band_p"):
        return ("observed / predicted", f"{'lower' if 'p10' in name else 'upper'} end of the Student-t 80% prediction "
                f"interval of {CV_FOLDS}-fold cross-validated log(observed/predicted) over the fit runs of the metric "
                f"(family with >= {BAND_MIN_RUNS} fit runs, else pooled; 'uncalibrated' = predictions from pooled "
                f"parameters)")
    return PARAM_DOCS[name]


def parameters_frame(params: dict, prov: dict, as_of: str | None = None) -> pd.DataFrame:
    """The fitted parameters as the rows of ``data/efficiency.csv`` (schema ``catalog.SCHEMAS['efficiency']``)."""
    as_of = as_of or pd.Timestamp.today().date().isoformat()
    rows = []
    for (name, scope), v in sorted(params.items()):
        unit, method = _doc(name)
        runs = prov.get((name, scope), [])
        rows.append({"parameter": name, "scope": scope, "value": float(f"{v:.6g}"), "unit": unit, "n_runs": len(runs),
                     "runs": ";".join(runs), "method": method,
                     "source": "fitted by workbook/calibrate/fit.py on data/reference_runs.csv (split = fit; bands: cross-validated residuals of the fit runs)",
                     "as_of": as_of})
    return pd.DataFrame(rows, columns=list(catalog.SCHEMAS["efficiency"]))


def write_parameters(path=None) -> pd.DataFrame:
    """Refit and write ``data/efficiency.csv``; clears the caches so the new values are used."""
    params, prov = fit()
    df = parameters_frame(params, prov)
    df.to_csv(path or paths.DATA_DIR / "efficiency.csv", index=False)
    catalog.load.cache_clear()
    _from_csv.cache_clear()
    return df
