"""The scenario file: every shipped one validates; every bad input gives one clear line naming file and field."""
import json
import subprocess
import sys

import pytest

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
    return subprocess.run([sys.executable, "-m", "workbook", *args], capture_output=True, text=True)


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
