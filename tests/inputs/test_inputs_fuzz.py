"""Bounded, derandomised fuzz of every file surface (issue 28): whatever the bytes, each reader
returns a value or raises ``InputError`` (one short line per problem), never another exception."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbook import cli, diff, hf
from workbook.calibrate import own
from workbook.errors import InputError
from workbook.plan import portfolio
from workbook.scenario import hf_architecture, load_scenario

FUZZ = settings(max_examples=40, derandomize=True, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**40, 10**40), st.floats(allow_nan=True),
                    st.text(max_size=80), st.just("1e308"), st.just("-1"), st.just("inf"))
JSONISH = st.recursive(SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                       st.dictionaries(st.text(max_size=12), kids, max_size=4)),
                       max_leaves=12)


def _expected(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except InputError as e:
        assert e.problems and all(len(line) < 1200 for line in e.problems), e.problems
        return None


@FUZZ
@given(body=st.one_of(st.binary(max_size=400),
                      st.dictionaries(st.sampled_from(["name", "title", "workload", "candidates", "pricing",
                                                       "constraints", "zzz"]), JSONISH, max_size=5)
                      .map(lambda d: json.dumps(d, default=str).encode())))
def test_scenario_files(tmp_path, body):
    p = tmp_path / "s.yaml"
    p.write_bytes(body)
    _expected(load_scenario, p)


WORKLOAD = st.fixed_dictionaries({"scenario": st.one_of(st.sampled_from(["chat-70b-realtime", "/etc/shadow",
                                                                         "../x.yaml", "a" * 300]), st.text(max_size=20)),
                                  "start_month": SCALARS, "hourly_load": st.one_of(st.none(), st.lists(SCALARS, max_size=26))})


@FUZZ
@given(months=SCALARS, workloads=st.lists(WORKLOAD, max_size=3))
def test_portfolio_files(tmp_path, months, workloads):
    p = tmp_path / "p.yaml"
    p.write_text(json.dumps({"name": "p", "months": months, "workloads": workloads}, default=str))
    _expected(portfolio.load_portfolio, p)


HF_KEYS = ["model_type", "num_attention_heads", "hidden_size", "num_hidden_layers", "vocab_size",
           "intermediate_size", "num_key_value_heads", "head_dim", "attn_config", "d_model", "n_heads",
           "n_layers", "expansion_ratio", "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
           "n_routed_experts", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"]
BASE = {"model_type": "llama", "num_attention_heads": 32, "hidden_size": 4096, "num_hidden_layers": 32,
        "vocab_size": 32000, "intermediate_size": 11008}


@FUZZ
@given(kind=st.sampled_from(list(hf.SUPPORTED) + ["bert", 3]),
       changes=st.dictionaries(st.sampled_from(HF_KEYS), JSONISH, max_size=4))
def test_hf_configs(tmp_path, kind, changes):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**BASE, "model_type": kind, **changes}, default=str))
    _expected(hf_architecture, p)


CELLS = st.one_of(st.sampled_from(["", "8", "1e308", "-3", "nan", "inf", "0.5", "H100-SXM5-80GB", "llama-3.1-8b",
                                   "bf16", "training", "../../etc/passwd", "x" * 200]), st.text(max_size=10))


@FUZZ
@given(header=st.lists(st.sampled_from(list(own.COLUMNS) + ["bogus"]), min_size=0, max_size=10, unique=True),
       rows=st.lists(st.lists(CELLS, max_size=11), max_size=4))
def test_measurement_files(tmp_path, header, rows):
    p = tmp_path / "runs.csv"
    lines = [",".join(header)] + [",".join(c.replace(",", ";").replace("\n", " ") for c in r) for r in rows]
    p.write_text("\n".join(lines) + "\n")
    _expected(own.read_measurements, p, model_paths=False)


@FUZZ
@given(old=st.dictionaries(st.sampled_from(["recommendation", "options", "inputs", "catalog_versions", "scenario"]),
                           JSONISH, max_size=4),
       new=st.dictionaries(st.sampled_from(["recommendation", "options", "inputs", "scenario"]), JSONISH, max_size=3))
def test_diff_summaries(tmp_path, old, new):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(old, default=str))
    b.write_text(json.dumps(new, default=str))
    x, y = _expected(diff.load_summary, a), _expected(diff.load_summary, b)
    if x is not None and y is not None:
        diff.change_lines(diff.diff_summaries(x, y))


SKY = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone"


@settings(max_examples=25, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=st.lists(st.lists(st.sampled_from(["p3.2xlarge", "V100", "H100", "8", "inf", "-1", "1e308", "",
                                               "=cmd|' /C calc'!A0", "us-east-1", "\u00e9", "nan"]),
                              min_size=9, max_size=11), max_size=4),
       raw=st.binary(max_size=60))
def test_price_files_through_the_cli(tmp_path, capsys, rows, raw):
    p = tmp_path / "vms.csv"
    p.write_bytes((SKY + "\n" + "\n".join(",".join(r) for r in rows) + "\n").encode() + raw)
    rc = cli.main(["prices", "import", str(p), "--format", "skypilot", "--provider", "aws",
                   "--out", str(tmp_path / "out.csv")])
    err = capsys.readouterr().err
    assert rc in (0, 1, 2), err[:400]
    assert "Traceback" not in err


def test_json_depth_check_finds_what_the_character_walk_finds():
    """``inputs.json_depth_problem`` (brackets outside strings picked out by a pattern, their running depth
    summed) against the character-by-character walk it replaced (``_depth_problem_at``): 60,000 random texts
    of brackets, quotes, backslashes (escaped quotes, a backslash last, unterminated strings), other
    characters and newlines, limits 0-7; then real JSON, nested to the limit and past it."""
    import random

    from workbook import inputs

    rng = random.Random(30)
    for alphabet in ('[]{}"\\ a1,:\n', '[{"\\', '[]"\\x', '{}[]'):
        for _ in range(15_000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
            limit = rng.randrange(0, 8)
            assert inputs.json_depth_problem(text, limit) == inputs._depth_problem_at(text, limit), (text, limit)
    for depth in (1, 63, 64, 65, 200):
        text = json.dumps({"a": "[[[{", "b": ["\\\"]]"] * 3}) + "[" * depth + '"x"' + "]" * depth
        assert inputs.json_depth_problem(text) == inputs._depth_problem_at(text, inputs.MAX_DEPTH)
    assert inputs.json_depth_problem("[" * 65) == 64 and inputs.json_depth_problem("[" * 64) is None
