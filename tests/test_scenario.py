"""The scenario file: every shipped one validates; every bad input gives one clear line naming file and field."""
import json

import pytest
from cli_helpers import run_workbook

from workbook.errors import InputError
from workbook.scenario import load_scenario, scenario_names, scenario_schema, with_overrides

GOOD = """\
name: t
title: test
workload:
  task: training
  model: llama-2-7b
  tokens: 2.0e+12
  seq_len: 4096
"""


def problems(path) -> list[str]:
    with pytest.raises(InputError) as e:
        load_scenario(path)
    return e.value.problems


def test_at_least_six_scenarios_ship():
    assert len(scenario_names()) >= 6


@pytest.mark.parametrize("name", scenario_names())
def test_every_shipped_scenario_validates(name):
    s = load_scenario(name)
    assert s.name == name, "the scenario's name must equal its file name"


def test_shipped_scenarios_cover_the_decisions_readers_recognise():
    tasks = {n: load_scenario(n).workload for n in scenario_names()}
    assert any(w.task == "training" and w.model and "70b" in w.model for w in tasks.values())
    assert any(w.task == "fine-tuning" for w in tasks.values())
    assert any(w.task == "inference" and w.ttft_slo_ms for w in tasks.values())
    assert any(w.task == "inference" and w.batch_window_hours for w in tasks.values())
    assert any(w.model and "mixtral" in w.model for w in tasks.values())


def test_good_minimal_scenario_gets_defaults(write_yaml):
    s = load_scenario(write_yaml(GOOD))
    assert s.workload.precision == "bf16" and s.pricing.utilization == 0.9


def test_title_defaults_to_the_name_so_a_minimal_file_is_accepted(write_yaml):
    s = load_scenario(write_yaml(GOOD.replace("title: test\n", "")))
    assert s.title == "t"
    assert load_scenario(write_yaml(GOOD.replace("title: test", "title: ''"))).title == "t"
    assert load_scenario(write_yaml(GOOD)).title == "test"


def test_yaml_exponent_without_dot_reads_as_number(write_yaml):
    s = load_scenario(write_yaml(GOOD.replace("2.0e+12", "5e4")))
    assert s.workload.tokens == 5e4


def test_word_instead_of_number_names_file_and_field(write_yaml):
    p = write_yaml(GOOD.replace("2.0e+12", "lots"))
    [line] = problems(p)
    assert line.startswith(f"{p}: workload.tokens: expected a number") and "'lots'" in line


def test_unknown_key_is_an_error_not_ignored(write_yaml):
    p = write_yaml(GOOD + "  sequence_length: 2048\n")
    [line] = problems(p)
    assert "workload.sequence_length: unknown key" in line


def test_missing_file(tmp_path):
    [line] = problems(tmp_path / "nope.yaml")
    assert "nope.yaml: file not found" in line


def test_missing_shipped_name_suggests_nearest():
    [line] = problems("llama-70b-pretrian")
    assert "file not found" in line and "llama-70b-pretrain" in line


def test_empty_file(write_yaml):
    [line] = problems(write_yaml("   \n"))
    assert "empty file" in line


def test_yaml_syntax_error_gives_line(write_yaml):
    [line] = problems(write_yaml("name: t\ntitle: [unclosed\nworkload: {}\n"))
    assert "YAML syntax error" in line and "line" in line


def test_unknown_model_suggests_nearest(write_yaml):
    [line] = problems(write_yaml(GOOD.replace("llama-2-7b", "llama-2-7bb")))
    assert "workload.model: unknown model id 'llama-2-7bb'" in line and "did you mean 'llama-2-7b'" in line


def test_unknown_accelerator_suggests_nearest(write_yaml):
    [line] = problems(write_yaml(GOOD + "cluster: {accelerator: H100-SXM5-80G, chips: 8}\n"))
    assert "cluster.accelerator: unknown accelerator id" in line and "H100-SXM5-80GB" in line


@pytest.mark.parametrize("bad", ["0", "-5"])
def test_zero_or_negative_sizes_are_rejected(write_yaml, bad):
    [line] = problems(write_yaml(GOOD.replace("seq_len: 4096", f"seq_len: {bad}")))
    assert "workload.seq_len: expected a number > 0" in line


def test_inference_keys_on_a_training_task(write_yaml):
    [line] = problems(write_yaml(GOOD + "  ttft_slo_ms: 200\n"))
    assert "ttft_slo_ms: inference key(s) on a training task" in line


def test_training_keys_on_an_inference_task(write_yaml):
    text = GOOD.replace("task: training", "task: inference").replace("  seq_len: 4096\n", "  input_tokens: 10\n  output_tokens: 5\n")
    [line] = problems(write_yaml(text))
    assert "tokens: training key(s) on an inference task" in line


def test_several_problems_are_all_reported(write_yaml):
    text = GOOD.replace("2.0e+12", "lots").replace("seq_len: 4096", "seq_len: -1") + "colour: blue\n"
    assert len(problems(write_yaml(text))) == 3


def test_aliases_resolve_to_canonical_ids(write_yaml):
    s = load_scenario(write_yaml(GOOD + "candidates: {accelerators: [h100, v5e]}\n"))
    assert s.candidates.accelerators == ["H100-SXM5-80GB", "TPU-v5e"]


def test_overrides_revalidate():
    s = load_scenario("chat-70b-realtime")
    assert with_overrides(s, **{"pricing.utilization": 0.5}).pricing.utilization == 0.5
    with pytest.raises(InputError):
        with_overrides(s, **{"pricing.utilization": 2})


def test_json_schema_is_generated_and_committed(root):
    committed = json.loads((root / "data" / "scenario.schema.json").read_text())
    assert committed == scenario_schema(), "run `make schema` after changing workbook/scenario.py"


def run_cli(*args):
    """The command in this test's process (tests/cli_helpers.py)."""
    return run_workbook(*args)


def test_cli_validate_ok_exit_0():
    r = run_cli("validate")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(": ok") == len(scenario_names())


def test_cli_validate_bad_exit_2_one_line_no_traceback(write_yaml):
    p = write_yaml(GOOD.replace("2.0e+12", "lots"), "x.yaml")
    r = run_cli("validate", str(p))
    assert r.returncode == 2
    assert r.stderr.strip() == f"{p}: workload.tokens: expected a number, got 'lots'"
    assert "Traceback" not in r.stderr


# --- hostile and careless input (issue 13) -------------------------------------------------------

def _alias_bomb(depth: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, depth)]
    return "\n".join(lines) + "\n" + GOOD.replace("  tokens: 2.0e+12\n", f"  tokens: *a{depth - 1}\n")


def test_alias_bomb_is_refused_quickly_with_a_short_message(write_yaml):
    import time

    text = _alias_bomb(7)                          # 9**7 = 4.8 million strings once expanded
    assert len(text) < 600
    t0 = time.monotonic()
    [line] = problems(write_yaml(text))
    assert time.monotonic() - t0 < 2
    assert "aliases expand to more than" in line and len(line) < 300


def test_a_few_aliases_are_still_fine(write_yaml):
    text = GOOD.replace("  tokens: 2.0e+12\n", "  tokens: &t 2.0e+12\n") + "constraints: {frameworks: [pytorch]}\n"
    assert load_scenario(write_yaml(text)).workload.tokens == 2.0e12


def test_duplicate_key_is_an_error(write_yaml):
    [line] = problems(write_yaml(GOOD + "  seq_len: 2048\n"))
    assert "duplicate key 'seq_len'" in line and "line 8" in line


@pytest.mark.parametrize("bad", [".inf", "-.inf", ".nan", "1e999"])
def test_non_finite_numbers_are_refused(write_yaml, bad):
    [line] = problems(write_yaml(GOOD.replace("2.0e+12", bad)))
    assert "expected a finite number" in line


@pytest.mark.parametrize("word", ["yes", "no", "on", "true"])
def test_yes_no_are_not_numbers(write_yaml, word):
    [line] = problems(write_yaml(GOOD.replace("seq_len: 4096", f"seq_len: {word}")))
    assert "workload" in line and "seq_len" in line and "expected" in line


def test_yes_still_reads_as_a_boolean_flag(write_yaml):
    assert load_scenario(write_yaml(GOOD + "  custom_cuda_kernels: yes\n")).workload.custom_cuda_kernels is True


@pytest.mark.parametrize("key, value", [("tokens", "1e308"), ("seq_len", "1000000000000"),
                                        ("global_batch_tokens", "1e300")])
def test_impossible_sizes_are_out_of_range(write_yaml, key, value):
    text = GOOD + (f"  global_batch_tokens: {value}\n" if key == "global_batch_tokens" else "")
    text = text.replace("2.0e+12", value) if key == "tokens" else text
    text = text.replace("seq_len: 4096", f"seq_len: {value}") if key == "seq_len" else text
    [line] = problems(write_yaml(text))
    assert f"workload.{key}: expected a number <=" in line


def test_every_number_in_the_schema_has_an_upper_bound():
    def walk(node, path):
        if isinstance(node, dict):
            if node.get("type") in ("number", "integer") and "enum" not in node:
                yield path, node
            for k, v in node.items():
                yield from walk(v, f"{path}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from walk(v, f"{path}.{i}")

    unbounded = [p for p, n in walk(scenario_schema(), "") if "maximum" not in n and "exclusiveMaximum" not in n]
    assert unbounded == []


def test_seq_len_beyond_the_models_context_needs_the_override(write_yaml):
    [line] = problems(write_yaml(GOOD.replace("seq_len: 4096", "seq_len: 32768")))
    assert "workload.seq_len: 32768 is beyond llama-2-7b's context of 4096" in line
    s = load_scenario(write_yaml(GOOD.replace("seq_len: 4096", "seq_len: 32768") + "  seq_len_beyond_context: true\n"))
    assert s.workload.seq_len == 32768


def test_empty_pricing_models_and_duplicate_candidates_are_refused(write_yaml):
    [line] = problems(write_yaml(GOOD + "pricing: {models: []}\n"))
    assert "pricing.models" in line
    dup = ", ".join(["H100"] * 1000)
    [line] = problems(write_yaml(GOOD + f"candidates: {{accelerators: [{dup}]}}\n"))
    assert "candidates.accelerators" in line and len(line) < 300


def test_messages_echo_only_an_excerpt_of_a_long_value(write_yaml):
    [line] = problems(write_yaml(GOOD.replace("2.0e+12", "x" * 100_000)))
    assert len(line) < 300 and "..." in line


def test_cli_validate_reads_the_catalogs(tmp_path, monkeypatch, capsys):
    from workbook import catalog, cli, paths

    for f in paths.DATA_DIR.glob("*.csv"):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "offerings.csv").write_text((tmp_path / "offerings.csv").read_text().replace(",H100-SXM5-80GB,", ",H100-NOPE,", 1))
    monkeypatch.setattr(paths, "DATA_DIR", tmp_path)
    catalog.load.cache_clear()
    catalog.resolve_map.cache_clear()
    try:
        assert cli.main(["validate"]) == 2
    finally:
        catalog.load.cache_clear()
        catalog.resolve_map.cache_clear()
    err = capsys.readouterr().err
    assert "offerings.csv: row" in err and "accelerator: unknown id 'H100-NOPE'" in err


# a bounded fuzz test: no scenario dict or YAML text reaches a traceback (InputError or a Scenario)
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from workbook.scenario import parse_scenario  # noqa: E402
from workbook.yamlsafe import read_yaml  # noqa: E402

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True),
                     st.text(max_size=12), st.sampled_from(["llama-2-7b", "H100", "on_demand", "training", "inference"]))
_VALUES = st.recursive(_SCALARS, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                       max_leaves=12)
_KEYS = st.sampled_from(["task", "model", "tokens", "seq_len", "input_tokens", "output_tokens", "requests_per_s",
                         "precision", "global_batch_tokens", "concurrency", "x"])
_SCENARIOS = st.fixed_dictionaries({
    "name": st.sampled_from(["t", "Bad Name", ""]) | st.text(max_size=8), "title": _SCALARS,
    "workload": st.dictionaries(_KEYS, _VALUES, max_size=6) | _VALUES,
    "pricing": st.dictionaries(st.sampled_from(["models", "utilization", "horizon_months"]), _VALUES, max_size=3),
    "candidates": st.dictionaries(st.sampled_from(["accelerators", "clouds"]), _VALUES, max_size=2),
})
_FUZZ = settings(max_examples=60, deadline=500, suppress_health_check=list(HealthCheck), derandomize=True)


@_FUZZ
@given(_SCENARIOS)
def test_fuzz_scenario_dicts_give_a_scenario_or_an_input_error(data):
    try:
        parse_scenario(data, "fuzz.yaml")
    except InputError as e:
        assert all(len(p) < 600 for p in e.problems)


@_FUZZ
@given(st.lists(st.sampled_from(list("ab:&*[]{},-'\"!| \n\t.e0123456789") + ["tokens", "name", "<<", "&a ", "*a"]),
                max_size=40).map("".join))
def test_fuzz_yaml_texts_give_data_or_a_yaml_error(text):
    import yaml

    try:
        data = read_yaml(text)
    except yaml.YAMLError:
        return
    try:
        parse_scenario(data, "fuzz.yaml")
    except InputError:
        pass


def test_read_yaml_hands_out_a_fresh_copy_of_a_document_read_before():
    """``read_yaml`` remembers documents by their text: a second read equals the first, shares no
    object with it (a caller may change its copy) and a refused document is refused every time."""
    text = "name: t\nworkload:\n  task: training\n  tokens: 2e12\n  list: [1, 2]\n"
    first = read_yaml(text)
    first["workload"]["list"].append(3)
    first["name"] = "changed"
    second = read_yaml(text)
    assert second == {"name": "t", "workload": {"task": "training", "tokens": 2e12, "list": [1, 2]}}
    assert second["workload"] is not read_yaml(text)["workload"]
    for _ in range(2):
        with pytest.raises(Exception, match="duplicate key"):
            read_yaml("a: 1\na: 2\n")
