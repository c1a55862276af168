"""The schema of every catalog in ``data/``: column name -> ``Col`` (type, required, range). Values are
in SI base units or the unit named in the column (``_bytes``, ``_bytes_per_s``, ``_flops_per_s``,
``_usd_per_hour``). ``data/README.md`` is the human dictionary of the same columns; ``catalog`` loads
and validates the files against these schemas.
"""
from __future__ import annotations

from dataclasses import dataclass

from .terms import PLATFORMS, REQUEST_LENGTHS


@dataclass(frozen=True)
class Col:
    kind: str = "str"  # str | float | int | bool | date
    required: bool = False
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None


_SRC = {"source": Col("str", True), "as_of": Col("date", True)}

SCHEMAS: dict[str, dict[str, Col]] = {
    "accelerators": {
        "accelerator": Col("str", True),
        "aliases": Col(),
        "vendor": Col("str", True),
        "kind": Col("str", True, choices=("gpu", "tpu", "asic")),
        "family": Col("str", True),
        "platform": Col("str", True, choices=PLATFORMS),
        "memory_bytes": Col("float", True, 1e9, 1e12),
        "memory_bytes_per_s": Col("float", True, 1e11, 2e13),
        "peak_fp32_flops_per_s": Col("float", False, 1e12, 1e16),
        "peak_bf16_flops_per_s": Col("float", False, 1e12, 1e16),
        "peak_fp16_flops_per_s": Col("float", False, 1e12, 1e16),
        "peak_fp8_flops_per_s": Col("float", False, 1e12, 2e16),
        "peak_int8_flops_per_s": Col("float", False, 1e12, 2e16),
        "peak_fp4_flops_per_s": Col("float", False, 1e12, 4e16),  # dense FP4 tensor peak (NVFP4/MXFP4); blank = no FP4 cores
        "tdp_w": Col("float", False, 10, 3000),
        "chips_per_node": Col("int", True, 1, 256),
        "intra_node_link": Col(),
        "intra_node_bytes_per_s": Col("float", False, 1e9, 1e13),
        "intra_node_bw_quoted": Col(),
        "fast_domain_chips": Col("int", False, 1, 100000),
        "torus_dims": Col("int", False, 0, 3),
        "inter_node_bytes_per_s": Col("float", False, 1e8, 1e13),
        "max_cluster_chips": Col("int", False, 1, 1000000),
        "release_year": Col("int", False, 2010, 2030),
        **_SRC,
        "notes": Col(),
    },
    "offerings": {
        "offering": Col("str", True),
        "provider": Col("str", True),
        "provider_kind": Col("str", True, choices=("hyperscaler", "gpu-cloud", "marketplace", "dedicated")),
        "region": Col("str", True),
        "instance": Col("str", True),
        "accelerator": Col("str", True),
        "chips_per_instance": Col("int", True, 1, 10000),
        "on_demand_usd_per_hour": Col("float", False, 0.01, 5000),
        "spot_usd_per_hour": Col("float", False, 0.01, 5000),
        "commit_1y_usd_per_hour": Col("float", False, 0.01, 5000),
        "commit_3y_usd_per_hour": Col("float", False, 0.01, 5000),
        "monthly_usd": Col("float", False, 1, 1e7),
        "monthly_min_term_months": Col("float", False, 1, 120),  # the source's least term for monthly_usd
        "other_usd_per_hour": Col("float", False, 0.01, 5000),
        "other_price_model": Col(),
        **_SRC,
        "price_as_of": Col("date"),  # when the price was valid (as_of: when it was read); blank = unknown, stale
        # where the price comes from: a maintained catalog, the provider's own page, a transcription of one, a secondary note
        "price_basis": Col("str", True, choices=("catalog", "provider_page", "transcription", "secondary")),
        "shape_confirmed": Col("bool", False),  # false: no source confirms the provider sells this many chips per instance
        "vcpus": Col("int", False, 1, 10000),
        "host_memory_bytes": Col("float", False, 1e9, 1e14),
        "local_nvme_bytes": Col("float", False, 1e9, 1e15),
        "inter_node_bytes_per_s": Col("float", False, 1e8, 1e13),  # per instance, not per chip
        "fabric": Col("str", False, choices=("efa", "infiniband", "roce", "dcn", "none")),
        "notes": Col(),
    },
    "models": {
        "model": Col("str", True),
        "aliases": Col(),
        "display_name": Col("str", True),
        "params_published": Col("float", False, 1e6, 1e13),
        "layers": Col("int", True, 1, 1000),
        "hidden": Col("int", True, 64, 100000),
        "ffn_hidden": Col("int", True, 64, 1000000),
        "heads": Col("int", True, 1, 1024),
        "kv_heads": Col("int", True, 1, 1024),
        "head_dim": Col("int", True, 8, 1024),
        "vocab": Col("int", True, 100, 2000000),
        "experts": Col("int", True, 1, 4096),
        "experts_per_token": Col("int", True, 1, 256),
        "shared_experts": Col("int", False, 0, 64),
        "moe_ffn_hidden": Col("int", False, 64, 1000000),
        "dense_layers": Col("int", False, 0, 1000),
        "gated_mlp": Col("bool", True),
        "tied_embeddings": Col("bool", False),
        "kv_cache_dim": Col("int", False, 1, 1000000),
        "q_lora_rank": Col("int", False, 1, 100000),
        "kv_lora_rank": Col("int", False, 1, 100000),
        "qk_rope_head_dim": Col("int", False, 1, 1024),
        "v_head_dim": Col("int", False, 1, 1024),
        "max_seq_len": Col("int", False, 128, 10000000),
        **_SRC,
        "notes": Col(),
    },
    "software": {
        "platform": Col("str", True, choices=PLATFORMS),
        "capability": Col("str", True),
        "support": Col("str", True, choices=("native", "supported", "partial", "none")),
        **_SRC,
        "notes": Col(),
    },
    # Public claims the workbook tests per scenario (decision/evidence.py; data/README.md section claims).
    "claims": {
        "claim_id": Col("str", True),
        "claim": Col("str", True),
        "check": Col("str", True, choices=("peak_bf16_flops_per_s", "cost_per_token_ratio", "spot_discount",
                                           "commit_3y_saving", "mixed_saving", "checkpointing_activation_cut",
                                           "fast_domain_chips", "chips_per_node", "matmul_fraction_of_peak",
                                           "intra_node_bytes_per_s", "instance_accelerator",
                                           "offering_inter_node_bytes_per_s", "offering_inter_node_bytes_per_s_per_chip",
                                           "checkpoint_write_s", "restart_s", "pue", "peak_ratio", "tpot_ms",
                                           "not_modelled")),
        "subject": Col(),
        "baseline": Col(),
        "claimed_low": Col("float", False, 0, 1e18),
        "claimed_high": Col("float", False, 0, 1e18),
        "unit": Col("str", True),
        **_SRC,
        "notes": Col(),
    },
    # Systems to buy for the purchase option (data/README.md section hardware).
    "hardware": {
        "system": Col("str", True),
        "accelerator": Col("str", True),
        "chips_per_system": Col("int", True, 1, 10000),
        "purchase_usd": Col("float", False, 100, 1e9),
        "system_power_w": Col("float", False, 10, 1e6),
        "hosting_usd_per_month": Col("float", False, 0, 1e7),
        **_SRC,
        "notes": Col(),
    },
    # Published training and inference runs for calibration (data/README.md section reference_runs).
    "reference_runs": {
        "run": Col("str", True),
        "kind": Col("str", True, choices=("training", "inference")),
        "model": Col(),
        "architecture": Col(),
        "accelerator": Col("str", True),
        "chips": Col("int", False, 1, 100000),
        "tp": Col("int", False, 1, 1024),
        "parallelism": Col(),
        "global_batch_seqs": Col("int", False, 1, 100000000),
        "framework": Col(),
        "precision": Col("str", True, choices=("bf16", "fp16", "fp8", "fp4", "int8")),
        "weight_precision": Col("str", False, choices=("bf16", "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4")),
        "kv_precision": Col("str", False, choices=("bf16", "fp16", "fp8", "int8", "nvfp4")),
        "seq_len": Col("int", False, 1, 10000000),
        "train_tokens": Col("float", False, 1e6, 1e15),
        "input_tokens": Col("int", False, 1, 10000000),
        "output_tokens": Col("int", False, 1, 10000000),
        "batch": Col("int", False, 1, 1000000),
        "batching": Col("str", False, choices=("static", "continuous")),
        "max_batch": Col("int", False, 1, 1000000),
        "published_value": Col("float", True, 0, 1e9),
        "published_metric": Col("str", True),
        "basis": Col("str", True, choices=("mfu_palm", "tokens_per_s_per_chip", "seqs_per_s_total", "gpu_hours_total",
                                           "hw_tflops_per_chip_recompute", "output_tokens_per_s_total", "tpot_ms",
                                           "ttft_ms", "time_to_train_min", "samples_per_s", "samples_per_s_total", "other")),
        "metric": Col("str", False, choices=("mfu", "output_tokens_per_s_per_chip", "tpot_ms", "ttft_ms", "generic_mfu",
                                             "generic_samples_per_s_per_chip")),
        "value": Col("float", False, 0, 1e9),
        "split": Col("str", True, choices=("fit", "holdout", "excluded")),
        "conversion": Col(),
        **_SRC,
        "notes": Col(),
        "request_lengths": Col("str", False, choices=REQUEST_LENGTHS),  # model.lengths.DATASETS
        "requests": Col("int", False, 1, 100000000),
    },
    # Efficiency parameters fitted on reference_runs by `python -m workbook calibrate --write`.
    "efficiency": {
        "parameter": Col("str", True),
        "scope": Col("str", True),
        "value": Col("float", True, -1e3, 1e3),
        "unit": Col("str", True),
        "n_runs": Col("int", True, 0, 100000),
        "runs": Col(),
        "method": Col("str", True),
        **_SRC,
    },
    # Lead times before capacity runs (quota and capacity waits): workbook.cost.reliability.start_days.
    # Only what a source states; a provider and chip not listed start at 0 days ("none published").
    "lead_times": {
        "provider": Col("str", True),
        "accelerator": Col("str", True),  # an accelerator id or a family of data/accelerators.csv
        "min_instances": Col("int", True, 1, 100000),  # the wait applies from this many instances or slices
        "days_low": Col("float", True, 0, 1000),
        "days_high": Col("float", True, 0, 1000),
        **_SRC,
        "notes": Col(),
    },
    # Engineer-weeks to move a workload's framework to a platform (data/README.md section effort):
    # decision.rules.framework_fit prices porting from it; a blank engineer_weeks = not published.
    "effort": {
        "framework": Col("str", True, choices=("pytorch", "jax", "tensorflow")),
        "platform": Col("str", True, choices=PLATFORMS),
        "custom_cuda_kernels": Col("bool", True),
        "task": Col("str", True, choices=("training", "inference", "any")),
        "engineer_weeks": Col("float", False, 0, 10000),
        "engineer_weeks_low": Col("float", False, 0, 10000),
        "engineer_weeks_high": Col("float", False, 0, 10000),
        "basis": Col("str", False, choices=("measured", "claim", "illustration", "default")),
        **_SRC,
        "notes": Col(),
    },
    # Where each offering's region is (data/README.md section regions): constraints.data_residency.
    "regions": {
        "provider": Col("str", True),
        "region": Col("str", True),
        "location": Col(),
        "country": Col(),  # ISO 3166-1 alpha-2; blank = not published
        "eu_member": Col("bool", False),
        "latency_metro": Col(),  # a metro code of latency.csv; blank = none measured near the region
        **_SRC,
        "notes": Col(),
    },
    # Round trips between metros (data/README.md section latency): workload.user_locations, cost.location.
    "latency": {"from_metro": Col("str", True), "to_metro": Col("str", True), "from_name": Col(), "to_name": Col(),
                "rtt_ms": Col("float", True, 0, 1e4), **_SRC, "notes": Col()},
    # Interconnect options per accelerator (fast domain, torus slice shapes, latencies): workbook.comm.
    "topology": {
        "accelerator": Col("str", True),
        "domain": Col("str", True),
        "default": Col("bool", True),
        "fabric": Col("str", True, choices=("switch", "mesh", "torus", "pcie")),
        "domain_chips": Col("int", True, 1, 100000),
        "slice_shapes": Col(),
        "wraparound_multiple": Col("int", False, 1, 64),
        "axis_bytes_per_s": Col(),
        "base_latency_s": Col("float", False, 0, 1e-2),
        "hop_latency_s": Col("float", False, 0, 1e-2),
        "net_latency_s": Col("float", False, 0, 1e-2),
        "ll_base_latency_s": Col("float", False, 0, 1e-2),
        "ll_hop_latency_s": Col("float", False, 0, 1e-2),
        "ll_net_latency_s": Col("float", False, 0, 1e-2),
        "ll_bandwidth_fraction": Col("float", False, 0.01, 1),
        **_SRC,
        "notes": Col(),
    },
}
