"""Catalogs: every row sourced and dated, ids from the reference resolve, bad rows named by file/row/column."""
import shutil

import pandas as pd
import pytest
from cli_helpers import run_workbook

from workbook import catalog, paths
from workbook.errors import InputError

REQUIRED_CHIPS = ["V100-SXM2-16GB", "A100-SXM4-40GB", "A100-SXM4-80GB", "A10G", "L4", "L40S", "T4",
                  "H100-SXM5-80GB", "H100-PCIe-80GB", "H200-SXM-141GB", "B200-SXM-180GB", "MI300X", "MI325X",
                  "TPU-v4", "TPU-v5e", "TPU-v5p", "TPU-v6e", "Trainium1", "Trainium2", "Inferentia2"]
REQUIRED_MODELS = ["llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
                   "mixtral-8x7b", "deepseek-v3", "gpt-3-175b"]


@pytest.mark.parametrize("name", list(catalog.SCHEMAS))
def test_every_catalog_row_has_a_source_and_a_date(name):
    df = catalog.load(name)
    assert len(df) > 0
    assert df["source"].str.len().gt(5).all()
    assert pd.to_datetime(df["as_of"]).notna().all()


@pytest.mark.parametrize("chip", REQUIRED_CHIPS)
def test_reference_chip_ids_resolve(chip):
    assert catalog.resolve("accelerators", chip) == chip


@pytest.mark.parametrize("model", REQUIRED_MODELS)
def test_reference_models_are_present(model):
    assert catalog.resolve("models", model) == model


def test_a_small_model_is_present():
    assert (catalog.models()["params_published"] < 2e9).any()


def test_h100_sxm_dense_bf16_peak_is_989_tflops():
    # NVIDIA H100 datasheet: 1,979 TFLOP/s BF16 *with sparsity*; dense is half.
    assert catalog.accelerator("H100-SXM5-80GB")["peak_bf16_flops_per_s"] == pytest.approx(989e12, rel=0.01)


def test_tpu_v5e_bf16_peak_is_197_not_393():
    # Google Cloud TPU v5e docs: 197 TFLOP/s bf16, 393 TOP/s int8 (the marketing "393" is int8).
    acc = catalog.accelerator("TPU-v5e")
    assert acc["peak_bf16_flops_per_s"] == pytest.approx(197e12, rel=0.01)
    assert acc["peak_int8_flops_per_s"] == pytest.approx(394e12, rel=0.01)


def test_offerings_cover_three_hyperscalers_and_gpu_clouds():
    off = catalog.offerings()
    assert {"GCP", "AWS", "Azure"} <= set(off["provider"])
    assert (off["provider_kind"] == "gpu-cloud").any()


def test_every_offering_names_a_known_accelerator():
    known = set(catalog.accelerators()["accelerator"])
    assert set(catalog.offerings()["accelerator"]) <= known


def test_software_covers_every_platform():
    sw = catalog.software()
    assert set(sw["platform"]) == {"cuda", "rocm", "tpu", "neuron", "gaudi"}
    for cap in ["pytorch", "jax", "tensorflow", "vllm"]:
        assert cap in set(sw["capability"])


def _set_first(column, value):
    """A mutation for ``_bad_catalog``: the first data row's ``column`` becomes ``value``."""
    return lambda df: df.__setitem__(column, [value] + list(df[column][1:]))


def _load_error(tmp_path, name) -> str:
    """The InputError of loading ``name`` from ``tmp_path`` (the other catalogs copied beside it)."""
    for other in catalog.SCHEMAS:
        if other != name and (paths.DATA_DIR / f"{other}.csv").exists():
            (tmp_path / f"{other}.csv").write_bytes((paths.DATA_DIR / f"{other}.csv").read_bytes())
    catalog.load.cache_clear()
    catalog.resolve_map.cache_clear()
    try:
        with pytest.raises(InputError) as e:
            catalog.load(name, str(tmp_path))
    finally:
        catalog.load.cache_clear()
        catalog.resolve_map.cache_clear()
    return str(e.value)


def _bad_catalog(tmp_path, name, mutate):
    df = pd.read_csv(paths.DATA_DIR / f"{name}.csv", dtype=str, keep_default_na=False)
    mutate(df)
    df.to_csv(tmp_path / f"{name}.csv", index=False)
    return _load_error(tmp_path, name)


def test_bad_number_in_catalog_names_file_row_and_column(tmp_path):
    msg = _bad_catalog(tmp_path, "accelerators", _set_first("memory_bytes", "eighty"))
    assert "accelerators.csv: row 2: memory_bytes: expected a float, got 'eighty'" in msg


def test_out_of_range_unit_is_caught(tmp_path):
    # 80 (GB written in the wrong unit) instead of 8.0e10 bytes
    msg = _bad_catalog(tmp_path, "accelerators", _set_first("memory_bytes", "80"))
    assert "row 2: memory_bytes: expected a value between" in msg


def test_missing_source_is_caught(tmp_path):
    msg = _bad_catalog(tmp_path, "offerings", _set_first("source", ""))
    assert "offerings.csv: row 2: source: expected a value" in msg


def test_offering_with_unknown_accelerator_is_caught(tmp_path):
    msg = _bad_catalog(tmp_path, "offerings", _set_first("accelerator", "H1000"))
    assert "row 2: accelerator: unknown id 'H1000'" in msg


@pytest.mark.parametrize("name", ["accelerators", "offerings", "models", "software"])
def test_cli_catalog_prints_a_table(name):
    r = run_workbook("catalog", name)  # in this process (tests/cli_helpers.py)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == len(catalog.load(name)) + 1


def test_t4_and_v100_run_a_bf16_model_at_their_fp16_tensor_peak():
    # NVIDIA T4 datasheet: 65 TFLOP/s FP16 tensor (mixed precision); V100: 125. Neither has bf16.
    assert catalog.peak_flops_per_s(catalog.accelerator("T4"), "bf16") == pytest.approx(65e12, rel=0.01)
    assert catalog.peak_flops_per_s(catalog.accelerator("V100-SXM2-16GB"), "bf16") == pytest.approx(125e12, rel=0.01)


def test_a10g_has_no_published_peak_and_stays_blank():
    # NVIDIA publishes no A10G tensor peak: a blank, not a guess (data/README.md).
    import math
    assert math.isnan(catalog.peak_flops_per_s(catalog.accelerator("A10G"), "bf16"))


# --- issue 12: price dates and host specs in offerings -------------------------------------------------

def test_offerings_separate_price_date_from_read_date():
    off = catalog.offerings()
    dated = off["price_as_of"].notna()
    assert dated.mean() > 0.6
    assert (pd.to_datetime(off.loc[dated, "price_as_of"]) <= pd.to_datetime(off.loc[dated, "as_of"])
            + pd.Timedelta(days=7)).all()  # a price is not valid long after it was read (one announced ahead)


def test_old_aws_snapshot_rows_carry_the_snapshot_bound_not_the_read_date():
    off = catalog.offerings()
    snap = off[off["source"].str.contains("skypilot-catalog catalogs/v7/aws", regex=False)]
    assert len(snap) >= 20
    assert set(snap["price_as_of"]) == {"2025-05-31"}


def test_undated_snapshot_rows_have_a_blank_price_date_and_say_why():
    off = catalog.offerings()
    blank = off[off["price_as_of"].isna()]
    assert len(blank) > 0
    assert blank["notes"].str.contains("price_as_of blank").all()


def test_trillium_published_commitments_are_in_the_catalog():
    off = catalog.offerings().set_index("offering")
    row = off.loc["gcp-tpu-v6e-8-published-commitment"]
    assert row["commit_1y_usd_per_hour"] / 8 == pytest.approx(1.89)
    assert row["commit_3y_usd_per_hour"] / 8 == pytest.approx(1.22)
    assert row["price_as_of"] == "2024-12-12"


def test_host_specs_are_in_units_and_networks_are_per_instance():
    off = catalog.offerings().set_index("offering")
    p5 = off.loc["aws-p5.48xlarge-us-east-1"]
    assert p5["vcpus"] == 192 and p5["host_memory_bytes"] == pytest.approx(2048 * 2 ** 30)
    assert p5["inter_node_bytes_per_s"] == pytest.approx(3200e9 / 8) and p5["fabric"] == "efa"
    assert set(off.loc[off["instance"].str.startswith("tpu-"), "fabric"]) == {"dcn"}


def test_bad_fabric_is_caught(tmp_path):
    msg = _bad_catalog(tmp_path, "offerings", _set_first("fabric", "carrier-pigeon"))
    assert "offerings.csv: row 2: fabric: expected one of" in msg


def test_a100_80gb_gcp_shapes_1_2_4_8_are_priced_dated_and_specced():
    off = catalog.offerings()
    a2 = off[off["instance"].str.match(r"a2-ultragpu-\dg$") & (off["region"] == "us-central1")]
    assert sorted(a2["chips_per_instance"]) == [1, 2, 4, 8]
    assert a2["price_as_of"].notna().all() and a2["vcpus"].notna().all() and a2["local_nvme_bytes"].notna().all()
    per_chip = (a2["on_demand_usd_per_hour"] / a2["chips_per_instance"]).round(3)
    assert per_chip.nunique() == 1  # A2 Ultra is priced linearly in GPUs in both Cyclenerd snapshots


def test_host_spec_coverage_does_not_regress():
    off = catalog.offerings()
    both = (off["vcpus"].notna() & off["host_memory_bytes"].notna()).mean()
    assert both >= 0.85  # data/README.md offerings: 146 of 165 rows (issue 12 target 0.80)
    cpu_per_chip = off["vcpus"] / off["chips_per_instance"]
    assert (cpu_per_chip.dropna() >= 1).all()


# --- malformed files (issue 13): exit 2 with file, row and column, never a traceback ---------------

def _bad_bytes(tmp_path, name, mutate_bytes):
    """Copy every catalog to ``tmp_path``, rewrite ``name``'s bytes with ``mutate_bytes``, load it."""
    (tmp_path / f"{name}.csv").write_bytes(mutate_bytes((paths.DATA_DIR / f"{name}.csv").read_bytes()))
    return _load_error(tmp_path, name)


def _second_line(b: bytes, f) -> bytes:
    lines = b.split(b"\n")
    lines[1] = f(lines[1])
    return b"\n".join(lines)


@pytest.mark.parametrize("mutate, expected", [
    (lambda b: b"", "offerings.csv: empty file"),
    (lambda b: b"\xef\xbb\xbf" + b, "offerings.csv: row 1: column 1: starts with a UTF-8 byte-order mark"),
    (lambda b: b.replace(b"\n", b"\r\n"), "offerings.csv: row 1: line ends with CR LF"),
    (lambda b: _second_line(b, lambda l: l.replace(b"a", b"\xe9", 1)), "offerings.csv: row 2: byte"),
    (lambda b: _second_line(b, lambda l: l + b",extra"), "offerings.csv: row 2: expected"),
    (lambda b: _second_line(b, lambda l: l.rsplit(b",", 3)[0]), "offerings.csv: row 2: expected"),
])
def test_malformed_file_names_file_row_and_column(tmp_path, mutate, expected):
    assert expected in _bad_bytes(tmp_path, "offerings", mutate)


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf"])
def test_nan_is_not_a_required_number(tmp_path, value):
    msg = _bad_catalog(tmp_path, "accelerators", _set_first("memory_bytes", value))
    assert f"accelerators.csv: row 2: memory_bytes: expected a float, got {value!r}" in msg


def test_an_alias_on_a_later_row_cannot_repoint_an_id(tmp_path):
    def mutate(df):
        df.loc[len(df) - 1, "aliases"] = "H100-SXM5-80GB"
    msg = _bad_catalog(tmp_path, "accelerators", mutate)
    assert f"accelerators.csv: row " in msg and "aliases: 'H100-SXM5-80GB' already names 'H100-SXM5-80GB'" in msg


def test_the_same_alias_on_two_models_is_refused(tmp_path):
    def mutate(df):
        df.loc[1, "aliases"] = df.loc[0, "aliases"].split(";")[0]
    msg = _bad_catalog(tmp_path, "models", mutate)
    assert "models.csv: row 3: aliases:" in msg and "already names" in msg


@pytest.mark.parametrize("name", ["hardware", "topology"])
def test_broken_foreign_key_is_caught(tmp_path, name):
    msg = _bad_catalog(tmp_path, name, _set_first("accelerator", "H1000"))
    assert f"{name}.csv: row 2: accelerator: unknown id 'H1000'" in msg


def test_a_lead_time_row_names_an_accelerator_or_family(tmp_path):
    """data/lead_times.csv: `accelerator` is an id or a family; days_low <= days_high (file, row, column)."""
    shutil.copy(paths.DATA_DIR / "accelerators.csv", tmp_path / "accelerators.csv")
    head = "provider,accelerator,min_instances,days_low,days_high,source,as_of,notes\n"
    (tmp_path / "lead_times.csv").write_text(head + "AWS,nvidia-hoper,2,28,56,x,2026-12-01,\n")
    with pytest.raises(InputError, match=r"lead_times.csv: row 2: accelerator: expected an accelerator id or family"):
        catalog.load("lead_times", str(tmp_path))
    (tmp_path / "lead_times.csv").write_text(head + "AWS,nvidia-hopper,2,56,28,x,2026-12-01,\n")
    with pytest.raises(InputError, match=r"row 2: days_low: expected at most days_high"):
        catalog.load("lead_times", str(tmp_path))
    assert set(catalog.lead_times()["provider"]) == {"AWS", "GCP", "Azure"}


def test_provider_coverage_includes_tencent_and_alibaba_cloud_with_sourced_host_specs():
    off = catalog.offerings()
    assert off["provider"].nunique() >= 8
    ali = off[off["provider"] == "Alibaba Cloud"]
    assert len(ali) >= 1 and ali["vcpus"].notna().all() and ali["source"].str.contains("alicloud/vms.csv").all()
    assert (ali["spot_usd_per_hour"] < ali["on_demand_usd_per_hour"]).all()
    tc = off[off["provider"] == "Tencent Cloud"]
    assert len(tc) >= 1 and set(tc["accelerator"]) <= set(catalog.accelerators()["accelerator"])
    assert tc["vcpus"].notna().all() and tc["host_memory_bytes"].notna().all()
    assert tc["source"].str.contains("intlcloud-documents|qcloud-documents|tencentcloud/vms.csv").all()
    lam = off[off["provider"] == "Lambda"]
    assert lam["vcpus"].notna().all()  # SkyPilot lambda vms.csv @11580132 vCPUs/MemoryGiB


def test_monthly_prices_are_sourced_and_below_the_same_shapes_hourly_list():
    off = catalog.offerings()
    monthly = off[off["monthly_usd"].notna()]
    assert len(monthly) >= 5 and monthly["notes"].str.contains("DERIVED").all()
    tencent = monthly[monthly["provider"] == "Tencent Cloud"]
    assert tencent["source"].str.contains("qcloud-documents").all() and tencent["vcpus"].notna().all()
    assert monthly[monthly["provider"] != "Tencent Cloud"]["price_as_of"].notna().all()
    # a monthly subscription costs less per hour than the pay-as-you-go price of the same shape (Tencent's USD list)
    intl = off[off["offering"].str.startswith("tencent-") & off["on_demand_usd_per_hour"].notna()].set_index("instance")
    both = monthly[monthly["instance"].isin(intl.index)]
    assert len(both) >= 2
    for r in both.itertuples():
        assert r.monthly_usd / 730 < intl.loc[r.instance, "on_demand_usd_per_hour"]


def test_dedicated_servers_are_dated_with_their_source_term_and_host():
    # Qubrid AI's bare-metal servers are rented by the year (api-evangelist/qubrid-ai plans @499baca,
    # 'period: year'): monthly_usd = annual / 12 with a 12-month least term, so a short run pays the year
    off = catalog.offerings()
    ded = off[off["provider_kind"] == "dedicated"]
    assert len(ded) >= 4 and ded["monthly_usd"].notna().all() and ded["price_as_of"].notna().all()
    assert (ded.loc[ded["provider"] == "Qubrid AI", "monthly_min_term_months"] == 12).all()
    h100 = ded.set_index("offering").loc["qubrid-8x-h100-sxm-bare-metal"]
    assert h100["monthly_usd"] * 12 == pytest.approx(133414.80, abs=0.1)
    assert h100["host_memory_bytes"] == 16 * 64 * 2 ** 30 and h100["local_nvme_bytes"] == pytest.approx(6 * 3.84e12)
    # a row with both prices: a month costs no more than 730 hours at its hourly price (OVHcloud l4-90)
    both = off[off["monthly_usd"].notna() & off["on_demand_usd_per_hour"].notna()]
    assert len(both) >= 1 and (both["monthly_usd"] <= both["on_demand_usd_per_hour"] * 730).all()
    assert off["monthly_min_term_months"].dropna().between(1, 120).all()


def test_prices_are_dated_by_validity_not_by_the_day_they_were_read():
    # Capacity Blocks: the pricing page lists these rates as the ones in force until its update scheduled
    # for 2025-01-01 (mirror of aws.amazon.com/ec2/capacityblocks/pricing, read 2026-12-01)
    off = catalog.offerings()
    cb = off[off["other_price_model"].fillna("").str.startswith("capacity_block")]
    assert len(cb) == 6 and (cb["price_as_of"] == "2024-12-31").all()
    assert set(cb["other_usd_per_hour"]) == {39.33, 43.26, 14.75, 15.49}
    # the skypilot-catalog v8 AWS snapshot: 2025-06-01 is a lower bound (it lists the post-cut p5 55.04)
    v8 = off[off["source"].str.contains("catalogs/v8/aws/vms.csv @00148f2", regex=False)]
    assert len(v8) >= 13 and (v8["price_as_of"] == "2025-06-01").all() and (v8["as_of"] >= "2026-12-01").all()
    us = v8["region"].isin(["us-east-1", "us-east-2", "us-west-2"])  # the post-cut US list price
    assert (v8.loc[us & (v8["instance"] == "p5.48xlarge"), "on_demand_usd_per_hour"] == 55.04).all()
    # every row read in this pass from a dated list carries that list's date
    dated = off[off["source"].str.contains("api-evangelist", regex=False)]
    assert len(dated) >= 23 and dated["price_as_of"].isin(["2026-09-20", "2026-10-07"]).all()


def test_vultr_bare_metal_monthly_prices_follow_their_hourly_rate_and_cap():
    # Vultr bills bare metal by the hour up to a monthly cap (docs.vultr.com 'How Am I Billed', updated
    # 2025-09-15: 672 h for bare metal). 4x A100: 2.39725 per GPU-hour on 2026-09-28 (a dated survey of
    # api.vultr.com/v2/plans-metal) x 4 x 730 = the plan's listed 7,000/month; 8x MI300X: 31.92/h standard on
    # 2026-09-23 (a dated AMD pricing note) x 672 h (gpuhunt test_vultr.py @3b38957: 11773.44 = 17.52 x 672)
    off = catalog.offerings().set_index("offering")
    ded = off[(off["provider"] == "Vultr") & off["monthly_usd"].notna()]
    assert len(ded) == 2 and (ded["provider_kind"] == "dedicated").all()
    assert ded["monthly_min_term_months"].isna().all() and ded["on_demand_usd_per_hour"].isna().all()
    a100 = off.loc["vultr-vbm-48c-1024gb-4-a100-gpu-monthly"]
    assert a100["monthly_usd"] == pytest.approx(2.39725 * 4 * 730, abs=0.05) and a100["price_as_of"] == "2026-09-28"
    mi = off.loc["vultr-vbm-256c-2048gb-8-mi300x-gpu-monthly"]
    assert mi["monthly_usd"] == pytest.approx(31.92 * 672) and mi["price_as_of"] == "2026-09-23"
    assert mi["vcpus"] == 256 and mi["local_nvme_bytes"] == pytest.approx(8 * 3576e9)
    monthly = catalog.offerings()
    monthly = monthly[monthly["monthly_usd"].notna() & (monthly["provider_kind"] == "dedicated")]
    assert monthly["accelerator"].nunique() >= 5  # issue 12: at least 5 monthly dedicated-server prices


def test_tpu_v6e_hosts_carry_googles_vm_shapes():
    # docs.cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus#choose-tpu-version: ct6e-standard-1t
    # 44 vCPUs / 448 GiB, ct6e-standard-4t 180 / 720 GiB, ct6e-standard-8t 180 vCPUs
    off = catalog.offerings()
    v6e = off[off["instance"].isin(["tpu-v6e-1", "tpu-v6e-4", "tpu-v6e-8"])]
    assert len(v6e) >= 7 and v6e["vcpus"].notna().all() and v6e["host_memory_bytes"].notna().all()
    by = v6e.groupby("instance")
    assert set(by["vcpus"].unique().explode()) == {44, 180}
    assert v6e.loc[v6e["instance"] == "tpu-v6e-4", "host_memory_bytes"].eq(720 * 2 ** 30).all()
    assert v6e.loc[v6e["instance"] == "tpu-v6e-1", "host_memory_bytes"].eq(448 * 2 ** 30).all()


def test_no_region_prices_azure_spot_at_a_flat_ten_percent_floor():
    """anycloud-sh/catalog @62ff0a9 gives australiacentral2 (an access-restricted region) a spot price of exactly
    10% of on-demand for nearly every size, and no other region any: a flat floor, not a market price, so
    /work/mirror/tools/azure_anycloud_rows.py leaves it blank (data/README.md). A re-run without that rule
    would let it win every T4 scenario."""
    off = catalog.offerings()
    az = off[(off["provider"] == "Azure") & off["spot_usd_per_hour"].notna()]
    ratio = (az["spot_usd_per_hour"] / az["on_demand_usd_per_hour"]).round(4)
    assert len(az) > 100 and not (ratio == 0.1).any()
    blank = off[(off["provider"] == "Azure") & (off["region"] == "australiacentral2")]
    assert len(blank) and blank["spot_usd_per_hour"].isna().all()
    assert blank["notes"].str.contains("exactly 10% of its Price").all()


def test_validate_frame_parses_each_text_once_and_reports_the_first_bad_cell_of_the_file():
    """The column-wise parse (one ``_parse`` per distinct text) gives the cell-by-cell frame, and a
    file with bad cells names the first in row order, not the first in column order."""
    schema = {"name": catalog.Col("str", required=True), "n": catalog.Col("int", min=0),
              "x": catalog.Col("float", min=0.0, max=10.0), "ok": catalog.Col("bool"), "day": catalog.Col("date"),
              "kind": catalog.Col("str", choices=("a", "b")), "absent": catalog.Col("float")}
    raw = pd.DataFrame({"name": ["p", "q", " p ", "r"], "n": ["1", "1", "2.0", ""], "x": ["1.5", " 1.5", "", "2"],
                        "ok": ["yes", "0", "", "TRUE"], "day": ["2026-01-02", "2026-01-02", "", "2026-1-3"],
                        "kind": ["a", "b", "a", ""]}, dtype=object)
    got = catalog.validate_frame(raw, schema, "t.csv")
    rows = [{c: catalog._parse(rec.get(c), spec, "t.csv", i + 2, c) for c, spec in schema.items()}
            for i, rec in enumerate(raw.to_dict("records"))]
    want = pd.DataFrame(rows, columns=list(schema))
    want["n"], want["x"] = pd.to_numeric(want["n"]).astype("Int64"), pd.to_numeric(want["x"]).astype("float64")
    want["absent"] = pd.to_numeric(want["absent"]).astype("float64")
    pd.testing.assert_frame_equal(got, want)
    bad = raw.assign(kind=["a", "a", "a", "c"], x=["1", "11", "1", "1"])  # row 3 column x before row 5 column kind
    with pytest.raises(InputError, match=r"t.csv: row 3: x: expected a value between"):
        catalog.validate_frame(bad, schema, "t.csv")


@pytest.mark.parametrize("bounds, text, expected", [
    ((1, 10), "11", "expected a value between 1 and 10, got 11"),
    ((1, None), "0", "expected a value of at least 1, got 0"),
    ((None, 10), "11", "expected a value of at most 10, got 11"),
])
def test_out_of_range_cell_names_the_bound_it_breaks(bounds, text, expected):
    """A numeric column may set only a lower or only an upper bound: the error names the file, row,
    column and the bound, and is an InputError (it was a TypeError formatting the missing bound)."""
    col = catalog.Col("float", False, *bounds)
    with pytest.raises(InputError) as e:
        catalog._parse(text, col, "t.csv", 3, "x")
    assert str(e.value) == f"t.csv: row 3: x: {expected}"
    assert catalog._parse("5", col, "t.csv", 3, "x") == 5.0


def test_per_load_builds_once_per_loaded_object_and_again_for_another():
    """``catalog.PerLoad``: a value derived from a loaded catalog object is built once for that very
    object (callers get the same value back) and again when the catalog hands out another one (a
    reload), also when the first source was None (the old ``[None, ...]`` slots would have returned
    their initial value for a None source)."""
    built = []
    memo = catalog.PerLoad(lambda src: built.append(src) or {"n": len(built)})
    first, again = memo.get(None), memo.get(None)
    assert first is again and built == [None]
    frame = catalog.offerings()
    assert memo.get(frame) == {"n": 2} and memo.get(frame) is memo.get(frame)
    reloaded = frame.copy()
    assert memo.get(reloaded) == {"n": 3} and len(built) == 3
