"""The team's own runs (scenario ``measurements``; ``calibrate --runs``): read and converted like the
published runs, compared with the model, and an explicit efficiency adjustment of the measured chip
that outranks the published calibration near them (issue 16)."""
import io
import math
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

import workbook as wb
from workbook import catalog
from workbook.analysis import analyse, summary_json, with_and_without_measurements
from workbook.calibrate import own
from workbook.cli import main
from workbook.errors import InputError
from workbook.model import estimate
from workbook.model.efficiency import Efficiency, scope_of
from workbook.model.profile import model_profile, train_flops_per_token

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "measurements_sample.csv"
COLUMNS = "run,kind,accelerator,chips,model,precision,seq_len,global_batch_tokens,tokens_per_s,input_tokens,output_tokens,concurrency,output_tokens_per_s,tpot_ms,ttft_ms\n"


def _tokens_per_s(mfu, chips, model="llama-3.1-8b", seq=8192, acc="H100-SXM5-80GB"):
    peak = catalog.peak_flops_per_s(catalog.accelerator_record(acc), "bf16")
    return mfu * chips * peak / float(train_flops_per_token(model_profile(model), seq))


def _scenario(tmp_path, csv_text=None, name="own"):
    """llama-8b-finetune with ``measurements:`` next to it (the sample, or ``csv_text``)."""
    if csv_text is None:
        shutil.copy(SAMPLE, tmp_path / "runs.csv")
    else:
        (tmp_path / "runs.csv").write_text(csv_text)
    text = (Path(wb.paths.SCENARIO_DIR) / "llama-8b-finetune.yaml").read_text().replace("name: llama-8b-finetune", f"name: {name}")
    (tmp_path / f"{name}.yaml").write_text(text + "measurements: runs.csv\n")
    return wb.load_scenario(tmp_path / f"{name}.yaml")


@pytest.fixture(scope="module")
def sample_runs():
    return own.to_runs(own.read_measurements(SAMPLE))


def test_training_runs_convert_tokens_per_second_to_palm_mfu(sample_runs):
    train = sample_runs[sample_runs["metric"] == "mfu"]
    assert train["value"].tolist() == pytest.approx([0.24, 0.25, 0.26], abs=1e-4)
    serve = sample_runs[sample_runs["metric"] == "output_tokens_per_s_per_chip"]
    assert serve["value"].tolist() == [1500.0]


def test_calibrate_runs_prints_the_same_table_for_the_teams_runs():
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["calibrate", "--runs", str(SAMPLE)]) == 0
    text = out.getvalue()
    for run in ("h100-8b-8", "h100-8b-16", "h100-8b-32", "h100-8b-serve"):
        assert run in text
    assert "median_abs_error" in text and "nvidia-hopper" in text


def test_bad_rows_give_one_line_naming_file_row_and_column(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text(COLUMNS + "a,training,H100,8,llama-3.1-8b,bf16,8192,1e6,lots,,,,,,\n"
                   "b,training,H1000,8,llama-3.1-8b,bf16,8192,1e6,5,,,,,,\n")
    with pytest.raises(InputError) as e:
        own.read_measurements(bad)
    assert e.value.problems[0].endswith("bad.csv: row 2: tokens_per_s: expected a number above 0 and at most 1e+15, got 'lots'")
    assert "row 3: accelerator: unknown accelerator id 'H1000'" in e.value.problems[1]
    err = io.StringIO()
    with redirect_stderr(err):
        assert main(["calibrate", "--runs", str(bad)]) == 2


def test_unknown_column_is_an_error(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("accelerator,chips,model,precision,tokens_per_sec\nH100,8,llama-3.1-8b,bf16,5\n")
    with pytest.raises(InputError, match="unknown column 'tokens_per_sec'"):
        own.read_measurements(bad)


@pytest.fixture(scope="module")
def adjusted(tmp_path_factory):
    s = _scenario(tmp_path_factory.mktemp("own"))
    eff, adj, runs = own.scenario_efficiency(s, model_profile("llama-3.1-8b"))
    return s, eff, adj, runs, estimate.compare(s), estimate.compare(s, eff)


def test_consistent_runs_pull_the_chip_within_15_percent(adjusted):
    s, eff, adj, runs, before, after = adjusted
    h100_before = before.set_index("accelerator").loc["H100-SXM5-80GB", "mfu"]
    h100_after = after.set_index("accelerator").loc["H100-SXM5-80GB", "mfu"]
    assert h100_before > 0.4                       # the published calibration: near 0.48
    assert h100_after == pytest.approx(0.25, rel=0.15)
    assert list(adj["parameter"]) == ["matmul_ceiling"] and adj["after"].iloc[0] < adj["before"].iloc[0]
    assert adj["median_abs_error_after"].iloc[0] < 0.15 < adj["median_abs_error_before"].iloc[0]


def test_other_chips_do_not_move_not_even_in_the_same_family(adjusted):
    s, eff, adj, runs, before, after = adjusted
    b, a = before.set_index("accelerator"), after.set_index("accelerator")
    others = [c for c in b.index if c != "H100-SXM5-80GB"]
    assert "H200-SXM-141GB" in others              # same family (nvidia-hopper) as H100
    for col in ("mfu", "mfu_low", "mfu_high", "training_days", "chips"):
        pd.testing.assert_series_equal(b.loc[others, col], a.loc[others, col])


def test_the_band_narrows_where_the_runs_agree(adjusted):
    s, eff, adj, runs, before, after = adjusted
    b, a = before.set_index("accelerator").loc["H100-SXM5-80GB"], after.set_index("accelerator").loc["H100-SXM5-80GB"]
    assert a["mfu_low"] <= a["mfu"] <= a["mfu_high"]
    assert a["mfu_high"] / a["mfu_low"] < b["mfu_high"] / b["mfu_low"]


def test_runs_that_disagree_keep_a_wide_band(tmp_path):
    rows = "".join(f"r{i},training,H100-SXM5-80GB,8,llama-3.1-8b,bf16,8192,1048576,{_tokens_per_s(m, 8):.0f},,,,,,\n"
                   for i, m in enumerate((0.12, 0.25, 0.45)))
    s = _scenario(tmp_path, COLUMNS + rows, "disagree")
    eff, adj, runs = own.scenario_efficiency(s, model_profile("llama-3.1-8b"))
    lo, hi = eff.get("band_p10_mfu", "H100-SXM5-80GB"), eff.get("band_p90_mfu", "H100-SXM5-80GB")
    sd = pd.Series([math.log(x) for x in (0.12, 0.25, 0.45)]).std()
    assert math.log(hi / lo) == pytest.approx(2 * 1.2816 * sd, rel=0.15)   # the runs' own spread, not narrower


def test_far_runs_are_listed_but_not_used(adjusted, tmp_path):
    s, eff, adj, runs, before, after = adjusted
    used = runs.set_index("run")["used"]
    assert not used["h100-8b-serve"]               # a serving run, the scenario trains
    far = COLUMNS + f"big,training,H100-SXM5-80GB,64,llama-3.1-70b,bf16,8192,4194304,{_tokens_per_s(0.2, 64, 'llama-3.1-70b'):.0f},,,,,,\n"
    s2 = _scenario(tmp_path, far, "far")
    eff2, adj2, runs2 = own.scenario_efficiency(s2, model_profile("llama-3.1-8b"))
    assert not runs2["used"].any() and adj2.empty and eff2 == Efficiency.from_csv()


def test_serving_runs_move_the_decode_efficiency_of_their_chip(sample_runs):
    serve = sample_runs[sample_runs["kind"] == "inference"]
    use = own.near(serve, "inference", "bf16", model_profile("llama-3.1-8b").params_active)
    eff, adj = own.adjust(Efficiency.from_csv(), serve, use)
    assert list(adj["parameter"]) == ["decode_memory_efficiency"]
    table = own.calibration_table(serve, eff)
    assert table["error"].abs().max() < 0.15
    h200 = catalog.accelerator_record("H200-SXM-141GB")
    assert scope_of(eff, h200) == "nvidia-hopper"  # no scope of its own: H200 keeps the family's values
    assert eff.get("decode_memory_efficiency", scope_of(eff, h200)) == Efficiency.from_csv().get("decode_memory_efficiency", "nvidia-hopper")
    assert scope_of(eff, catalog.accelerator_record("H100-SXM5-80GB")) == "H100-SXM5-80GB"


def test_analyse_carries_the_adjustment_and_the_report_shows_both(tmp_path):
    s = _scenario(tmp_path)
    a = analyse(s, n_draws=500)
    h100 = a.perf.set_index("accelerator").loc["H100-SXM5-80GB", "mfu"]
    assert h100 == pytest.approx(0.25, rel=0.15)
    assert summary_json(a)["own_runs"][0]["accelerator"] == "H100-SXM5-80GB"
    plain = analyse(s, n_draws=500, measurements=False)
    assert plain.perf.set_index("accelerator").loc["H100-SXM5-80GB", "mfu"] > 0.4 and plain.adjustments is None
    both = with_and_without_measurements(s, n_draws=500)
    assert list(both["calibration"]) == ["published runs only", "with the team's runs"]
    assert both["H100-SXM5-80GB mfu"].iloc[1] == pytest.approx(0.25, rel=0.15)
    assert both["H100-SXM5-80GB mfu"].iloc[0] > 0.4


def test_missing_measurements_file_is_an_input_error(tmp_path):
    (tmp_path / "s.yaml").write_text("name: s\nworkload: {task: training, model: llama-3.1-8b, tokens: 1.0e+9}\n"
                                     "measurements: nowhere.csv\n")
    with pytest.raises(InputError, match=r"s.yaml: measurements: .*nowhere.csv: file not found"):
        wb.load_scenario(tmp_path / "s.yaml")


# --- LoRA runs (column lora_rank) ----------------------------------------------------------------

def _lora_tokens_per_s(mfu, chips, rank=16, precision="bf16", model="llama-3.1-8b", seq=8192, acc="H100-SXM5-80GB"):
    """tokens/s of a LoRA run at ``mfu`` counted with LoRA's FLOPs, 4N + 6 per adapter weight + attention."""
    from workbook.model.profile import fine_tune_flops_per_token
    from workbook.scenario import Workload
    w = Workload(task="fine-tuning", model=model, precision=precision, lora_rank=rank, seq_len=seq, tokens=1e9)
    peak = catalog.peak_flops_per_s(catalog.accelerator_record(acc), "bf16")
    return mfu * chips * peak / float(fine_tune_flops_per_token(model_profile(model), w))


def _lora_csv(mfu=0.30, precision="bf16"):
    rows = [f"lora-{c},training,H100-SXM5-80GB,{c},llama-3.1-8b,{precision},8192,1048576,"
            f"{_lora_tokens_per_s(mfu, c, precision=precision):.0f},,,,,,,16" for c in (8, 16, 32)]
    return COLUMNS.strip() + ",lora_rank\n" + "\n".join(rows) + "\n"


def _lora_scenario(tmp_path, csv_text, lora=True, precision="bf16"):
    s = _scenario(tmp_path, csv_text, name="lora" if lora else "full")
    if not lora:
        return s
    return wb.scenario.with_overrides(s, **{"workload.lora_rank": 16, "workload.precision": precision})


def test_lora_runs_convert_with_the_fine_tuning_flops(tmp_path):
    (tmp_path / "r.csv").write_text(_lora_csv(0.30))
    runs = own.to_runs(own.read_measurements(tmp_path / "r.csv"))
    assert runs["value"].tolist() == pytest.approx([0.30] * 3, abs=1e-4)
    assert runs["lora_rank"].tolist() == [16, 16, 16]


def test_lora_runs_move_only_lora_workloads(tmp_path):
    text = _lora_csv(0.30)
    lora = analyse(_lora_scenario(tmp_path, text), n_draws=300)
    assert set(lora.adjustments["accelerator"]) == {"H100-SXM5-80GB"}
    assert lora.perf.set_index("accelerator").loc["H100-SXM5-80GB", "mfu"] == pytest.approx(0.30, rel=0.15)
    full = analyse(_lora_scenario(tmp_path, text, lora=False), n_draws=300)
    assert full.adjustments.empty and not full.own_runs["used"].any()   # a full fine-tune ignores LoRA runs


def test_full_weight_runs_do_not_move_a_lora_workload(tmp_path):
    a = analyse(_lora_scenario(tmp_path, None), n_draws=300)   # the sample: full-weight H100 runs
    assert a.adjustments.empty and not a.own_runs["used"].any()


def test_qlora_runs_are_predicted_with_an_nf4_base(tmp_path):
    (tmp_path / "r.csv").write_text(_lora_csv(0.30, precision="nf4"))
    runs = own.to_runs(own.read_measurements(tmp_path / "r.csv"))
    assert set(runs["precision"]) == {"bf16"} and set(runs["weight_precision"]) == {"nf4"}
    w = own.published.run_workload(runs.iloc[0])
    assert (w.task, w.lora_rank, w.precision) == ("fine-tuning", 16, "nf4")
    use = own.near(runs, "training", "bf16", model_profile("llama-3.1-8b").params_active, lora=True)
    assert use.all()


def test_lora_rank_on_a_serving_run_is_one_line(tmp_path):
    (tmp_path / "r.csv").write_text("accelerator,chips,model,precision,input_tokens,output_tokens,concurrency,"
                                    "output_tokens_per_s,lora_rank\nH100,1,llama-3.1-8b,bf16,128,128,8,900,16\n")
    with pytest.raises(InputError) as e:
        own.read_measurements(tmp_path / "r.csv")
    assert e.value.problems == [f"{own.paths.rel(tmp_path / 'r.csv')}: row 2: lora_rank: only a training (fine-tuning) "
                                "run has LoRA adapters, this is a serving run"]
