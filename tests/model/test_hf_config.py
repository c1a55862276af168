"""workload.hf_config: a Hugging Face config.json as an Architecture (workbook.hf), read offline."""
import json
from pathlib import Path

import pytest

from workbook import hf, scenario
from workbook.errors import InputError
from workbook.model import profile as prof
from workbook.scenario import Architecture

FIXTURES = Path(__file__).parent / "fixtures" / "hf"


def _profile(cfg: dict):
    return prof.profile_from_architecture(Architecture(**hf.architecture_fields(cfg)), "x")


def _fixture(name):
    return json.loads((FIXTURES / name).read_text())


@pytest.mark.parametrize("fixture, model", [
    ("llama-3.1-8b.json", "llama-3.1-8b"), ("llama-3.1-70b.json", "llama-3.1-70b"),
    ("mistral-7b-v0.3.json", "mistral-7b"), ("mixtral-8x7b.json", "mixtral-8x7b"),
    ("deepseek-v3.json", "deepseek-v3"),
])
def test_parameter_count_from_config_matches_the_catalog_within_1_percent(fixture, model):
    _assert_config_matches_catalog(fixture, model)


def _assert_config_matches_catalog(fixture, model):
    """Parameters (total and active) within 1% of the catalog row, and the same KV-cache width."""
    from_config = _profile(_fixture(fixture))
    row = prof.model_profile(model)
    assert from_config.params_total == pytest.approx(row.params_total, rel=0.01)
    assert from_config.params_active == pytest.approx(row.params_active, rel=0.01)
    assert from_config.kv_cache_dim == row.kv_cache_dim


@pytest.mark.parametrize("fixture, published", [
    ("qwen2.5-7b.json", 7.61e9),   # Qwen2.5-7B model card: "Number of Parameters: 7.61B"
    ("qwen3-8b.json", 8.2e9),      # Qwen3-8B model card: "Number of Parameters: 8.2B"
])
def test_qwen_configs_give_the_published_parameter_count(fixture, published):
    assert _profile(_fixture(fixture)).params_total == pytest.approx(published, rel=0.01)


def test_qwen3_moe_config_gives_the_published_total_and_active_parameters():
    # Qwen3-30B-A3B model card: "Number of Parameters: 30.5B in total and 3.3B activated", "Number of
    # Parameters (Non-Embedding): 29.9B"; the config is the real one (fixtures/hf/README.md)
    p = _profile(_fixture("qwen3-30b-a3b.json"))
    assert p.is_moe and p.experts == 128 and p.experts_per_token == 8
    assert p.params_total == pytest.approx(30.5e9, rel=0.01)
    assert p.params_active == pytest.approx(3.3e9, rel=0.02)
    assert p.params_total - 2 * p.params_embedding == pytest.approx(29.9e9, rel=0.01)   # untied head


def test_deepseek_v3_config_reads_mla_and_leading_dense_layers():
    fields = hf.architecture_fields(_fixture("deepseek-v3.json"))
    assert fields["kv_lora_rank"] == 512 and fields["q_lora_rank"] == 1536 and fields["head_dim"] == 128
    assert fields["dense_layers"] == 3 and fields["shared_experts"] == 1 and fields["experts"] == 256
    assert fields["ffn_hidden"] == 18432 and fields["moe_ffn_hidden"] == 2048


# Built from transformers' configuration keys, with shapes from the models' own publications (no
# whole public config.json copy found; a real Qwen3-MoE config is fixtures/hf/qwen3-30b-a3b.json): Qwen3-235B-A22B (Qwen3 technical report, Table 2: 94 layers,
# 64/4 heads, 128 experts, 8 active; hidden 4096, expert width 1536, vocab 151,936), Gemma 7B
# (Gemma report Table 1: d_model 3072, 28 layers, 16 heads of 256, FFN 49152 = 2 x 24576, vocab
# 256,128 in the report, 256,000 in the release), MPT-7B (MosaicML: d_model 4096, 32 layers, 32
# heads, expansion 4, vocab 50,432) and Pythia-1B (GPT-NeoX; Biderman et al. 2023 Table 1: 16
# layers, d_model 2048, 8 heads).
QWEN3_235B = {"model_type": "qwen3_moe", "hidden_size": 4096, "num_hidden_layers": 94, "num_attention_heads": 64,
              "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 12288, "moe_intermediate_size": 1536,
              "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
              "vocab_size": 151936, "tie_word_embeddings": False}
GEMMA_7B = {"model_type": "gemma", "hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
            "num_key_value_heads": 16, "head_dim": 256, "intermediate_size": 24576, "vocab_size": 256000,
            "hidden_act": "gelu"}
MPT_7B = {"model_type": "mpt", "d_model": 4096, "n_layers": 32, "n_heads": 32, "expansion_ratio": 4,
          "vocab_size": 50432}
PYTHIA_1B = {"model_type": "gpt_neox", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 8,
             "intermediate_size": 8192, "vocab_size": 50304, "tie_word_embeddings": False}


@pytest.mark.parametrize("cfg, model", [(QWEN3_235B, "qwen3-235b-a22b"), (GEMMA_7B, "gemma-7b"), (MPT_7B, "mpt-7b")])
def test_other_families_match_the_catalog_within_1_percent(cfg, model):
    assert _profile(cfg).params_total == pytest.approx(prof.model_profile(model).params_total, rel=0.01)


def test_gpt_neox_is_an_ungated_mlp_with_an_untied_head():
    p = _profile(PYTHIA_1B)
    # Pythia-1B: 1,011,781,632 weights (Hugging Face model card); norms and biases are not counted
    assert p.params_total == pytest.approx(1_011_781_632, rel=0.01)
    assert not p.gated_mlp


@pytest.mark.parametrize("change, key", [
    ({"model_type": "qwen2_vl"}, "model_type 'qwen2_vl' is not supported"),
    ({"decoder_sparse_step": 2}, "decoder_sparse_step = 2 is not supported"),
    ({"mlp_only_layers": [0, 5]}, "mlp_only_layers"),
    ({"num_experts": None}, "num_experts: expected a positive integer"),
    ({"num_key_value_heads": 5}, "must be a multiple of num_key_value_heads"),
])
def test_unsupported_fields_name_the_key(tmp_path, change, key):
    (tmp_path / "config.json").write_text(json.dumps({**QWEN3_235B, **change}))
    problems = hf.problems(tmp_path)
    assert len(problems) == 1 and key in problems[0] and "workload.hf_config" in problems[0]


def _scenario(tmp_path, hf_config):
    (tmp_path / "s.yaml").write_text(
        f"name: s\nworkload: {{task: inference, hf_config: {hf_config}, input_tokens: 512, output_tokens: 128}}\n")
    return tmp_path / "s.yaml"


def test_scenario_reads_a_folder_relative_to_the_scenario_file(tmp_path):
    (tmp_path / "models" / "llama").mkdir(parents=True)
    (tmp_path / "models" / "llama" / "config.json").write_text((FIXTURES / "llama-3.1-8b.json").read_text())
    s = scenario.load_scenario(_scenario(tmp_path, "models/llama"))
    p = prof.workload_profile(s.workload)
    assert p.name == "llama" and p.params_total == pytest.approx(prof.model_profile("llama-3.1-8b").params_total)


def test_a_bad_config_is_one_line_naming_file_and_key(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**QWEN3_235B, "model_type": "rwkv"}))
    with pytest.raises(InputError) as e:
        scenario.load_scenario(_scenario(tmp_path, "config.json"))
    assert len(e.value.problems) == 1
    assert "s.yaml: workload.hf_config" in e.value.problems[0] and "model_type 'rwkv'" in e.value.problems[0]


def test_a_missing_config_is_an_error(tmp_path):
    with pytest.raises(InputError, match="workload.hf_config.*file not found"):
        scenario.load_scenario(_scenario(tmp_path, "nowhere/config.json"))


def test_hf_config_and_model_together_is_an_error():
    with pytest.raises(ValueError, match="give one of model, architecture, generic or hf_config"):
        scenario.Workload(task="inference", model="llama-3.1-8b", hf_config="x", input_tokens=1, output_tokens=1)


# --- issue 24: gpt-oss, Llama 4 (interleaved MoE, text_config), Gemma 3 (text_config), Kimi K2 (MLA) ---
# fixtures/hf/README.md says where each hand-written config's values were read.

@pytest.mark.parametrize("fixture, total, active_without_embedding", [
    ("gpt-oss-20b.json", 20.91e9, 3.61e9),    # OpenAI gpt-oss model card: 20.91B total, 3.61B active
    ("gpt-oss-120b.json", 116.83e9, 5.13e9),  # same card: 116.83B total, 5.13B active
])
def test_gpt_oss_configs_give_the_model_cards_parameters(fixture, total, active_without_embedding):
    p = _profile(_fixture(fixture))
    assert p.is_moe and p.experts_per_token == 4 and p.moe_ffn_hidden == 2880
    assert p.params_total == pytest.approx(total, rel=0.005)
    assert p.params_active - p.params_embedding == pytest.approx(active_without_embedding, rel=0.01)


def test_llama4_reads_text_config_and_counts_the_interleaved_dense_layers():
    scout = hf.architecture_fields(_fixture("llama-4-scout.json"))
    maverick = hf.architecture_fields(_fixture("llama-4-maverick.json"))
    # Scout: interleave_moe_layer_step 1 = every layer MoE; Maverick: 2 = layers 1, 3, ..., 47 MoE
    assert scout["dense_layers"] == 0 and maverick["dense_layers"] == 24
    for f in (scout, maverick):
        assert f["shared_experts"] == 1 and f["experts_per_token"] == 1
        assert f["moe_ffn_hidden"] == 8192 and f["ffn_hidden"] == 16384 and f["head_dim"] == 128
    # Meta: 17B active for both, 400B total for Maverick (109B for Scout includes its vision encoder)
    assert _profile(_fixture("llama-4-maverick.json")).params_total == pytest.approx(400e9, rel=0.01)
    for name in ("llama-4-scout.json", "llama-4-maverick.json"):
        assert _profile(_fixture(name)).params_active == pytest.approx(17e9, rel=0.02)


def test_llama4_explicit_moe_layers_win_over_the_step():
    cfg = _fixture("llama-4-maverick.json")
    cfg["text_config"] = {**cfg["text_config"], "moe_layers": [1, 3, 5]}
    assert hf.architecture_fields(cfg)["dense_layers"] == 45


@pytest.mark.parametrize("fixture, model", [
    ("gpt-oss-20b.json", "gpt-oss-20b"), ("gpt-oss-120b.json", "gpt-oss-120b"),
    ("llama-4-scout.json", "llama-4-scout"), ("llama-4-maverick.json", "llama-4-maverick"),
    ("gemma-3-27b.json", "gemma-3-27b"), ("kimi-k2.json", "kimi-k2"), ("qwen3-8b.json", "qwen3-8b"),
])
def test_new_configs_match_their_catalog_rows(fixture, model):
    _assert_config_matches_catalog(fixture, model)


def test_gemma3_wrapper_takes_transformers_defaults_for_what_its_text_config_leaves_out():
    fields = hf.architecture_fields(_fixture("gemma-3-27b.json"))
    assert fields["vocab"] == 262_208 and fields["tied_embeddings"] is True  # Gemma3TextConfig defaults
    assert fields["layers"] == 62 and fields["kv_heads"] == 16


def test_kimi_k2_is_read_as_deepseek_v3_with_mla():
    fields = hf.architecture_fields(_fixture("kimi-k2.json"))
    assert fields["experts"] == 384 and fields["dense_layers"] == 1 and fields["kv_lora_rank"] == 512
    assert _profile(_fixture("kimi-k2.json")).kv_cache_dim == 576


@pytest.mark.parametrize("cfg, key", [
    ({"model_type": "llava", "text_config": {"model_type": "llama"}}, "text_config"),
    ({**_fixture("llama-4-maverick.json"),
      "text_config": {**_fixture("llama-4-maverick.json")["text_config"], "interleave_moe_layer_step": 0}},
     "text_config: interleave_moe_layer_step"),
])
def test_other_wrappers_and_bad_llama4_steps_name_the_key(tmp_path, cfg, key):
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    problems = hf.problems(tmp_path)
    assert len(problems) == 1 and key in problems[0]
