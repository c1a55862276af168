"""The models of issue 24 load by id and `estimate` answers for them."""
import json

import pytest
from cli_helpers import run_workbook

import workbook as wb
from workbook.model import estimate

NEW_MODELS = ["gpt-oss-20b", "gpt-oss-120b", "llama-4-scout", "llama-4-maverick", "qwen3-8b", "qwen3-32b",
              "gemma-3-27b", "kimi-k2", "deepseek-ai/DeepSeek-V3.1"]


@pytest.mark.parametrize("model", NEW_MODELS)
def test_new_model_loads_by_id_and_is_served(model):
    s = wb.with_overrides(wb.load_scenario("chat-70b-realtime"),
                          **{"workload.model": model, "workload.requests_per_s": 1, "workload.tpot_slo_ms": 200,
                             "workload.ttft_slo_ms": 5000, "candidates.accelerators": ["H200-SXM-141GB"]})
    row = estimate.estimate_inference(s, "H200-SXM-141GB")
    assert row["fits"] and row["chips"] >= 1 and row["tpot_ms"] > 0


@pytest.mark.parametrize("model", ["gpt-oss-20b", "llama-4-maverick"])
def test_estimate_command_answers_for_a_scenario_on_the_new_models(tmp_path, model):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nworkload: {{task: inference, model: {model}, precision: fp8, input_tokens: 1024, "
                    "output_tokens: 256, requests_per_s: 2}\ncandidates: {accelerators: [H100-SXM5-80GB]}\n")
    r = run_workbook("estimate", path, "--json")   # in this process: the command's code without an interpreter's start
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert [o["accelerator"] for o in d["options"]] == ["H100-SXM5-80GB"] and d["options"][0]["fits"]
