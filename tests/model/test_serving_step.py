"""The serving step of ``model.replica`` (docs/serving-step.md): weight matmuls and attention one after
the other ("How to Scale Your Model" ch. 7), prompts in whole prompts within a per-step token budget
(Sarathi-Serve; TensorRT-LLM ``max_num_tokens`` = 8192) and TTFT at a batch (residual of the step in
progress + the prompt's own step)."""
import math

import pytest

from workbook import catalog
from workbook.model import replica
from workbook.model.efficiency import Efficiency
from workbook.model.profile import model_profile

H100 = "H100-SXM5-80GB"


@pytest.fixture(scope="module")
def setup():
    return Efficiency.from_csv(), model_profile("llama-3-8b"), catalog.accelerator_record(H100)


def _step(eff, p, acc, batch, ctx, **kw):
    return replica.decode_step_parts(eff, p, acc, batch, ctx, 1, "bf16", "bf16", "bf16", **kw)


def test_kv_reads_do_not_hide_under_the_matmul_flops_of_a_large_batch(setup):
    """At batch 512 and 512-token context the weight matmuls are compute-bound and the KV reads (512 x
    512 tokens x 128 KiB = 34 GB) are not: the step is their sum, longer than one roofline over both."""
    eff, p, acc = setup
    d = _step(eff, p, acc, 512, 512)
    assert d["linear_compute_s"] > d["weight_memory_s"] and d["kv_memory_s"] > d["attention_compute_s"]
    t = float(replica.step_s(d))
    assert t == pytest.approx(float(d["linear_compute_s"] + d["kv_memory_s"] + d["comm_s"]), rel=1e-12)
    assert t > float(max(d["memory_s"], d["compute_s"]) + d["comm_s"]) * 1.2
    assert d["memory_s"] == pytest.approx(d["weight_memory_s"] + d["kv_memory_s"])


def test_a_small_batch_with_long_answers_carries_whole_prompts_in_a_few_steps(setup):
    """Batch 4, 4,096-token prompts, 512-token answers: 4 x 8 = 32 prompt tokens per step on average,
    but as one whole prompt every 128 steps; TPOT is the mean of the two kinds of step and exceeds the
    thin spread, whose prompt FLOPs would hide under the weight reads."""
    eff, p, acc = setup
    pt = replica.serving_point(eff, p, acc, 4, 4096, 512, 1, "bf16", "bf16", "bf16")
    ctx = 4096 + 256
    with_prompt = replica.step_s(_step(eff, p, acc, 4, ctx, prefill_tokens=4096, prefill_context=4096))
    plain = replica.step_s(_step(eff, p, acc, 4, ctx))
    f = 4 * 4096 / 512 / 4096
    assert float(pt["tpot_s"]) == pytest.approx(f * float(with_prompt) + (1 - f) * float(plain), rel=1e-9)
    thin = replica.step_s(_step(eff, p, acc, 4, ctx, prefill_tokens=32, prefill_context=4096))
    assert float(pt["tpot_s"]) > float(thin)


def test_the_step_token_budget_caps_the_sequences_in_decode(setup):
    """128-token prompts and answers: each sequence in decode needs one prompt token per step besides
    its own, so 8,192 tokens per step hold at most 4,096 sequences; a larger batch serves no more."""
    eff, p, acc = setup
    big = replica.serving_point(eff, p, acc, 8000, 128, 128, 1, "bf16", "bf16", "bf16")
    cap = replica.serving_point(eff, p, acc, 4096, 128, 128, 1, "bf16", "bf16", "bf16")
    assert replica.STEP_TOKENS == 8192
    assert float(big["output_tokens_per_s"]) == pytest.approx(float(cap["output_tokens_per_s"]), rel=1e-9)
    assert float(big["tpot_s"]) == pytest.approx(float(cap["tpot_s"]), rel=1e-9)  # 4,096 in decode, not 8,000
    wider = replica.serving_point(eff, p, acc, 8000, 128, 128, 1, "bf16", "bf16", "bf16", step_tokens=16384)
    assert float(wider["tpot_s"]) > 1.5 * float(big["tpot_s"])


def test_ttft_alone_is_the_prompts_own_step_and_grows_with_the_batch_it_joins(setup):
    """Batch 1: nothing else runs, TTFT = one step of the 2,048-token prompt. Batch 64: the rest of the
    others' step in progress and their decode tokens beside the prompt make it longer."""
    eff, p, acc = setup
    one = replica.serving_point(eff, p, acc, 1, 2048, 256, 1, "bf16", "bf16", "bf16")
    alone = replica.step_s(_step(eff, p, acc, 0, 2048 + 128, prefill_tokens=2048, prefill_context=2048))
    assert float(one["ttft_s"]) == pytest.approx(float(alone), rel=1e-9)
    many = replica.serving_point(eff, p, acc, 64, 2048, 256, 1, "bf16", "bf16", "bf16")
    assert float(many["ttft_s"]) > float(one["ttft_s"]) * 1.05
    assert math.isfinite(float(many["ttft_s"]))


def test_prompt_wait_is_the_mg1_wait_with_decode_steps_as_vacations():
    """Worked example of Bertsekas & Gallager, "Data Networks" §3.5 (W = R / (1 - rho)): one step in
    ten carries a prompt (f = 0.1) and lasts 0.4 s, a decode-only step 0.025 s. Mean step
    T = 0.04 + 0.0225 = 0.0625 s; the rest of the step in progress R = (0.1 * 0.16 + 0.9 * 0.000625)
    / (2 * 0.0625) = 0.1325 s; with one prompt per step the budget is busy rho = 0.04 / 0.0625 =
    0.64, so W = 0.1325 / 0.36 = 0.36806 s. With no prompt traffic the wait is the rest of one
    decode step, 0.0125 s."""
    assert float(replica.prompt_wait_s(0.1, 0.4, 0.025, 0.64)) == pytest.approx(0.1325 / 0.36, rel=1e-12)
    assert float(replica.prompt_wait_s(0.0, 0.4, 0.025, 0.0)) == pytest.approx(0.0125, rel=1e-12)


def test_a_step_takes_whole_prompts_up_to_its_free_budget():
    """8,192 tokens less 50 in decode leave 8,142: one 5,000-token prompt, seven of 1,024 tokens, and
    a 20,000-token prompt spans 20,000 / 8,142 = 2.456 steps (0.407 prompts per step)."""
    assert float(replica.prompts_per_step(5000, 8142)) == 1.0
    assert float(replica.prompts_per_step(1024, 8142)) == 7.0
    assert float(replica.prompts_per_step(20000, 8142)) == pytest.approx(8142 / 20000, rel=1e-12)


def test_ttft_at_a_concurrency_holds_the_wait_behind_other_prompts(setup):
    """TTFT = prompt_wait_s of the others' steps + the prompt's own step, the budget's utilisation
    rho = lambda * T_chunk / k with lambda = others / (O * T); the wait grows faster than the
    concurrency as prompts fill the steps (NVIDIA NIM's Llama 3.3 70B on 2 H100 at 5,000/500 tokens:
    TTFT 547, 689, 835 ms at concurrency 5, 25, 50)."""
    eff, p, acc = setup
    I, O, b = 6000, 256, 64
    ce_d = replica.compute_efficiency(eff, acc, "bf16", "decode", p, tp=1)
    ce_p = replica.compute_efficiency(eff, acc, "bf16", "prefill", p, tp=1)
    kw = dict(mem_eff=None, latency_s=None, layout=None)
    o = replica._chunked_step(eff, p, acc, b - 1, I, O, 1, "bf16", "bf16", "bf16", ce_d, ce_p, replica.STEP_TOKENS, kw)
    rho = (b - 1) / (O * float(o["mean"])) * float(o["t_chunk"]) / 1.0   # one 6,000-token prompt per step
    own = replica.step_s(_step(eff, p, acc, b - 1, I + O / 2, prefill_tokens=I, prefill_context=I))
    want = float(replica.prompt_wait_s(o["f"], o["t_chunk"], o["t_plain"], rho, b - 1, 1.0)) + float(own)
    pt = replica.serving_point(eff, p, acc, b, I, O, 1, "bf16", "bf16", "bf16")
    assert 0.1 < rho < 1.0
    assert float(pt["ttft_s"]) == pytest.approx(want, rel=1e-9)
    t = [float(replica.serving_point(eff, p, acc, n, I, O, 1, "bf16", "bf16", "bf16")["ttft_s"]) for n in (8, 64, 128)]
    assert t[0] < t[1] < t[2] and (t[2] - t[1]) / 64 > (t[1] - t[0]) / 56


def test_prompt_wait_is_bounded_by_the_other_prompts_of_a_closed_population():
    """Steps full of prompts (rho = 1): an open queue would wait forever, but with 3 other sequences
    at most 3 prompts (0.4 s each, one per step) and the step in progress are ahead: 1.6 s."""
    assert float(replica.prompt_wait_s(1.0, 0.4, 0.025, 1.0, 3, 1.0)) == pytest.approx(1.6, rel=1e-12)
