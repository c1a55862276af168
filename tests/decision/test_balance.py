"""Whole-server balance (issue 12): CPU per chip, host RAM for loading, NVMe for checkpoints,
flagged on the option and in the recommendation only where the host is short."""
import pandas as pd
import pytest

from workbook.decision.balance import MIN_VCPUS_PER_CHIP, balance_flags, balance_table
from workbook.decision.recommend import recommendation_warnings
from workbook.scenario import load_scenario

GB = 1e9


def _option(**host):
    row = {"offering": "test-host", "instance": "test.8x", "chips_per_instance": 8, "chips": 8,
           "accelerator": "H100-SXM5-80GB", "pricing_model": "on_demand", "price_as_of": "2026-11-01",
           "checkpoint_bytes": 70e9 * 14, "vcpus": 192, "host_memory_bytes": 2048 * 2 ** 30,
           "local_nvme_bytes": 8 * 3.84e12}
    row.update(host)
    return pd.Series(row)


def test_a_short_host_is_flagged_for_cpu_ram_and_nvme():
    s = load_scenario("llama-70b-pretrain")  # Llama 3.1 70B (70.6e9 params) in bf16: 141 GB of weights
    flags, checks = balance_flags(s, _option(vcpus=8, host_memory_bytes=64 * GB, local_nvme_bytes=500 * GB))
    assert checks == ["cpu", "ram", "nvme"]
    assert len(flags) == 3
    assert flags[0].startswith("Host CPU short") and "1.0 per chip" in flags[0]
    assert flags[1].startswith("Host RAM short") and "141 GB of weights" in flags[1]
    assert flags[2].startswith("Local NVMe short") and "980 GB" in flags[2]


def test_a_roomy_host_and_a_blank_one_are_not_flagged():
    s = load_scenario("llama-70b-pretrain")
    assert balance_flags(s, _option()) == ([], ["cpu", "ram", "nvme"])
    blank = _option(vcpus=float("nan"), host_memory_bytes=float("nan"), local_nvme_bytes=float("nan"))
    assert balance_flags(s, blank) == ([], [])


def test_the_share_is_a_lower_bound_over_every_chip_of_the_plan():
    s = load_scenario("llama-70b-pretrain")
    # 64 chips over 8 instances: each holds at least 1/8 of 141 GB = 17.6 GB, so 64 GB is enough
    assert balance_flags(s, _option(chips=64, host_memory_bytes=64 * GB))[0] == []
    assert balance_flags(s, _option(chips=64, host_memory_bytes=16 * GB))[0][0].startswith("Host RAM short")


def test_cpu_floor_is_per_chip():
    s = load_scenario("llama-70b-pretrain")
    assert balance_flags(s, _option(vcpus=8 * MIN_VCPUS_PER_CHIP))[0] == []
    assert balance_flags(s, _option(vcpus=8 * MIN_VCPUS_PER_CHIP - 1))[0][0].startswith("Host CPU short")


def test_the_recommendation_warns_when_the_winner_is_short():
    s = load_scenario("llama-70b-pretrain")
    perf = pd.DataFrame({"accelerator": ["H100-SXM5-80GB"], "calibrated": [True]})
    short = recommendation_warnings(s, perf, _option(vcpus=8), today=pd.Timestamp("2026-12-01").date())
    assert [w for w in short if w.startswith("Host CPU short")]
    ok = recommendation_warnings(s, perf, _option(), today=pd.Timestamp("2026-12-01").date())
    assert not [w for w in ok if w.startswith("Host")]


def test_balance_table_marks_every_option_and_catalog_rows_are_checked():
    s = load_scenario("chat-70b-realtime")
    opts = pd.DataFrame([{"offering": "aws-p5.48xlarge-us-east-1", "chips": 8},
                         {"offering": "not-in-the-catalog", "chips": 8}])
    t = balance_table(s, opts)
    # p5.48xlarge: vCPUs and RAM (SkyPilot) and 8 x 3.84 TB NVMe (the Capacity Blocks page) are all checked
    assert list(t["host_checks"]) == ["cpu,ram,nvme", ""] and list(t["host_warnings"]) == ["", ""]


def test_column_values_are_to_dict_records_value_for_value_and_type_for_type(analysed):
    """``balance._column_values`` (the host index and ``balance_table`` read their columns as lists) gives what
    ``to_dict("records")`` gave: the same values of the same types (NA as None, numpy scalars as Python ones)."""
    import importlib

    from workbook import catalog
    b = importlib.import_module("workbook.decision.balance")

    def check(df):
        cols = list(df.columns)
        want = df.to_dict("records")
        got = [dict(zip(cols, row)) for row in zip(*b._column_values(df, cols))]
        assert len(got) == len(want)
        for x, y in zip(want, got):
            for c in cols:
                assert type(x[c]) is type(y[c]) and (x[c] is y[c] or x[c] == y[c] or (x[c] != x[c] and y[c] != y[c]))
    full = catalog.offerings()
    check(full[[c for c in b._HOST_COLUMNS if c in full]].drop_duplicates("offering"))
    priced = analysed("llama-8b-finetune", n_draws=200).priced
    check(priced[[c for c in ("offering", "instance", "chips", "checkpoint_bytes", "chips_per_instance", "vcpus",
                              "host_memory_bytes", "local_nvme_bytes", "kind", "price_as_of") if c in priced]])
