"""Answer lengths that vary (``model.lengths``, docs/serving-step.md "Answer lengths that vary"): the
ShareGPT distribution fitted to SGLang's published figures, the slot context of renewal-reward
(Ross, "Stochastic Processes" §3.6), the batch's drain at the end of an offline run (the equilibrium
residual, Ross §3.4) and the prefill of the first batch."""
import math

import numpy as np
import pytest

from workbook import catalog
from workbook.model import lengths, replica
from workbook.model.efficiency import Efficiency, compute_efficiency
from workbook.model.profile import model_profile

H100 = "H100-SXM5-80GB"


def _point(o: float) -> lengths.AnswerLengths:
    """Every answer ``o`` tokens (mean = median: σ = 0)."""
    return lengths.AnswerLengths(mean=o, median=o, max_tokens=1e9, source="test")


def test_sharegpt_answers_keep_the_published_mean_and_median_under_the_samplers_bound():
    """SGLang v0.3.0 benchmark README (@120affb): mean answer 4281.51 / 22.03 = 194.3 tokens; median
    (1564.17 − 31.98) / 13.17 + 1 = 117 to (3005.24 − 53.94) / 25.03 + 1 = 119; answers <= 2,044 tokens.
    Untruncated σ = √(2·ln(194.3/119)) = 0.990; the truncation at 2,044 drops the longest 0.3%, so the
    fitted σ is a little larger (1.03) to keep the mean."""
    d = lengths.DATASETS["sharegpt-sglang-bench"]
    o = lengths.answer_quantiles(d)
    assert (4281.51 / 22.03) == pytest.approx(194.3, abs=0.05)
    assert (1564.17 - 31.98) / 13.17 + 1 == pytest.approx(117.3, abs=0.1)
    assert (3005.24 - 53.94) / 25.03 + 1 == pytest.approx(118.9, abs=0.1)
    assert math.sqrt(2 * math.log(194.3 / 119)) == pytest.approx(0.990, abs=0.001)
    assert float(o.mean()) == pytest.approx(194.3, rel=1e-6)
    assert float(np.median(o)) == pytest.approx(119, rel=0.01)
    assert float(o.max()) <= 2044 and 0.99 < d.sigma < 1.06


def test_a_slot_holds_the_length_biased_context():
    """Renewal-reward: a slot's mean context over its steps is I + E[O²]/(2·E[O]). All answers 200
    tokens: 219 + 100 = 319 (the mean-length model's I + O/2). A lognormal of median 100 and σ = 1
    (mean 100·e^0.5 = 164.9, E[O²]/(2E[O]) = 164.9·e^1 / 2 = 224.1): 219 + 224.1 = 443.1, 1.36x the
    219 + 164.9/2 = 301.4 of the mean; the 400 quantiles catch it within 3%."""
    assert lengths.slot_tokens(219, _point(200.0)) == pytest.approx(319.0)
    assert lengths.slot_tokens(219, None, 200) == pytest.approx(319.0)
    d = lengths.AnswerLengths(mean=100 * math.exp(0.5), median=100.0, max_tokens=1e9, source="test")
    assert d.sigma == pytest.approx(1.0, abs=0.02)
    assert lengths.slot_tokens(219, d) == pytest.approx(219 + 164.87 * math.e / 2, rel=0.03)


def test_the_batch_drains_linearly_when_every_answer_has_the_same_length():
    """All answers 200 tokens, 256 slots: the residuals are uniform on [0, 200], so t steps into the drain
    256·(200 − t)/200 sequences remain (192 at t = 50, 0 at 200), 256·100 = 25,600 tokens in all. With
    100 requests on 256 slots all start at once: 100 decode until step 200."""
    d = _point(200.0)
    b = lengths.drain_batch(d, 256, 2560, [0, 50, 200])
    assert b.tolist() == pytest.approx([256, 192, 0])
    t = np.linspace(0, 200, 2001)
    assert float(np.trapezoid(lengths.drain_batch(d, 256, 2560, t), t)) == pytest.approx(25_600, rel=1e-6)
    assert lengths.drain_batch(d, 256, 100, [50, 199, 201]).tolist() == pytest.approx([100, 100, 0])


@pytest.fixture(scope="module")
def setup():
    return Efficiency.from_csv(), model_profile("llama-3-8b"), catalog.accelerator_record(H100)


def test_an_offline_run_is_its_steady_steps_plus_the_drain_plus_the_first_prompts(setup):
    """2,560 requests of 219-token prompts and 200-token answers on 256 slots: 512,000 tokens; the drain
    carries 25,600 of them, so (512,000 − 25,600)/256 = 1,900 steady steps; the drain ∫ T(b(t))·(1 −
    e^−b(t)) dt over b(t) = 256·(200 − t)/200; the first batch's prompts, 25,600·219/200 = 28,032 tokens,
    prefilled on top. The run is slower than the steady state and its mean batch below 256."""
    eff, p, acc = setup
    d = _point(200.0)
    out = lengths.offline_tokens_per_s(eff, p, acc, 256, 219, d, 2560, 1, "bf16", "bf16", "bf16")
    steady = replica.serving_point(eff, p, acc, 256, 219, 200, 1, "bf16", "bf16", "bf16")
    t = np.linspace(0, 200, 4001)
    b = 256 * (200 - t) / 200
    ce = compute_efficiency(eff, acc, "bf16", "decode", p, tp=1)
    step = replica.decode_step_s(eff, p, acc, np.maximum(b, 1.0), 219 + 100, 1, "bf16", "bf16", "bf16", compute_eff=ce)
    drain = float(np.trapezoid(step * (1 - np.exp(-b)), t))
    burst = float(replica.prefill_s(eff, p, acc, 28_032, 219, 1, "bf16", "bf16",
                                    compute_eff=compute_efficiency(eff, acc, "bf16", "prefill", p, tp=1)))
    expect = 512_000 / (1900 * float(steady["tpot_s"]) + drain + burst)
    assert float(out["output_tokens_per_s"]) == pytest.approx(expect, rel=0.01)
    assert float(out["output_tokens_per_s"]) < float(steady["output_tokens_per_s"])
    assert 200 < float(out["mean_batch"]) < 256


def test_a_long_offline_run_approaches_the_steady_state(setup):
    """With 10 million requests the drain and the first batch are a vanishing share: the offline figure
    equals the steady serving point within 0.1% (all answers 200 tokens: the same decode context)."""
    eff, p, acc = setup
    out = lengths.offline_tokens_per_s(eff, p, acc, 256, 219, _point(200.0), 1e7, 1, "bf16", "bf16", "bf16")
    steady = replica.serving_point(eff, p, acc, 256, 219, 200, 1, "bf16", "bf16", "bf16")
    assert float(out["output_tokens_per_s"]) == pytest.approx(float(steady["output_tokens_per_s"]), rel=1e-3)


def test_varied_answers_serve_fewer_tokens_per_second_than_their_mean(setup):
    """ShareGPT's answers (σ ≈ 1) against every answer at the 194.3-token mean, 256 slots, 5,000 requests:
    the longer slot context (219 + 231 against 219 + 97 tokens) and the longer drain (the longest answers
    run on alone) both cost throughput."""
    eff, p, acc = setup
    share = lengths.offline_tokens_per_s(eff, p, acc, 256, 219, lengths.DATASETS["sharegpt-sglang-bench"], 5000, 1,
                                         "bf16", "bf16", "bf16")
    mean = lengths.offline_tokens_per_s(eff, p, acc, 256, 219, _point(194.3), 5000, 1, "bf16", "bf16", "bf16")
    assert lengths.slot_tokens(219, lengths.DATASETS["sharegpt-sglang-bench"]) == pytest.approx(219 + 231, abs=2)
    assert float(share["output_tokens_per_s"]) < 0.97 * float(mean["output_tokens_per_s"])
    assert float(share["drain_s"]) > 2 * float(mean["drain_s"])


def test_an_unknown_dataset_is_one_clear_error():
    with pytest.raises(ValueError, match="request_lengths: unknown 'sharegpt'; expected one of sharegpt-sglang-bench"):
        lengths.dataset("sharegpt")
    assert lengths.dataset(None) is None and lengths.dataset(float("nan")) is None


def test_a_scenario_naming_sharegpt_lengths_fits_fewer_sequences_and_decodes_longer_contexts():
    """Llama 3 8B on one H100, 1,000-token prompts and 500-token answers: with ``request_lengths:
    sharegpt-sglang-bench`` a slot holds 1,000 + 500·(231/194.3) ≈ 1,594 tokens on average instead of
    the 1,500 it is sized for without, so fewer sequences fit memory (floor(budget / (1,594·128 KiB))),
    and the chosen point's TPOT is no faster."""
    from workbook.model import serving
    from workbook.scenario import Workload
    p, acc = model_profile("llama-3-8b"), catalog.accelerator_record(H100)
    base = dict(task="inference", model="llama-3-8b", precision="bf16", input_tokens=1000, output_tokens=500)
    plain = serving.estimate_serving(p, acc, Workload(**base), 0.1)
    varied = serving.estimate_serving(p, acc, Workload(**base, request_lengths="sharegpt-sglang-bench"), 0.1)
    d = lengths.DATASETS["sharegpt-sglang-bench"]
    seq = lengths.slot_tokens(1000, d, 500)
    assert seq == pytest.approx(1000 + 500 * 231 / 194.3, rel=0.01)
    budget = float(replica.kv_budget_bytes(p, acc, 1, "bf16", 0.1))
    per_token = float(replica.kv_bytes_per_token_held(p, acc, 1, "bf16"))
    assert per_token == 131072
    assert plain["max_batch"] == math.floor(budget / (1500 * per_token))
    assert varied["max_batch"] == math.floor(budget / (seq * per_token)) < plain["max_batch"]
    assert varied["tpot_ms"] >= plain["tpot_ms"] * 0.999


def test_request_lengths_is_a_serving_key():
    from workbook.scenario import Workload
    with pytest.raises(ValueError, match="request_lengths"):
        Workload(task="training", model="llama-3-8b", precision="bf16", tokens=1e9, request_lengths="sharegpt-sglang-bench")
    from workbook import terms
    assert set(terms.REQUEST_LENGTHS) == set(lengths.DATASETS)
