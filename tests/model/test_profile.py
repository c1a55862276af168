"""Workload profile: parameter counts, FLOPs, memory and intensity against worked examples."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbook.model import profile as prof
from workbook.scenario import Architecture, GenericProfile, Workload


def test_llama3_70b_parameters_and_kv_cache_match_scaling_book():
    """'How to Scale Your Model' ch. 6 (LLaMA 3-70B worked example): ~70B parameters; KV cache
    2 · 8 kv heads · 128 · 80 layers = 163,840 values per token, 327,680 bytes in bf16."""
    p = prof.model_profile("llama-3-70b")
    assert p.params_total == pytest.approx(70.6e9, rel=0.01)
    assert prof.kv_cache_bytes_per_token(p, "bf16") == 2 * 8 * 128 * 80 * 2


def test_mixtral_total_and_active_parameters_match_mistral():
    """Mistral AI, 'Mixtral of experts' (2023-12-11): 46.7B total, 12.9B used per token."""
    p = prof.model_profile("mixtral-8x7b")
    assert p.params_total == pytest.approx(46.7e9, rel=0.01)
    assert p.params_active == pytest.approx(12.9e9, rel=0.01)
    assert p.is_moe


def test_deepseek_v3_counts_multi_head_latent_attention_671b_total_37b_active():
    """DeepSeek-AI 2024, 'DeepSeek-V3 Technical Report' (arXiv:2412.19437) §1/§4.2: 671B total
    parameters, 37B activated per token. With MLA counted as low-rank projections (DeepSeek-V2
    §2.1; config.json: q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128,
    128 heads) attention is 187.1M weights per layer, not 4·h·H·Q = 469.8M."""
    p = prof.model_profile("deepseek-v3")
    assert p.params_total == pytest.approx(671e9, rel=0.01)
    assert p.params_active == pytest.approx(37.5e9, rel=0.01)
    assert prof.attention_params(7168, 128, 128, 128, 1536, 512, 64, 128) == pytest.approx(187.1e6, rel=1e-3)
    assert p.kv_cache_dim == 512 + 64  # the latent and the shared rotary key (DeepSeek-V2 §2.1.2)


def test_mla_attention_flops_use_query_key_and_value_widths():
    """QKᵀ over d_nope + d_rope = 192 and AV over d_v = 128 per head: 2·L·H·(192 + 128)·context."""
    p = prof.model_profile("deepseek-v3")
    assert prof.attention_flops_per_token(p, 1000, causal=False) == pytest.approx(2 * 61 * 128 * (192 + 128) * 1000)


def test_training_flops_follow_the_6nd_rule_when_attention_vanishes():
    """Kaplan et al. 2020: C ≈ 6·N·D for N matmul weights and D tokens (attention term → 0 as S → 0)."""
    p = prof.model_profile("llama-2-7b")
    assert prof.training_flops(p, 1e12, seq_len=1) == pytest.approx(6 * p.params_matmul_active * 1e12, rel=1e-3)


def test_palm_mfu_definition_adds_12_L_H_Q_S_per_token():
    """Chowdhery et al. 2022 App. B: 6N + 12·L·H·Q·S model FLOPs per token."""
    p = prof.model_profile("gpt-3-175b")
    s = 2048
    assert prof.train_flops_per_token(p, s) == pytest.approx(6 * p.params_matmul_active + 12 * 96 * 96 * 128 * s)


def test_mixed_precision_adam_keeps_16_bytes_per_parameter():
    """ZeRO (Rajbhandari et al. 2020) §3.1: 2 + 2 + 12 bytes per parameter."""
    assert prof.training_state_bytes_per_param("bf16", "adam") == 16


def test_activation_memory_matches_korthikanti_for_a_gpt_layer():
    """Korthikanti et al. 2022 §4.1: s·b·h·(34 + 5·a·s/h) bytes per layer without recomputation,
    for a GPT layer (f = 4h, GeLU); selective recomputation drops 5·a·s/h; full keeps 2·s·b·h."""
    arch = Architecture(layers=1, hidden=4096, ffn_hidden=16384, heads=32, kv_heads=32, vocab=50000, gated_mlp=False)
    p = prof.profile_from_architecture(arch)
    s = 2048
    none = prof.activation_bytes(p, s, 1, "none", flash_attention=False)
    assert none == pytest.approx(s * 4096 * (34 + 5 * 32 * s / 4096))
    assert prof.activation_bytes(p, s, 1, "selective") == pytest.approx(s * 4096 * 34)
    assert prof.activation_bytes_per_token_per_layer(p, s, "full") == pytest.approx(2 * 4096)


def test_grouped_query_attention_shrinks_the_kv_cache_by_heads_over_kv_heads():
    """Ainslie et al. 2023: the KV cache scales with kv_heads, not heads."""
    mha = prof.model_profile("llama-2-70b")  # 8 kv heads of 64
    arch = Architecture(layers=80, hidden=8192, ffn_hidden=28672, heads=64, kv_heads=64, vocab=32000)
    full = prof.profile_from_architecture(arch)
    assert prof.kv_cache_bytes_per_token(full) / prof.kv_cache_bytes_per_token(mha) == pytest.approx(8)


def test_decode_at_batch_1_does_about_one_flop_per_weight_byte_in_bf16():
    """scaling-book ch. 7: a decode step at batch B has arithmetic intensity ≈ B FLOPs/byte for bf16
    weights at short context (2 FLOPs per weight, 2 bytes per weight)."""
    p = prof.model_profile("llama-3.1-8b")
    ai = prof.decode_arithmetic_intensity(p, 1, context=16)
    assert 0.9 < float(ai) < 1.1


def test_tied_embedding_is_read_once_per_decode_step():
    """Llama 3.2 1B ties its embedding to the output layer: decode reads it once (as the output
    layer) and the input lookup reads only a few rows."""
    p = prof.model_profile("llama-3.2-1b")
    read = prof.decode_weight_bytes_read(p, 1, "bf16")
    assert read == pytest.approx(p.params_total * 2, rel=1e-6)


def test_moe_decode_reads_more_experts_as_the_batch_grows():
    p = prof.model_profile("mixtral-8x7b")
    one, many = prof.decode_weight_bytes_read(p, np.array([1.0, 512.0]), "bf16")
    assert one < many <= p.params_total * 2
    assert one == pytest.approx((p.params_active - p.params_embedding) * 2, rel=1e-6)


def test_catalog_model_with_blank_optional_columns_builds_a_profile():
    for m in ("llama-2-7b", "deepseek-v3", "gpt-oss-120b", "qwen3-235b-a22b"):
        assert prof.model_profile(m).params_total > 1e9


def test_generic_workload_uses_its_own_counts():
    w = Workload(task="training", generic=GenericProfile(params=25e6, train_flops_per_sample=12e9), samples=1e6)
    p = prof.workload_profile(w)
    assert p.generic and p.params_total == 25e6 and p.train_flops_per_sample == 12e9


@settings(max_examples=40, deadline=None)
@given(b1=st.integers(1, 64), b2=st.integers(1, 64), s1=st.integers(128, 8192), s2=st.integers(128, 8192))
def test_memory_grows_with_batch_and_sequence(b1, b2, s1, s2):
    p = prof.model_profile("llama-3.1-8b")
    lo_b, hi_b = sorted((b1, b2))
    lo_s, hi_s = sorted((s1, s2))
    for rc in ("none", "selective", "full"):
        assert prof.activation_bytes(p, lo_s, lo_b, rc) <= prof.activation_bytes(p, hi_s, hi_b, rc)
    assert prof.kv_cache_bytes_per_token(p) * lo_s * lo_b <= prof.kv_cache_bytes_per_token(p) * hi_s * hi_b
