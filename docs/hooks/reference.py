"""MkDocs hook: the reference pages are generated from the code at build time.

A page holds a marker and the hook replaces it:

- ``<!-- generated: scenario-keys -->``: every scenario key from the pydantic schema
  (``workbook.scenario.scenario_schema``) with its unit (from the key's unit suffix), default, allowed
  range and description (the description carries the key's source where it has one);
- ``<!-- generated: cli -->``: every command and option from the argparse parser (``workbook.cli.build_parser``);
- ``<!-- generated: catalogs -->``: every catalog's columns from ``workbook.catalog.SCHEMAS`` (type, required,
  range) joined with the unit and meaning of ``data/README.md``'s dictionary tables.

So the reference cannot drift from the code: a key added to the scenario model appears on the next build.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from workbook import catalog, paths, terms  # noqa: E402
from workbook.scenario import scenario_schema  # noqa: E402

# Unit suffixes of the one vocabulary (style: units in names), longest first.
UNIT_SUFFIXES = [
    ("_usd_per_million_input_tokens", "USD per million input tokens"),
    ("_usd_per_million_output_tokens", "USD per million output tokens"),
    ("_usd_per_tb_month", "USD per TB-month"), ("_usd_per_tb", "USD per TB"),
    ("_usd_per_kwh", "USD per kWh"), ("_usd_per_kw_month", "USD per kW-month"),
    ("_usd_per_system_month", "USD per system-month"), ("_usd_per_week", "USD per week"),
    ("_usd_per_tonne", "USD per tonne CO2e"), ("_usd_per_hour", "USD per hour"), ("_usd", "USD"),
    ("_bytes_per_s", "bytes/s"), ("_flops_per_s", "FLOP/s"), ("_tokens_per_s", "tokens/s"),
    ("_per_host_hour", "per host-hour"), ("_per_hour", "per hour"), ("_per_year", "per year"),
    ("_per_s", "per second"), ("_bytes", "bytes"), ("_flops", "FLOP"), ("_ms", "ms"), ("_min", "minutes"),
    ("_hours", "hours"), ("_days", "days"), ("_months", "months"), ("_years", "years"), ("_tb_per_month", "TB per month"),
    ("_tb", "TB"), ("_kg", "kg CO2e"), ("_fraction", "fraction 0-1"), ("_discount", "fraction 0-1"),
    ("_tokens", "tokens"), ("_weeks", "engineer-weeks"), ("_w", "W"), ("_s", "seconds"),
]


def unit_of(key: str) -> str:
    for suffix, unit in UNIT_SUFFIXES:
        if key.endswith(suffix):
            return unit
    return ""


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _type_and_range(prop: dict) -> tuple[str, str]:
    """A JSON-schema property's type and its bounds, e.g. ('number', '> 0, <= 1')."""
    options = prop.get("anyOf") or [prop]
    types, bounds = [], []
    for o in options:
        t = o.get("type") or (o.get("$ref", "").rsplit("/", 1)[-1] or None)
        if t == "null":
            continue
        if "enum" in o:
            t = " \\| ".join(f"`{v}`" for v in o["enum"])
        elif t == "array" and "items" in o:
            it = o["items"]
            inner = " \\| ".join(f"`{v}`" for v in it["enum"]) if "enum" in it else it.get("type", "")
            t = f"list of {inner}"
        elif "const" in o:
            t = f"`{o['const']}`"
        types.append(str(t))
        for k, sym in (("exclusiveMinimum", ">"), ("minimum", ">="), ("exclusiveMaximum", "<"), ("maximum", "<=")):
            if k in o:
                bounds.append(f"{sym} {o[k]:g}")
    return " or ".join(dict.fromkeys(types)), ", ".join(bounds)


# What a key means where its schema field has no description and workbook.terms.FIELD_HELP has no entry: the
# words of the scenario guide (docs/how-to/scenario.md), kept short. Prefer adding a description to the field.
KEY_HELP = {
    "description": "a paragraph shown under the title in reports and the app",
    "workload.samples": "training a generic (non-transformer) model: samples to train on, instead of tokens",
    "workload.seq_len": "training: tokens per sequence",
    "workload.global_batch_tokens": "training: tokens per optimizer step; default: one sequence per chip",
    "workload.trainable_fraction": "fine-tuning only part of the model's weights: the share that is trained",
    "workload.lora_rank": "LoRA adapters of this rank on every linear layer of the blocks (Hu et al. 2021); with "
                          "precision nf4 this is QLoRA (Dettmers et al. 2023)",
    "workload.moe_capacity_factor": "mixture of experts: tokens an expert may take, as a multiple of an even share",
    "workload.output_tokens": "inference: answer tokens per request",
    "workload.tpot_slo_ms": "latency target: time per output token",
    "cluster.accelerator": "pin the estimate to this accelerator (an id or alias of data/accelerators.csv)",
    "cluster.chips": "pin the number of chips",
    "cluster.offering": "pin one offering of data/offerings.csv",
    "cluster.parallelism": "pin the parallel layout (tp, pp, dp, ep, cp, zero, micro_batch, recompute)",
    "candidates.accelerators": "only these accelerators (ids or aliases); default: every one in the catalog",
    "candidates.clouds": "only these providers; default: all",
    "candidates.pricing_models": "only these ways to pay",
    "candidates.regions": "only offers in these regions (rule code region)",
    "constraints.deadline_days": "training must finish within this many days (with deadline_confidence)",
    "constraints.budget_usd": "the cost may not exceed this",
    "constraints.max_chips": "at most this many chips",
    "constraints.min_memory_headroom": "memory kept free on each chip",
    "constraints.frameworks": "frameworks the team accepts (software fit)",
    "constraints.start_days": "days before the capacity runs; default: the sourced wait in data/lead_times.csv, else 0",
    "constraints.data_residency": "EU and/or ISO country codes, read from data/regions.csv (rule code residency)",
    "constraints.max_co2_kg": "rules out offers above this CO2e (rule code carbon)",
    "pricing.models": "the ways to pay to price (on_demand, spot, commit_1y, commit_3y, capacity_block, monthly, purchase)",
    "pricing.utilization": "share of paid hours doing useful work",
    "pricing.negotiated_discount": "discount off list prices",
    "pricing.spot_interruptions_per_hour": "spot reclaims per instance-hour (an input, not a sourced figure)",
    "pricing.checkpoint_interval_min": "minutes between checkpoints; default: the Young/Daly optimum of each offer",
    "pricing.restart_min": "minutes lost to restart after an interruption",
    "pricing.horizon_months": "months the service runs, or over which a purchase or commitment is compared",
    "pricing.electricity_usd_per_kwh": "electricity price for bought hardware",
    "pricing.pue": "power usage effectiveness of your own data centre (bought hardware)",
    "pricing.grid_gco2e_per_kwh": "grid carbon intensity of your own site, for bought hardware (no default: the site is unknown)",
    "pricing.depreciation_years": "years over which bought hardware is paid off",
    "pricing.storage_tb": "storage kept for the workload",
    "pricing.egress_tb_per_month": "data leaving the cloud each month",
    "pricing.porting_cost_usd": "a fixed porting cost; above 0 it replaces the engineer-weeks estimate",
    "pricing.checkpoint_write_bytes_per_s": "checkpoint write bandwidth; instead of pricing.checkpoint_storage",
    "pricing.network_usd_per_system_month": "network contract per bought system; not priced unless given (no published figure)",
    "pricing.support_fraction_per_year": "support contract as a share of the list price a year; not priced unless given",
    "weights.cost": "weight of cost in the ranking", "weights.time": "weight of time (training days or latency)",
    "weights.ecosystem": "weight of the software fit", "weights.portability": "weight of portability",
    "weights.supply_risk": "weight of supply risk (wait for capacity, spot availability)",
    "workload.architecture.layers": "transformer blocks", "workload.architecture.hidden": "model width",
    "workload.architecture.ffn_hidden": "MLP width", "workload.architecture.heads": "attention heads",
    "workload.architecture.kv_heads": "key/value heads (grouped-query attention)",
    "workload.architecture.head_dim": "width of one head", "workload.architecture.vocab": "vocabulary size",
    "workload.architecture.experts": "routed experts per MoE layer (1: dense)",
    "workload.architecture.experts_per_token": "experts each token is routed to",
    "workload.architecture.shared_experts": "experts every token uses (DeepSeek)",
    "workload.architecture.moe_ffn_hidden": "MLP width of one expert", "workload.architecture.dense_layers": "leading dense layers before the MoE ones",
    "workload.architecture.gated_mlp": "SwiGLU-style gated MLP (three matrices)",
    "workload.architecture.tied_embeddings": "input and output embeddings shared",
    "workload.architecture.kv_cache_dim": "KV-cache width per token per layer where it is not heads x head_dim",
    "workload.architecture.q_lora_rank": "multi-head latent attention: query compression rank (DeepSeek-V2/V3)",
    "workload.architecture.kv_lora_rank": "multi-head latent attention: key/value compression rank",
    "workload.architecture.qk_rope_head_dim": "multi-head latent attention: rotary part of a head",
    "workload.architecture.v_head_dim": "multi-head latent attention: value head width",
    "workload.generic.params": "parameters of a non-transformer model",
    "workload.generic.train_flops_per_sample": "training FLOPs per sample (forward and backward)",
    "workload.generic.infer_flops_per_sample": "inference FLOPs per sample",
    "workload.generic.bytes_per_sample": "bytes read per sample",
    "workload.generic.activation_bytes_per_sample": "activation memory per sample",
}


def _guide_comments() -> dict[str, str]:
    """The comments of the annotated example in docs/how-to/scenario.md (``  key: value  # what it is``), by dotted
    key: the description of a key whose schema field carries none."""
    text = (ROOT / "docs" / "how-to" / "scenario.md").read_text()
    m = re.search(r"```yaml\n(.*?)```", text, re.S)
    out, section = {}, None
    for line in (m.group(1) if m else "").splitlines():
        k = re.match(r"^(\s*)([a-z_]+):\s*([^#]*?)\s*(?:#\s*(.*))?$", line)
        if not k:
            continue
        indent, key, value, comment = k.groups()
        if not indent:
            section = key if not value else None
            name = key
        else:
            name = f"{section}.{key}" if section else key
        if comment:
            out[name] = comment
    return out


def scenario_keys_markdown() -> str:
    schema = scenario_schema()
    guide = _guide_comments()
    defs = schema["$defs"]
    out = []

    def table(props: dict, prefix: str, required: list[str]):
        rows = ["| key | type | unit | default | range | what it is, and its source |", "|---|---|---|---|---|---|"]
        nested = []
        for key, prop in props.items():
            ref = prop.get("$ref") or next((o["$ref"] for o in prop.get("anyOf", []) if "$ref" in o), None)
            name = f"{prefix}{key}"
            if ref and ref.rsplit("/", 1)[-1] in defs and ref.rsplit("/", 1)[-1] not in ("Parallelism",):
                nested.append((name, defs[ref.rsplit("/", 1)[-1]]))
                rows.append(f"| `{name}` | section | | | | see [{name}](#{name.replace('.', '')}) |")
                continue
            typ, rng = _type_and_range(prop)
            default = "required" if key in required else json.dumps(prop.get("default")) if "default" in prop else ""
            what = (prop.get("description") or terms.FIELD_HELP.get(key) or KEY_HELP.get(name)
                    or (f"{guide[name]} (the guide's example)" if name in guide else ""))
            rows.append(f"| `{name}` | {typ} | {unit_of(key)} | {_cell(default)} | {rng} | {_cell(what)} |")
        return rows, nested

    rows, nested = table(schema["properties"], "", schema.get("required", []))
    out += ["## Top level", ""] + rows + [""]
    while nested:
        name, d = nested.pop(0)
        rows, more = table(d.get("properties", {}), f"{name}.", d.get("required", []))
        out += [f"## {name}", "", _cell(d.get("description", "")), ""] + rows + [""]
        nested += more
    return "\n".join(out)


def _parser_markdown(name: str, p: argparse.ArgumentParser, help_: str, level: str = "##") -> list[str]:
    """One command: its help, usage and arguments table; sub-commands (``prices import``) follow, one level down."""
    p.prog = f"python -m workbook {name}"
    out = [f"{level} `{name}`", "", _cell(help_ or ""), "", "```text", p.format_usage().strip(), "```", ""]
    rows = ["| argument | default | meaning |", "|---|---|---|"]
    subs = []
    for a in p._actions:
        if isinstance(a, argparse._HelpAction):
            continue
        if isinstance(a, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in a._choices_actions}
            subs += [(f"{name} {n}", sp, helps.get(n)) for n, sp in a.choices.items()]
            continue
        if a.help == argparse.SUPPRESS:
            continue
        flag = ", ".join(a.option_strings) or a.dest
        if a.choices:
            flag += " {" + ",".join(map(str, a.choices)) + "}"
        default = "" if a.default in (None, False, [], argparse.SUPPRESS) or a.option_strings == [] else a.default
        rows.append(f"| `{_cell(flag)}` | {_cell(default)} | {_cell(a.help or '')} |")
    if len(rows) > 2:
        out += rows + [""]
    for sub_name, sp, sub_help in subs:
        out += _parser_markdown(sub_name, sp, sub_help, level + "#")
    return out


def cli_markdown() -> str:
    from workbook.cli import build_parser  # the parser imports every command module: only when the page builds
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}
    out = []
    for name, p in sub.choices.items():
        out += _parser_markdown(name, p, helps.get(name))
    return "\n".join(out)


def _site_links(text: str) -> str:
    """data/README.md's relative links as seen from reference/catalogs.md: a docs page keeps its link, any
    other file of the repository becomes its path in code (the site holds only docs/)."""
    def fix(m):
        label, target = m.group(1), m.group(2)
        if target.startswith(("http://", "https://", "#")):
            return m.group(0)
        if target.startswith("../docs/"):
            return f"[{label}](../{target[len('../docs/'):]})"
        return f"{label} (`{target.lstrip('./')}`)"
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", fix, text)


def _readme_columns() -> dict[str, dict[str, tuple[str, str]]]:
    """data/README.md's dictionary tables, per section: column -> (unit, meaning)."""
    text = (paths.DATA_DIR / "README.md").read_text()
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for m in re.finditer(r"<!-- section: (\w+) -->(.*?)<!-- end: \1 -->", text, re.S):
        cols = out.setdefault(m.group(1), {})
        for line in m.group(2).splitlines():
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if len(cells) >= 3 and cells[0].startswith("`"):
                for col in re.findall(r"`([a-z0-9_]+)`", cells[0]):
                    cols.setdefault(col, (cells[1], _site_links(cells[-1])))
    return out


def catalogs_markdown() -> str:
    readme = _readme_columns()
    out = []
    for name, schema in catalog.SCHEMAS.items():
        section = readme.get(name) or next((v for k, v in readme.items() if name.startswith(k) or k.startswith(name)), {})
        if not section:  # the energy tables share one section
            section = readme.get("energy", {})
        out += [f"## `{name}`", "", f"Columns checked by `workbook.catalog.SCHEMAS[{name!r}]`; unit and meaning from "
                "`data/README.md`.", "", "| column | type | required | range or choices | unit | meaning |",
                "|---|---|---|---|---|---|"]
        for col, c in schema.items():
            rng = " \\| ".join(f"`{x}`" for x in c.choices) if c.choices else ", ".join(
                f"{s} {v:g}" for s, v in ((">=", c.min), ("<=", c.max)) if v is not None)
            unit, meaning = section.get(col, ("", ""))
            out.append(f"| `{col}` | {c.kind} | {'yes' if c.required else ''} | {rng} | {unit} | {meaning} |")
        out.append("")
    return "\n".join(out)


MARKERS = {
    "<!-- generated: scenario-keys -->": scenario_keys_markdown,
    "<!-- generated: cli -->": cli_markdown,
    "<!-- generated: catalogs -->": catalogs_markdown,
}


def on_page_markdown(markdown: str, page=None, config=None, files=None) -> str:
    for marker, build in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, build())
    return markdown
