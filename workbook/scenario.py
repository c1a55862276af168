"""The scenario file: one YAML document that describes a workload and the decision's constraints.

One pydantic model validates it for the CLI, the notebooks, the app and the batch runner. Unknown
keys are errors (a typo must not silently change a decision). ``scenario_schema()`` gives the JSON
schema (written to ``data/scenario.schema.json``).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import catalog, hf, paths, terms
from . import inputs
from .validation import MAX_PROBLEMS, errors_to_lines
from .yamlsafe import excerpt, read_yaml_file
from .errors import InputError


Precision = Literal[terms.PRECISIONS]
PricingModel = Literal[terms.PRICING_MODEL_IDS]
# Every number has a range (JSON schema ``maximum``): the upper bounds are sanity limits far above any
# real workload (e.g. 1e15 training tokens, 25x the largest published run), so that no input asks the
# model for impossible sizes or overflows a float; they are not sourced facts.
Pos = Annotated[float, Field(gt=0, le=1e15)]
PosInt = Annotated[int, Field(gt=0, le=10_000_000)]
Frac = Annotated[float, Field(ge=0, le=1)]
NonNeg = Annotated[float, Field(ge=0, le=1e15)]
Dim = Annotated[int, Field(gt=0, le=1_048_576)]        # a layer width or count
Ways = Annotated[int, Field(gt=0, le=65_536)]          # a parallelism degree
Chips = Annotated[int, Field(gt=0, le=1_000_000)]
MAX_LIST = 64                                          # candidates, clouds, pricing models, frameworks


def _numeric(annotation) -> bool:
    args = getattr(annotation, "__args__", ()) or ()
    return annotation in (int, float) or any(a in (int, float) for a in args)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data):
        """``tokens: true`` is not the number 1 (pydantic would read it so)."""
        if isinstance(data, dict):
            for key, value in data.items():
                field = cls.model_fields.get(key) if isinstance(key, str) else None
                if isinstance(value, bool) and field is not None and _numeric(field.annotation):
                    raise ValueError(f"{key}: expected a number, got {value!r}")
        return data


def title_defaults_to_name(data):
    """Before validation: a missing or blank ``title`` is the ``name`` (scenario and portfolio files)."""
    if isinstance(data, dict) and not str(data.get("title") or "").strip() and data.get("name"):
        data = {**data, "title": data["name"]}
    return data


Strict = _Strict  # the strict base model (unknown keys are errors), for other input files


class Architecture(_Strict):
    """A decoder-only transformer, dense or mixture-of-experts (columns of data/models.csv)."""

    layers: Dim
    hidden: Dim
    ffn_hidden: Dim
    heads: Dim
    kv_heads: Dim
    head_dim: Dim | None = None
    vocab: Dim
    experts: Dim = 1
    experts_per_token: Dim = 1
    shared_experts: Annotated[int, Field(ge=0, le=1_048_576)] = 0
    moe_ffn_hidden: Dim | None = None
    dense_layers: Annotated[int, Field(ge=0, le=1_048_576)] = 0
    gated_mlp: bool = True
    tied_embeddings: bool = False
    kv_cache_dim: Dim | None = None
    # multi-head latent attention (DeepSeek-V2 §2.1): low-rank query and key-value projections; head_dim
    # is then the non-rotary query/key head size (qk_nope_head_dim)
    q_lora_rank: Dim | None = None
    kv_lora_rank: Dim | None = None
    qk_rope_head_dim: Dim | None = None
    v_head_dim: Dim | None = None

    @model_validator(mode="after")
    def _check(self):
        if self.head_dim is None:
            self.head_dim = self.hidden // self.heads
        if self.experts_per_token > self.experts:
            raise ValueError(f"experts_per_token ({self.experts_per_token}) cannot exceed experts ({self.experts})")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        return self


class GenericProfile(_Strict):
    """A model that is not a decoder transformer (vision, diffusion, recommendation): per-sample cost."""

    params: Pos
    train_flops_per_sample: Pos | None = None
    infer_flops_per_sample: Pos | None = None
    bytes_per_sample: Pos | None = None
    activation_bytes_per_sample: NonNeg = 0


class Workload(_Strict):
    task: Literal["training", "fine-tuning", "inference"]
    model: str | None = None
    architecture: Architecture | None = None
    generic: GenericProfile | None = None
    precision: Precision = "bf16"
    kv_cache_precision: Precision | None = None
    fp4_format: Literal[terms.FP4_FORMATS] = Field("nvfp4", description=(
        "Block format of precision fp4 (and of an fp4 KV cache): nvfp4 = 4-bit E2M1 values with an FP8 "
        "E4M3 scale per 16 values, 0.5625 bytes per value (NVIDIA, 'Introducing NVFP4 for Efficient and "
        "Accurate Low-Precision Inference', 2025); mxfp4 = E2M1 with an E8M0 scale per 32 values, 0.53125 "
        "bytes (OCP Microscaling Formats (MX) Specification v1.0, 2023, §5: MXFP4, k = 32)"))
    fp4_fallback: Literal[terms.FP4_FALLBACKS] = Field("refuse", description=(
        "precision fp4 on a chip without FP4 tensor cores (no peak_fp4_flops_per_s in "
        "data/accelerators.csv): refuse = the chip is excluded with a one-line reason; weight_only = "
        "weights stored in fp4 (memory and HBM traffic at fp4_format's bytes) and dequantised for "
        "matmuls at fp8 where the chip has an FP8 peak, else bf16"))
    framework: Literal["pytorch", "jax", "tensorflow"] = "pytorch"
    training_framework: Literal[terms.TRAINING_FRAMEWORKS] | None = Field(None, description=terms.FIELD_HELP["training_framework"])
    custom_cuda_kernels: bool = False
    # training / fine-tuning
    tokens: Pos | None = None
    samples: Pos | None = None
    seq_len: PosInt = 4096
    seq_len_beyond_context: bool = Field(False, description=(
        "true: accept a seq_len (or input_tokens + output_tokens) beyond the model's max_seq_len in "
        "data/models.csv (a context extension you plan); false: such a length is an error"))
    global_batch_tokens: Pos | None = None
    recompute: Literal["none", "selective", "full", "auto"] = "auto"
    optimizer: Literal["adam", "sgd", "adafactor"] = "adam"
    trainable_fraction: Annotated[float, Field(gt=0, le=1)] = 1.0
    lora_rank: Annotated[int, Field(gt=0, le=65_536, description=hf.LORA_RANK)] | None = None
    hf_config: str | None = Field(None, description=hf.DESCRIPTION)
    moe_capacity_factor: Annotated[float, Field(ge=1, le=16, description=(
        "Mixture-of-experts training with token dropping: each expert computes and receives capacity = "
        "factor x its even share of the routed tokens (GShard, Lepikhin et al. 2020 §2.2), so its matmuls "
        "and all-to-all grow by the factor; absent = dropless routing with balanced experts (1.0), as in "
        "Megatron-Bridge's published MoE benchmarks"))] | None = None
    # inference
    input_tokens: PosInt | None = None
    output_tokens: PosInt | None = None
    request_lengths: Literal[terms.REQUEST_LENGTHS] | None = Field(None, description=terms.FIELD_HELP["request_lengths"])
    concurrency: Annotated[int, Field(gt=0, le=10_000_000, description=(
        "Sequences in flight in the WHOLE deployment (all replicas together), e.g. 1 = a single stream; "
        "absent = the best throughput that meets the latency targets. Spread over the replicas "
        "(batch per replica = ceil(concurrency / replicas)); an option whose chips cannot hold it "
        "is excluded with the reason"))] | None = None
    requests_per_s: Pos | None = None
    ttft_slo_ms: Pos | None = None
    tpot_slo_ms: Pos | None = None
    ttft_slo_percentile: Annotated[float, Field(gt=0, lt=100, description=(
        "Percentile at which ttft_slo_ms must hold under requests_per_s (Poisson arrivals, M/G/c "
        "queue of the deployment's batch slots: model.queueing); default 99 = P99"))] = 99.0
    host_ms_per_request: Annotated[float, Field(ge=0, le=60_000, description=terms.FIELD_HELP["host_ms_per_request"])] = 1.0
    hours_per_day: Annotated[float, Field(gt=0, le=24)] = 24
    batch_window_hours: Annotated[float, Field(gt=0, le=24)] | None = None
    stack_changes_per_year: Annotated[float, Field(ge=0, le=365, description=terms.FIELD_HELP["stack_changes_per_year"])] = 0
    user_locations: Annotated[list[Annotated[str, Field(pattern=r"^[A-Z]{3}$")]], Field(min_length=1, max_length=MAX_LIST, description=terms.FIELD_HELP["user_locations"])] | None = None

    @model_validator(mode="after")
    def _check(self):
        given = [k for k in ("model", "architecture", "generic", "hf_config") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give one of model, architecture, generic or hf_config, got {', '.join(given) or 'none'}")
        inference_keys = ["input_tokens", "output_tokens", "request_lengths", "concurrency", "requests_per_s", "ttft_slo_ms",
                          "tpot_slo_ms", "batch_window_hours", "user_locations"]
        training_keys = ["tokens", "samples", "global_batch_tokens", "lora_rank", "moe_capacity_factor"]
        if self.task == "inference":
            bad = [k for k in training_keys if getattr(self, k) is not None]
            if bad:
                raise ValueError(f"{', '.join(bad)}: training key(s) on an inference task")
            if self.generic is None:
                for k in ("input_tokens", "output_tokens"):
                    if getattr(self, k) is None:
                        raise ValueError(f"{k}: expected a positive integer for an inference task")
        else:
            bad = [k for k in inference_keys if getattr(self, k) is not None]
            if bad:
                raise ValueError(f"{', '.join(bad)}: inference key(s) on a {self.task} task")
            if "fp4" in (self.precision, self.kv_cache_precision):
                raise ValueError(f"precision: fp4 is for inference (FP4 weights and KV cache in a serving "
                                 f"engine); a {self.task} task trains in fp32, bf16, fp16 or fp8")
            if self.tokens is None and self.samples is None:
                raise ValueError(f"tokens: expected a positive number of training tokens for a {self.task} task")
        return self

    @property
    def weight_precision(self) -> str:
        """The storage format of the weights: ``fp4_format`` (nvfp4, mxfp4: the block scales included)
        for precision fp4, else ``precision``."""
        return self.fp4_format if self.precision == "fp4" else self.precision

    @property
    def kv_precision(self) -> str:
        """The KV cache's storage format: ``kv_cache_precision`` (fp4: ``fp4_format``), else bf16 for
        weight-only precisions, fp8 for fp4 weights (NVIDIA Model Optimizer's NVFP4 checkpoints store
        ``kv_cache_quant_algo: FP8``, e.g. nvidia/Llama-3.1-70B-Instruct-FP4's hf_quant_config.json;
        TensorRT-LLM and vLLM serve an FP8 KV cache), else the precision."""
        if self.kv_cache_precision:
            return self.fp4_format if self.kv_cache_precision == "fp4" else self.kv_cache_precision
        return "fp8" if self.precision == "fp4" else "bf16" if self.precision in terms.WEIGHT_ONLY_PRECISIONS \
            else self.precision


def _unique_list(v):
    if v is not None and len(set(v)) != len(v):
        dup = next(x for i, x in enumerate(v) if x in v[:i])
        raise ValueError(f"{excerpt(dup)} is listed twice")
    return v


class Parallelism(_Strict):
    tp: Ways | None = None
    pp: Ways | None = None
    dp: Ways | None = None
    ep: Ways | None = None
    cp: Ways | None = None
    zero: Literal[0, 1, 2, 3] | None = None
    micro_batch: Ways | None = None
    recompute: Literal["none", "selective", "full"] | None = None
    tp_comm_overlap: bool | None = Field(None, description=terms.FIELD_HELP["tp_comm_overlap"])
    grad_reduce_in_fp32: bool | None = Field(None, description=terms.FIELD_HELP["grad_reduce_in_fp32"])
    fp8_param_gather: bool | None = Field(None, description=terms.FIELD_HELP["fp8_param_gather"])


class Cluster(_Strict):
    accelerator: str
    chips: Chips | None = None
    offering: str | None = None
    parallelism: Parallelism | None = None


class Candidates(_Strict):
    accelerators: Annotated[list[str], Field(max_length=MAX_LIST)] | None = None
    clouds: Annotated[list[str], Field(max_length=MAX_LIST)] | None = None
    pricing_models: Annotated[list[PricingModel], Field(min_length=1, max_length=MAX_LIST)] | None = None
    regions: Annotated[list[str], Field(max_length=MAX_LIST, description=terms.FIELD_HELP["regions"])] | None = None

    @field_validator("accelerators", "clouds", "pricing_models", "regions")
    @classmethod
    def _unique(cls, v):
        return _unique_list(v)


class Constraints(_Strict):
    deadline_days: Annotated[float, Field(gt=0, le=36_500)] | None = None
    budget_usd: Pos | None = None
    max_chips: Chips | None = None
    min_memory_headroom: Frac = 0.1
    frameworks: Annotated[list[Literal["pytorch", "jax", "tensorflow"]], Field(max_length=MAX_LIST)] | None = None
    deadline_confidence: Annotated[float, Field(gt=0, lt=1, description=(
        "Training with a deadline: the probability of finishing in time that the chip count is sized "
        "for (the run length is log-normal between the performance band's P10 and P90, "
        "workbook.cost.reliability.p_meets_deadline); an offer below it is ruled out. A planning "
        "choice, default 0.8"))] = 0.8
    start_days: Annotated[float, Field(ge=0, le=3650, description=(
        "Days from the decision until the capacity runs (quota and capacity waits), counted against "
        "the deadline. Default: per offer, the midpoint of the sourced wait in data/lead_times.csv for "
        "its provider and chip (H100/H200-class beyond one instance on AWS, GCP and Azure: 28-56 days, "
        "the '4-8 weeks for H100 quota' of public vendor articles), else 0 ('none published'); "
        "workbook.cost.reliability.lead_time"))] | None = None
    data_residency: Annotated[list[Annotated[str, Field(pattern=r"^(EU|[A-Z]{2})$")]], Field(min_length=1, max_length=MAX_LIST, description=terms.FIELD_HELP["data_residency"])] | None = None
    max_co2_kg: Annotated[float, Field(gt=0, le=1e15, description=(
        "Cap on the CO2e of the work (kg; training: the run; serving: over pricing.horizon_months): an offer "
        "above it, or whose region has no grid intensity in data/grid_carbon.csv, is ruled out with code "
        "'carbon' (workbook.cost.energy)"))] | None = None


class Pricing(_Strict):
    models: Annotated[list[PricingModel], Field(min_length=1, max_length=MAX_LIST)] = [
        "on_demand", "spot", "commit_1y", "commit_3y"]
    utilization: Annotated[float, Field(gt=0, le=1)] = 0.9
    negotiated_discount: Annotated[float, Field(ge=0, lt=1)] = 0.0
    commit_1y_discount: Annotated[float, Field(ge=0, lt=1, description=(
        "Discount off on-demand for a 1-year commitment, used only where offerings.csv publishes no "
        "committed price. Default 0.37 = 1 - median(commit_1y/on_demand) over the 12 GCP GPU rows of "
        "data/offerings.csv that publish both (ratios 0.62-0.69, median 0.630; Cyclenerd "
        "google-cloud-pricing-cost-calculator pricing.yml @fd66b26, 2026-07-30)"))] = 0.37
    commit_3y_discount: Annotated[float, Field(ge=0, lt=1, description=(
        "Discount off on-demand for a 3-year commitment, used only where no committed price is "
        "published. Default 0.561 = 1 - median(commit_3y/on_demand) over the same 12 GCP rows "
        "(ratios 0.35-0.45, median 0.439; same source)"))] = 0.561
    spot_price_p90_over_p10: Annotated[float, Field(ge=1, le=100, description=(
        "Monte Carlo spread of spot prices around the catalog price (P90/P10). Default 1.45 = median "
        "of 7 published spreads (AWS spot per availability zone, SkyPilot catalog snapshot; GCP spot at two dates, data/offerings.csv notes): AWS AZ "
        "ranges p5 us-east-1 20.99-30.33, p5 us-east-2 14.38-18.28, p4d 5.09-9.61, p5en us-east-2 "
        "15.49-17.24, inf2.24xlarge 0.93-1.71, trn1.32xlarge 2.88-6.28; GCP a3-highgpu-8g spot "
        "35.40 (Mar 2025) vs 50.61 (Jul 2026)"))] = 1.45
    price_doubt_scale: Annotated[float, Field(ge=0, le=10, description=(
        "Monte Carlo: multiplies the doubt of every offer's price (workbook.cost.doubt: P10/P90 band "
        "from where the price comes from, its age and the disagreement of duplicate rows); 1 = the "
        "widths measured on data/offerings.csv, 0 = every price exactly the catalog's"))] = 1.0
    utilization_spread: Annotated[float, Field(ge=0, lt=1, description=(
        "Monte Carlo: utilization P10/P90 = utilization -/+ this (a planning assumption, not a "
        "measurement: set your own)"))] = 0.1
    interruption_spread: Annotated[float, Field(ge=1, le=100, description=(
        "Monte Carlo: spot interruption-rate P10/P90 = rate divided/multiplied by this factor (a "
        "planning assumption, not a measurement: set your own)"))] = 2.0
    storage_usd_per_tb_month: Annotated[float, Field(ge=0, le=1e4, description=(
        "Object storage for data and checkpoints. Default: GCS Standard regional $0.000027397 per "
        "GiB-hour x 730 h x 931.32 GiB/TB (cloud.google.com/storage/pricing, read 2026-09-20 via "
        "api-evangelist/gcp-cloud-storage plans/gcp-cloud-storage-plans-pricing.yml)"))] = 18.63
    egress_usd_per_tb: Annotated[float, Field(ge=0, le=1e4, description=(
        "Internet egress. Default: GCS network egress worldwide 0-10 TiB $0.12 per GiB x 931.32 "
        "GiB/TB (same page and date)"))] = 111.76
    spot_interruptions_per_hour: Annotated[float, Field(ge=0, le=100)] = 0.05
    spot_availability_target: Annotated[float, Field(gt=0, lt=1, description=(
        "Latency-bound serving on spot: the fraction of time the fleet must keep its full capacity "
        "through interruptions; spare spot instances are added until P(more instances down than "
        "spares) <= 1 - target (workbook.cost.spare_instances). A planning choice, not a sourced "
        "fact. Default 0.999 ('three nines', about 44 min a month below capacity), the availability "
        "usually promised for customer-facing services; 0.99 accepts about 7.3 h a month"))] = 0.999
    checkpoint_interval_min: Annotated[float, Field(gt=0, le=1e5, description=(
        "Training: minutes between checkpoints. Default: the optimum for each offer (Young 1974 / "
        "Daly 2006: sqrt(2 x checkpoint write time x mean time between interruptions), "
        "workbook.cost.reliability.optimal_checkpoint_interval_s)"))] | None = None
    restart_min: Annotated[float, Field(gt=0, le=1e5)] = 10
    horizon_months: Annotated[float, Field(gt=0, le=120)] = 12
    electricity_usd_per_kwh: Annotated[float, Field(ge=0, le=10)] = 0.12
    pue: Annotated[float, Field(ge=1, le=3)] = 1.3
    carbon_usd_per_tonne: Annotated[float, Field(ge=0, le=1e5, description=(
        "A carbon price (USD per tonne CO2e) added to the bill per instance-hour from each offer's energy and "
        "its region's grid intensity (workbook.cost.energy), so the ranking, budget and Monte Carlo include "
        "it; offers without a grid intensity are then ruled out (code 'carbon'). Default 0: off"))] = 0.0
    grid_gco2e_per_kwh: Annotated[float, Field(ge=0, le=2000, description=(
        "Purchased hardware: the grid intensity of your own site (gCO2e/kWh) for its co2_kg; no default "
        "(the site is unknown: co2_kg blank)"))] | None = None
    depreciation_years: Annotated[float, Field(gt=0, le=50)] = 4
    storage_tb: NonNeg = 0
    egress_tb_per_month: NonNeg = 0
    porting_cost_usd: NonNeg = 0
    failures_per_host_hour: Annotated[float, Field(ge=0, le=1, description=(
        "Unexpected job interruptions (hardware and system failures) per host-hour, on every pricing "
        "model. Default 1.579e-4 = 419 unexpected interruptions in 54 days on 16,384 H100 GPUs = 2,048 "
        "8-GPU hosts (Dubey et al. 2024, 'The Llama 3 Herd of Models', §3.3.4): 419 / (2048 x 54 x 24)"))] = 1.579e-4
    checkpoint_storage: Annotated[Literal["object_store", "parallel_fs", "nfs", "local_nvme"], Field(description=(
        "Where training checkpoints are written; sets the write bandwidth "
        "(workbook.cost.reliability.STORAGE_TIERS, each with its source)"))] = "object_store"
    checkpoint_write_bytes_per_s: Annotated[float, Field(gt=0, le=1e15, description=(
        "Aggregate checkpoint write bandwidth of your storage, replacing the tier's default"))] | None = None
    commitment_backfill_fraction: Annotated[float, Field(ge=0, le=1, description=(
        "Training on a commitment: the fraction of the term's hours left after the run that other "
        "work fills (and pays for). Default 0: the run pays the whole contract"))] = 0.0
    engineer_usd_per_week: Annotated[float, Field(ge=0, le=1e6, description=terms.FIELD_HELP["engineer_usd_per_week"])] = 3635.0
    porting_weeks: Annotated[float, Field(ge=0, le=1e5, description=terms.FIELD_HELP["porting_weeks"])] | None = None
    porting_rework_fraction: Annotated[float, Field(ge=0, le=10, description=terms.FIELD_HELP["porting_rework_fraction"])] | None = None
    ops_hosts_per_engineer: Annotated[float, Field(gt=0, le=1e6, description=terms.FIELD_HELP["ops_hosts_per_engineer"])] | None = None
    hosted_api_usd_per_million_input_tokens: Annotated[float, Field(ge=0, le=1e4, description=terms.FIELD_HELP[
        "hosted_api_usd_per_million_input_tokens"])] | None = None
    hosted_api_usd_per_million_output_tokens: Annotated[float, Field(ge=0, le=1e4, description=terms.FIELD_HELP[
        "hosted_api_usd_per_million_output_tokens"])] | None = None
    colocation_usd_per_kw_month: Annotated[float, Field(ge=0, le=1e5, description=terms.FIELD_HELP["colocation_usd_per_kw_month"])] = 184.06
    network_usd_per_system_month: Annotated[float, Field(ge=0, le=1e7, description=terms.FIELD_HELP["network_usd_per_system_month"])] | None = None
    support_fraction_per_year: Annotated[float, Field(ge=0, le=1, description=terms.FIELD_HELP["support_fraction_per_year"])] | None = None
    cost_of_capital: Annotated[float, Field(ge=0, le=1, description=terms.FIELD_HELP["cost_of_capital"])] = 0.0
    monthly_min_term_months: Annotated[float, Field(ge=1, le=120, description=terms.FIELD_HELP["monthly_min_term_months"])] = 1.0

    @model_validator(mode="after")
    def _whole_api_quote(self):
        if (self.hosted_api_usd_per_million_input_tokens is None) != (self.hosted_api_usd_per_million_output_tokens is None):
            missing = "output" if self.hosted_api_usd_per_million_output_tokens is None else "input"
            raise ValueError(f"hosted_api_usd_per_million_{missing}_tokens: expected both prices of the hosted API "
                             "quote (input and output tokens) or neither")
        return self

    @property
    def restart_h(self) -> float:
        """``restart_min`` in hours."""
        return self.restart_min / 60.0

    @property
    def checkpoint_interval_h(self) -> float | None:
        """``checkpoint_interval_min`` in hours (None: the Young/Daly optimum of each offer)."""
        return None if self.checkpoint_interval_min is None else self.checkpoint_interval_min / 60.0


class Weights(_Strict):
    cost: Frac = 0.4
    time: Frac = 0.3
    ecosystem: Frac = 0.2
    portability: Frac = 0.1
    supply_risk: Frac = 0.0

    @model_validator(mode="after")
    def _check(self):
        if sum(self.model_dump().values()) <= 0:
            raise ValueError("expected at least one positive weight")
        return self


class Scenario(_Strict):
    name: str
    title: str | None = Field(None, description="the decision's title in reports and the app; default: the name")
    description: str | None = None
    workload: Workload
    cluster: Cluster | None = None
    candidates: Candidates = Candidates()
    constraints: Constraints = Constraints()
    pricing: Pricing = Pricing()
    weights: Weights = Weights()
    measurements: str | None = Field(None, description=terms.MEASUREMENTS_DESCRIPTION)

    @field_validator("name")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", v):
            raise ValueError(f"expected a lower-case id of letters, digits, '.', '_' or '-', got {v!r}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _title_defaults_to_name(cls, data):
        return title_defaults_to_name(data)

    @property
    def is_training(self) -> bool:
        """Training or fine-tuning (anything but inference)."""
        return self.workload.task != "inference"




def resolve_path(name_or_path: str | Path) -> Path:
    """A scenario name (file in data/scenarios without .yaml) or a path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or "/" in str(name_or_path) or _exists(p):
        return p
    return paths.SCENARIO_DIR / f"{name_or_path}.yaml"


def parse_scenario(data, file: str = "<scenario>") -> Scenario:
    """Validate a dict as a Scenario, then check ids against the catalogs. Raises InputError."""
    if data is None:
        raise InputError(f"{file}: empty file, expected a scenario mapping (name, title, workload, ...)")
    if not isinstance(data, dict):
        raise InputError(f"{file}: expected a mapping of keys (name, title, workload, ...), got {type(data).__name__}")
    if not any(isinstance(k, str) and k in Scenario.model_fields for k in data):
        # no key of the format: not a scenario at all; its keys are not quoted (they may be the
        # content of a file the user did not mean to pass, e.g. /etc/shadow named by a portfolio)
        raise InputError(f"{file}: not a scenario file: none of its {len(data)} key(s) is a scenario key "
                         "(name, title, workload, candidates, ...)")
    try:
        s = Scenario.model_validate(data)
    except ValidationError as exc:
        raise InputError("", errors_to_lines(file, exc)[:MAX_PROBLEMS]) from None
    except RecursionError:
        raise InputError(f"{file}: nested too deeply (refused)") from None
    problems = _check_ids(s, file)
    if problems:
        raise InputError("", problems)
    return s


def _check_ids(s: Scenario, file: str) -> list[str]:
    out = []

    def _res(kind, ident, where):
        try:
            return catalog.resolve(kind, ident)
        except InputError as e:
            out.append(f"{file}: {where}: {e}")
            return ident

    w = s.workload
    if w.model is not None:
        w.model = _res("models", w.model, "workload.model")
        out += _context_problems(w, file)
    if w.hf_config is not None:
        try:
            hf_architecture(w.hf_config)
        except InputError as e:
            out += [f"{file}: {p}" for p in e.problems]
    if s.measurements is not None:
        try:
            inputs.check_path(s.measurements, "a CSV of the team's runs", paths.rel(s.measurements))
        except InputError as e:
            out += [f"{file}: measurements: {line}" for line in e.problems]
    if s.cluster is not None:
        s.cluster.accelerator = _res("accelerators", s.cluster.accelerator, "cluster.accelerator")
    if s.candidates.accelerators:
        s.candidates.accelerators = [_res("accelerators", a, f"candidates.accelerators.{i}")
                                     for i, a in enumerate(s.candidates.accelerators)]
    if s.candidates.clouds:
        known = sorted(set(catalog.offerings()["provider"]))
        low = {k.lower(): k for k in known}
        fixed = []
        for i, c in enumerate(s.candidates.clouds):
            if c.lower() in low:
                fixed.append(low[c.lower()])
            else:
                out.append(f"{file}: candidates.clouds.{i}: unknown provider {c!r}{catalog._suggest(c, known)}")
        s.candidates.clouds = fixed
    if w.user_locations:
        lat = catalog.latency()
        known = sorted(set(lat["from_metro"]) | set(lat["to_metro"]))
        out += [f"{file}: workload.user_locations.{i}: unknown location {u!r} (expected a metro code of "
                f"data/latency.csv: {', '.join(known)})" for i, u in enumerate(w.user_locations) if u not in known]
    return out


def hf_architecture(path: str | Path, where: str = "workload.hf_config") -> Architecture:
    """The ``Architecture`` of a Hugging Face config.json (``hf.load``), its bounds checked here so
    that a config ``validate`` accepts never fails later in ``estimate``; ``InputError`` naming
    ``where``, the file and the config's field otherwise."""
    fields = hf.load(path, where)
    try:
        return Architecture(**fields)
    except ValidationError as exc:
        raise InputError("", errors_to_lines(f"{where}: {paths.rel(hf.config_file(path))}", exc)[:MAX_PROBLEMS]) from None


def _context_problems(w: Workload, file: str) -> list[str]:
    """A length given in the file beyond the model's context (``max_seq_len`` of data/models.csv)."""
    try:
        limit = catalog.model(w.model).get("max_seq_len")
    except (InputError, KeyError):
        return []
    if w.seq_len_beyond_context or limit is None or pd.isna(limit):  # a blank max_seq_len: no limit known
        return []
    if w.task == "inference" and w.input_tokens and w.output_tokens and w.input_tokens + w.output_tokens > limit:
        return [f"{file}: workload.input_tokens: input_tokens + output_tokens = {w.input_tokens + w.output_tokens} "
                f"is beyond {w.model}'s context of {int(limit)} tokens (set seq_len_beyond_context: true to plan an extension)"]
    if w.task != "inference" and "seq_len" in w.model_fields_set and w.seq_len > limit:
        return [f"{file}: workload.seq_len: {w.seq_len} is beyond {w.model}'s context of {int(limit)} tokens "
                "(set seq_len_beyond_context: true to plan an extension)"]
    return []


def load_scenario(name_or_path: str | Path) -> Scenario:
    """Read and validate one scenario file; ``InputError`` lists every problem, naming file and field.
    The file is read through ``inputs`` (a regular file of at most ``MAX_YAML_BYTES``: no FIFO, device,
    /proc file or symlink loop; UTF-8 or UTF-16 with its byte-order mark)."""
    path = resolve_path(name_or_path)
    rel = paths.rel(path)
    if len(str(path)) <= inputs.MAX_PATH_CHARS and not path.is_symlink() and not _exists(path):
        hint = ""
        if paths.SCENARIO_DIR.exists():
            hint = catalog._suggest(path.stem[:inputs.EXCERPT_CHARS], [p.stem for p in paths.SCENARIO_DIR.glob("*.yaml")])
        raise InputError(f"{rel}: file not found{hint}")
    data = read_yaml_file(path, "a scenario YAML file", rel)
    if data is None:
        raise InputError(f"{rel}: empty file, expected a scenario mapping (name, title, workload, ...)")
    return parse_scenario(paths.beside(data, path.parent), rel)


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return True      # a name too long or with a NUL: inputs says so


def scenario_names() -> list[str]:
    """Names of the shipped scenarios (files in data/scenarios/)."""
    return sorted(p.stem for p in paths.SCENARIO_DIR.glob("*.yaml"))


def scenario_schema() -> dict:
    return Scenario.model_json_schema()


def with_overrides(s: Scenario, **changes) -> Scenario:
    """A copy of the scenario with dotted-key overrides, re-validated (used by widgets and the app),
    e.g. ``with_overrides(s, **{"pricing.utilization": 0.5})``."""
    data = s.model_dump(exclude_none=True)
    for key, value in changes.items():
        node = data
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return parse_scenario(data, f"<{s.name} with overrides>")
