"""The vocabulary: one name, unit and label for every quantity that crosses a layer.

A scenario key is the notebook parameter, the model field and the column stem (``training_days``
from the YAML key to the report's column). Labels for people live here too, so that the CLI, the
notebooks, the app and the reports say the same thing. Nothing here imports from the workbook.

Spelling: "utilization" (the fraction of paid hours that do useful work), in code and in text.
"""
from __future__ import annotations

from dataclasses import dataclass

# --- time ------------------------------------------------------------------------------------------

HOURS_PER_MONTH = 730.0  # 8,760 h / 12: the cloud billing month (offerings' committed hourly = monthly / 730)
HOURS_PER_DAY = 24.0
DAYS_PER_MONTH = HOURS_PER_MONTH / HOURS_PER_DAY
SECONDS_PER_DAY = 86400.0


# --- ways to pay -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class PricingModel:
    """One way to pay. ``kind``: ``payg`` (pay for the hours used), ``spot`` (a market price that can
    be reclaimed) or ``reserved`` (every hour of a term is paid); ``term_months`` for reserved ones;
    ``label`` a noun phrase for sentences ("… on a 1-year commitment"), ``short`` for charts and
    tables."""

    id: str
    kind: str
    label: str
    short: str
    term_months: float = 0.0


PRICING_MODELS: dict[str, PricingModel] = {m.id: m for m in (
    PricingModel("on_demand", "payg", "on-demand", "on-demand"),
    PricingModel("spot", "spot", "spot", "spot"),
    PricingModel("commit_1y", "reserved", "a 1-year commitment", "1-year commitment", 12.0),
    PricingModel("commit_3y", "reserved", "a 3-year commitment", "3-year commitment", 36.0),
    PricingModel("monthly", "reserved", "a monthly server", "monthly server", 1.0),
    PricingModel("purchase", "reserved", "bought hardware", "purchase"),
    # AWS EC2 Capacity Blocks for ML: a short reservation paid up front for a reserved start; its
    # length follows the work (whole days, workbook.cost.rates.capacity_block_hours), so no fixed term
    PricingModel("capacity_block", "reserved", "a capacity block", "capacity block"),
)}
PRICING_MODEL_IDS = tuple(PRICING_MODELS)
TERM_MONTHS = {k: m.term_months for k, m in PRICING_MODELS.items() if m.term_months}
KIND = {k: m.kind for k, m in PRICING_MODELS.items()}


def pricing_label(model: str) -> str:
    """The sentence label of a pricing model ("a 1-year commitment"), the id itself when unknown."""
    m = PRICING_MODELS.get(model)
    return m.label if m else model


def pricing_short(model: str) -> str:
    """The chart/table label of a pricing model ("1-year commitment")."""
    m = PRICING_MODELS.get(model)
    return m.short if m else model


# --- the workload ----------------------------------------------------------------------------------

TASKS = ("training", "fine-tuning", "inference")
PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "fp4", "int8", "int4", "nf4")
# weights stored quantised and dequantised for the matmuls (weight-only); KV cache default bf16.
# nf4: QLoRA's 4-bit NormalFloat with double quantisation (Dettmers et al. 2023 §3); int4: 4-bit
# integers (AWQ/GPTQ for serving; blockwise 4-bit without double quantisation for a frozen base)
WEIGHT_ONLY_PRECISIONS = ("int8", "int4", "nf4")
# fp4: 4-bit floats (E2M1) with a scale per block of values, in one of two block formats
# (``fp4_format``): NVIDIA's NVFP4 (an FP8 E4M3 scale per 16 values) or the OCP Microscaling MXFP4
# (an E8M0 power-of-two scale per 32 values). Multiplied as stored on chips with FP4 tensor cores
# (``peak_fp4_flops_per_s``); elsewhere refused or dequantised for the matmuls (``fp4_fallback``).
FP4_FORMATS = ("nvfp4", "mxfp4")
FP4_FALLBACKS = ("refuse", "weight_only")
# Training frameworks whose sharding modes and layouts the layout search knows (model.search.FRAMEWORK_MODES;
# workload.training_framework)
# Request-length distributions a serving workload may name (``workload.request_lengths``; the figures and
# their sources are ``model.lengths.DATASETS``)
REQUEST_LENGTHS = ("sharegpt-sglang-bench",)
TRAINING_FRAMEWORKS = ("megatron", "deepspeed", "torchtitan", "maxtext", "llm-foundry", "fms-fsdp", "neuronx")
FRAMEWORKS = ("pytorch", "jax", "tensorflow")
RECOMPUTE = ("none", "selective", "full")
OPTIMIZERS = ("adam", "sgd", "adafactor")
FRAMEWORK_LABEL = {"pytorch": "PyTorch", "jax": "JAX", "tensorflow": "TensorFlow"}
# software platforms (data/accelerators.csv and data/software.csv ``platform``); gaudi = the Intel Gaudi
# software suite (PyTorch through the Habana bridge, the vLLM Gaudi plugin), neither CUDA nor ROCm
PLATFORM_LABEL = {"cuda": "CUDA", "rocm": "ROCm", "tpu": "TPU (XLA)", "neuron": "AWS Neuron", "gaudi": "Intel Gaudi"}
PLATFORMS = tuple(PLATFORM_LABEL)


def compute_precision(precision: str) -> str:
    """The precision the matmuls run at: int4 and nf4 weights are dequantised to bf16 (weight-only
    quantisation: AWQ/GPTQ kernels; bitsandbytes' NF4 with ``bnb_4bit_compute_dtype=bfloat16`` in
    QLoRA); every other precision computes as stored."""
    return "bf16" if precision in ("int4", "nf4") else precision  # int8 multiplies in int8, fp4 in fp4


# --- the estimate's columns ------------------------------------------------------------------------

@dataclass(frozen=True)
class Column:
    """One column of the comparison (``estimate --json`` option keys): its unit and a label."""

    name: str
    unit: str
    label: str


# the parallel layout of a training option (the training search's best configuration)
LAYOUT_KEYS = ("tp", "pp", "dp", "ep", "cp", "zero", "recompute", "micro_batch")
TRAINING_KEYS = ("step_time_s", "tokens_per_s", "mfu", "training_days", "chip_hours")
SERVING_KEYS = ("ttft_ms", "tpot_ms", "output_tokens_per_s")
BAND_SUFFIXES = ("", "_low", "_high")

_COLUMNS = [
    Column("accelerator", "", "Accelerator"),
    Column("family", "", "Family"),
    Column("chips", "chips", "Chips"),
    Column("fits", "", "Fits"),
    Column("reason", "", "Why not"),
    Column("peak_flops_per_s", "FLOP/s", "Dense peak"),
    Column("memory_per_chip_bytes", "bytes", "Memory per chip"),
    Column("step_time_s", "s", "Step (s)"),
    Column("tokens_per_s", "tokens/s", "Tokens/s"),
    Column("mfu", "fraction", "MFU"),
    Column("training_days", "days", "Days to train"),
    Column("chip_hours", "chip-hours", "Chip-hours"),
    Column("ttft_ms", "ms", "TTFT (ms)"),
    Column("tpot_ms", "ms", "ms per token"),
    Column("output_tokens_per_s", "tokens/s", "Output tokens/s"),
    Column("max_batch", "sequences", "Max batch"),
    Column("batch", "sequences", "Batch"),
    Column("meets_slo", "", "Meets latency targets"),
    Column("replicas", "copies", "Replicas"),
    Column("tp", "chips", "TP"),
    Column("pp", "stages", "PP"),
    Column("dp", "replicas", "DP"),
    Column("ep", "chips", "EP"),
    Column("cp", "chips", "CP"),
    Column("zero", "stage", "ZeRO"),
    Column("recompute", "", "Recompute"),
    Column("micro_batch", "sequences", "Micro-batch"),
    Column("meets_deadline", "", "Meets deadline"),
    Column("calibrated", "", "Calibrated"),
    Column("ttft_ms_p50", "ms", "TTFT under load, median (ms)"),
    Column("ttft_ms_p99", "ms", "TTFT under load, P99 (ms)"),
    Column("ttft_ms_at_slo_percentile", "ms", "TTFT under load at ttft_slo_percentile (ms)"),
    Column("layout", "", "Serving layout (colocated | disaggregated)"),
    Column("prefill_chips", "chips", "Prefill pool chips"),
    Column("decode_chips", "chips", "Decode pool chips"),
    Column("prefill_tp", "chips", "Prefill TP"),
    Column("decode_tp", "chips", "Decode TP"),
    Column("kv_transfer_ms", "ms", "KV-cache transfer, prefill to decode (ms)"),
]
_BANDED = set(TRAINING_KEYS) | set(SERVING_KEYS)


def _expand(cols):
    for c in cols:
        yield c
        if c.name in _BANDED:
            yield Column(c.name + "_low", c.unit, c.label + ", low (P10)")
            yield Column(c.name + "_high", c.unit, c.label + ", high (P90)")


ESTIMATE_COLUMNS: dict[str, Column] = {c.name: c for c in _expand(_COLUMNS)}
INT_COLUMNS = ("chips", "max_batch", "batch", "replicas", "tp", "pp", "dp", "ep", "cp", "zero", "micro_batch",
               "prefill_chips", "decode_chips", "prefill_tp", "decode_tp")
BOOL_COLUMNS = ("fits", "meets_slo", "meets_deadline", "calibrated")

# labels of the decision's ranking and cost columns (notebooks, app, reports)
RANKING_LABELS = {
    "rank": "#", "accelerator": "Accelerator", "pricing_model": "Pay with", "score": "Score",
    "cost_usd": "Cost of the run", "usd_per_million_tokens": "$ per M output tokens", "band": "band",
    "usd_per_month": "$ a month", "training_days": "Days", "tpot_ms": "ms per token", "p_cheapest": "P(cheapest)",
    "offering": "Offering",
}


def label(column: str) -> str:
    """A column's label for people (the column name itself when it has none)."""
    c = ESTIMATE_COLUMNS.get(column)
    return c.label if c else RANKING_LABELS.get(column, column)


# --- money for people ------------------------------------------------------------------------------

def metric_unit(training: bool, generic: bool = False) -> str:
    """The words after the ranking figure, the same on every surface: "for the run" (training),
    "per million output tokens" (a transformer service), "per million requests" (a generic model's
    service: one forward pass per request, e.g. an embedding per document; the figure sits in the
    ``usd_per_million_tokens`` column)."""
    return "for the run" if training else ("per million requests" if generic else "per million output tokens")


def latency_label(generic: bool = False) -> str:
    """What ``ttft_ms`` measures: the time to first token, or a generic model's request latency."""
    return "request latency" if generic else "to first token"


def chips_billed_label(used, billed) -> str:
    """The words after the number of chips used, the same on every surface (CLI, app, report): the
    chips billed are the whole instances or slices bought (spares included), never fewer than used.
    "chips used, 72 billed (whole instances and spares)"; "chips used and billed" when they agree."""
    noun = "chip" if used == 1 else "chips"
    try:
        billed = float(billed)
    except (TypeError, ValueError):
        billed = float("nan")
    if billed != billed:
        return f"{noun} used"
    if billed > float(used):
        return f"{noun} used, {billed:,.0f} billed (whole instances and spares)"
    return f"{noun} used and billed (whole instances)"


def usd(x) -> str:
    """Money for people: $1.23B, $1.23M, $45,600, $2.13, $0.213; "n/a" for a blank. (Here, below
    every layer, so that the decision's reasons and the views write money the same way.)"""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "n/a"
    if x != x or x in (float("inf"), float("-inf")):
        return "n/a"
    a = abs(x)
    if a >= 1e9:
        return f"${x / 1e9:.2f}B"
    if a >= 1e6:
        return f"${x / 1e6:.2f}M"
    if a >= 100:
        return f"${x:,.0f}"
    if a >= 1:
        return f"${x:,.2f}"
    return f"${x:.3g}"


# Descriptions of the scenario keys of the rest of the bill (people, porting, location), kept here so
# that scenario.py stays one line per field.
FIELD_HELP = {
    "request_lengths": (
        "Serving: the spread of answer lengths around output_tokens, by dataset (sharegpt-sglang-bench: "
        "ShareGPT as SGLang's bench_serving samples it, a lognormal of coefficient of variation about 1.3 "
        "fitted to SGLang's published mean and median; model.lengths). Long answers hold their batch slot "
        "longer, so a slot holds more KV cache and fewer sequences fit; absent = every request at "
        "input_tokens/output_tokens"),
    "host_ms_per_request": (
        "Generic (non-transformer) serving: host time per request in ms (request handling, tokenization "
        "or image decoding, host-device copies), added to the request's latency and overlapped with the "
        "chip's work (model.generic.serve). Default 1 ms: a stated planning default, not measured or "
        "calibrated; set it from a profile of your serving stack"),
    "hosted_api_usd_per_million_input_tokens": (
        "Serving: a hosted API's price per million prompt tokens as quoted to you (no default; give both prices), "
        "shown beside the decision with the break-even request rate (never ranked)"),
    "hosted_api_usd_per_million_output_tokens": "The same quote's price per million generated tokens",
    "stack_changes_per_year": (
        "Changes of the model or software stack a year (new architecture, framework upgrade) that a ported "
        "platform must follow: each repeats pricing.porting_rework_fraction of the port's engineer-weeks over "
        "pricing.horizon_months (decision.rules.framework_fit). Default 0"),
    "regions": (
        "Provider regions to consider (offerings.csv region ids, e.g. us-east-1, europe-west4); other rented "
        "offers are ruled out with code 'region'. Bought hardware ('own site') is not filtered"),
    "data_residency": (
        "Where the data may be processed: 'EU' (a member state) and/or ISO 3166-1 alpha-2 country codes (US, "
        "NL, ...). A rented offer whose region is not in data/regions.csv, whose country is not published "
        "there, or that lies elsewhere is ruled out with code 'residency'. Bought hardware runs where you put "
        "it and is not filtered"),
    "engineer_usd_per_week": (
        "Loaded cost of one engineer-week (porting, operations staff). Default 3,635 = the US median annual "
        "wage of software developers, $133,080 (BLS Occupational Employment and Wage Statistics, May 2024, "
        "SOC 15-1252) / 0.704 (wages' share of employer compensation cost, private industry, BLS Employer "
        "Costs for Employee Compensation, December 2023) / 52 weeks"),
    "porting_weeks": (
        "Engineer-weeks to port to a platform that needs it, replacing data/effort.csv (default: the catalog "
        "row of the workload's framework, the platform, custom CUDA kernels and task; a blank row leaves the "
        "port unpriced, said in the software fit). Ignored when porting_cost_usd is above 0"),
    "porting_rework_fraction": (
        "Share of the port's engineer-weeks that each of workload.stack_changes_per_year repeats. No published "
        "figure: default none (the recurring share is not priced, and the software fit says so)"),
    "ops_hosts_per_engineer": (
        "Hosts one operations engineer runs: the bill adds ceil(hosts / this) x engineer_usd_per_week for every "
        "week the capacity is used (workbook.cost.rates.ops_staff_usd_per_month). No published staffing ratio "
        "was found: default none (operations staff are not in the bill)"),
    "user_locations": (
        "Serving: where the users are, as IATA metropolitan-area codes of data/latency.csv (WAS, DFW, YTO, SAO, "
        "LON, FRA, MAD, TYO, OSA, SYD). Each offer's region is mapped to its latency metro (data/regions.csv) "
        "and the worst round trip to these locations (user_rtt_ms) is added to TTFT and its tails before the "
        "SLO check (workbook.cost.location). Default none: no network time added"),
    "colocation_usd_per_kw_month": (
        "Bought hardware: colocation space and power capacity per kW of the system's maximum power per month "
        "(electricity is metered on top, power x PUE x electricity_usd_per_kwh). Default 184.06 = CBRE's average "
        "monthly asking rate for a 250-500 kW requirement across primary North American data center markets, "
        "H2 2024 (CBRE 'North America Data Center Trends H2 2024', 2025-02-26)"),
    "network_usd_per_system_month": (
        "Bought hardware: network (switches, cables, transit) per system per month. No published figure was "
        "found: default none (not priced, said in the price basis)"),
    "support_fraction_per_year": (
        "Bought hardware: the support contract as a share of the list price per year. NVIDIA publishes its "
        "Enterprise Support levels but no price: default none (not priced, said in the price basis)"),
    "cost_of_capital": (
        "Bought hardware: annual cost of the capital tied up in it; the purchase is repaid as a level monthly "
        "payment over depreciation_years (capital recovery factor, workbook.cost.hosting) and the interest "
        "enters hosting_usd. Default 0: set your firm's rate (a planning input, not a market fact)"),
    "monthly_min_term_months": (
        "Monthly dedicated servers: the minimum term paid; a training run pays whole months of its wall time, "
        "at least this many, and a service at least this many months of its horizon. Default 1 (the billing month)"),
}


# --- the team's own runs -------------------------------------------------------------------------------

MEASUREMENTS_DESCRIPTION = (
    "A CSV of the team's own runs, relative to the scenario file (workbook.calibrate.own; columns in the "
    "docs/how-to/own-runs.md): near runs on a chip replace the published calibration for that chip "
    "(its efficiency is scaled to them, its band narrowed); other chips do not move")

# The label every output carries beside a generic (non-transformer) estimate (CLI table, warnings in
# reports and the app, ``estimate --json`` key ``estimate_label``): its efficiency is the
# transformer-fitted one, which published runs of such models show to be optimistic.
GENERIC_ESTIMATE_LABEL = "uncalibrated/optimistic"

# Data-parallel software switches of a pinned layout (cluster.parallelism; issue 15)
FIELD_HELP.update({
    "tp_comm_overlap": (
        "Training layout pin: the tensor-parallel collectives are overlapped with the layer's matmuls "
        "(Megatron-LM --tp-comm-overlap, NeMo ub_tp_comm_overlap), charged the GPU overlap slowdown; "
        "default: not overlapped"),
    "grad_reduce_in_fp32": (
        "Training layout pin: gradients are accumulated and reduced in fp32 (4 bytes; Megatron-LM's default "
        "for bf16), so the distributed optimizer (zero: 1) holds 6 + 12/d bytes per parameter; default: 16-bit"),
    "fp8_param_gather": (
        "Training layout pin (precision fp8): the weights are kept in FP8, 1 byte, and the distributed "
        "optimizer all-gathers them in FP8 (Megatron-LM --fp8-param-gather, NeMo fp8_params); the fp32 main "
        "weights stay in the optimizer states; default: 16-bit weights"),
    "training_framework": (
        "Training: the framework that will run the job; the layout search then offers only the data-parallel "
        "sharding modes (ZeRO stages) and layouts it runs (model.search.FRAMEWORK_MODES: megatron = Megatron-LM, "
        "NeMo, Megatron-Bridge: stages 0, 1, 3; deepspeed: 0-3; torchtitan and maxtext: 0, 3; llm-foundry: FSDP "
        "without TP/PP, 0, 3; fms-fsdp: FSDP only; neuronx: 0, 1). Absent: every stage is searched"),
})
# The label of a generic estimate whose workload is an MLPerf benchmark the generic efficiency is
# fitted on (``model.generic.estimate_label``; same places as ``GENERIC_ESTIMATE_LABEL``).
GENERIC_CALIBRATED_LABEL = "calibrated on MLPerf {benchmark}"
