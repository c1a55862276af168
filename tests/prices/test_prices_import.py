"""Price-catalog import (issue 12): both public formats on recorded samples, name mapping, merge, bad files."""
import datetime as dt
import shutil
from pathlib import Path

import pandas as pd
import pytest
from price_helpers import prices_cli

from workbook import catalog, paths, prices, pricesync
from workbook.errors import InputError

FIX = Path(__file__).resolve().parent / "fixtures"
TODAY = dt.date(2026, 12, 1)


def _by_id(imp):
    return imp.rows.set_index("offering")


def test_skypilot_aws_collapses_zones_and_takes_the_lowest_spot():
    rows = _by_id(prices.import_file(FIX / "aws" / "vms.csv", "skypilot", today=TODAY))
    p5 = rows.loc["aws-p5.48xlarge-us-east-1"]
    assert p5["accelerator"] == "H100-SXM5-80GB" and p5["chips_per_instance"] == 8
    assert p5["on_demand_usd_per_hour"] == pytest.approx(98.32)
    assert p5["spot_usd_per_hour"] == pytest.approx(23.1583)  # min over use1-az1..az6
    assert p5["vcpus"] == 192 and p5["host_memory_bytes"] == pytest.approx(2048 * 2 ** 30)
    assert rows.loc["aws-p5.48xlarge-us-east-2", "spot_usd_per_hour"] == pytest.approx(12.1195)
    assert rows.loc["aws-g4dn.4xlarge-us-east-1", "accelerator"] == "T4"
    assert rows.loc["aws-p4de.24xlarge-us-east-1", "accelerator"] == "A100-SXM4-80GB"
    # p5e has spot rows only (blank Price): a spot-only offering, not a dropped one
    assert pd.isna(rows.loc["aws-p5e.48xlarge-us-east-2", "on_demand_usd_per_hour"])
    assert "aws-a1.large-us-east-1" not in rows.index  # CPU-only VM


def test_skypilot_v8_aws_leaves_local_zones_out_of_the_region_and_maps_the_a100_by_mib():
    """Rows of skypilot-catalog catalogs/v8/aws/vms.csv @00148f2 (fixtures/skypilot-v8): us-east-1 lists the
    Atlanta Local Zone (use1-atl2-az1: p5.48xlarge spot 10.2397, p6-b200 13.0338), another city; the
    region's own zones' lowest spot is 17.6289 (use1-az6) and 21.0148 (use1-az6)."""
    imp = prices.import_file(FIX / "skypilot-v8" / "aws" / "vms.csv", "skypilot", price_as_of="2025-06-01", today=TODAY,
                             regions=["us-east-1", "us-east-2", "us-west-2"])
    rows = _by_id(imp)
    assert rows.loc["aws-p5.48xlarge-us-east-1", "spot_usd_per_hour"] == pytest.approx(17.6289)
    assert rows.loc["aws-p6-b200.48xlarge-us-east-1", "spot_usd_per_hour"] == pytest.approx(21.0148)
    assert rows.loc["aws-p6-b200.48xlarge-us-east-1", "accelerator"] == "B200-SXM-180GB"
    assert imp.skipped["AWS Local Zone row (another city than the region's own zones)"] == 3
    p4d = rows.loc["aws-p4d.24xlarge-us-east-1"]  # 'A100' with 40960 MiB per GPU
    assert (p4d["accelerator"], p4d["on_demand_usd_per_hour"]) == ("A100-SXM4-40GB", pytest.approx(21.957642))
    one = rows.loc["aws-p5.4xlarge-us-east-2"]
    assert one["chips_per_instance"] == 1 and pd.isna(one["spot_usd_per_hour"]) and one["vcpus"] == 16
    assert "aws-p5.48xlarge-eu-west-2" not in rows.index  # --region
    assert set(rows["price_as_of"]) == {"2025-06-01"}


def test_skypilot_files_without_zones_are_read_nebius():
    """catalogs/v8/nebius/vms.csv @0082b04 has no AvailabilityZone column (a cloud without zones); CPU-only
    shapes are skipped and the GPU shapes keep their own host (gpu-h100-sxm_8gpu-128vcpu-1600gb)."""
    rows = _by_id(prices.import_file(FIX / "skypilot-v8" / "nebius" / "vms.csv", "skypilot", today=TODAY))
    h100 = rows.loc["nebius-gpu-h100-sxm-8gpu-128vcpu-1600gb-eu-north1"]
    assert (h100["provider"], h100["accelerator"], h100["chips_per_instance"]) == ("Nebius", "H100-SXM5-80GB", 8)
    assert (h100["on_demand_usd_per_hour"], h100["spot_usd_per_hour"], h100["vcpus"]) == (23.6, 10.0, 128)
    assert h100["host_memory_bytes"] == 1600 * 2 ** 30 and h100["price_as_of"] is None  # undated file
    assert rows["accelerator"].value_counts()["L40S"] == 12 and len(rows) == 21
    assert not rows.index.str.startswith("nebius-cpu").any()


def test_skypilot_gcp_adds_the_host_vm_to_gpu_rows_and_reads_tpu_slices():
    imp = prices.import_file(FIX / "gcp" / "vms.csv", "skypilot", today=TODAY)
    rows = _by_id(imp)
    a3 = rows.loc["gcp-a3-highgpu-2g-us-east4"]
    assert a3["on_demand_usd_per_hour"] == pytest.approx(19.5931 + 2.36502)
    assert a3["spot_usd_per_hour"] == pytest.approx(3.5264 + 0.42588)
    assert a3["chips_per_instance"] == 2 and a3["vcpus"] == 52
    v6e = rows.loc["gcp-tpu-v6e-4-us-central1"]
    assert (v6e["accelerator"], v6e["chips_per_instance"], v6e["on_demand_usd_per_hour"]) == ("TPU-v6e", 4, 10.8)
    assert any(k.startswith("L4:") and "host" in k for k in imp.skipped)  # attachable GPU, no fixed VM


def test_gpuhunt_joins_on_demand_and_spot_rows():
    rows = _by_id(prices.import_file(FIX / "gpuhunt" / "aws.csv", "gpuhunt", price_as_of="2025-05-01", today=TODAY))
    p5 = rows.loc["aws-p5.48xlarge-us-east-1"]
    assert (p5["on_demand_usd_per_hour"], p5["spot_usd_per_hour"]) == (pytest.approx(98.32), pytest.approx(23.1583))
    assert rows.loc["aws-p4de.24xlarge-us-east-1", "accelerator"] == "A100-SXM4-80GB"  # A100 + 80 GB
    assert p5["price_as_of"] == "2025-05-01" and p5["as_of"] == "2026-12-01"


def test_both_formats_give_the_same_prices_for_the_same_instances():
    sky = _by_id(prices.import_file(FIX / "aws" / "vms.csv", "skypilot", today=TODAY))
    hunt = _by_id(prices.import_file(FIX / "gpuhunt" / "aws.csv", "gpuhunt", today=TODAY))
    common = sorted(set(sky.index) & set(hunt.index))
    assert len(common) == 4
    cols = ["accelerator", "chips_per_instance", "on_demand_usd_per_hour", "spot_usd_per_hour", "vcpus"]
    pd.testing.assert_frame_equal(sky.loc[common, cols], hunt.loc[common, cols])


def test_unknown_names_are_reported_and_skipped_not_guessed():
    imp = prices.import_file(FIX / "gpuhunt" / "lambdalabs.csv", "gpuhunt", today=TODAY)
    assert list(imp.rows["offering"]) == ["lambda-gpu-8x-v100-us-west-1"]
    assert any(k.startswith("A6000:") for k in imp.skipped)  # RTX A6000: no row in accelerators.csv


@pytest.mark.parametrize("name, memory, instance, expected", [
    ("H100", 80, "p5.48xlarge", ("H100-SXM5-80GB", None)),
    ("H100", 80, "gpu_1x_h100_pcie", ("H100-PCIe-80GB", None)),
    ("A100", 40, "p4d.24xlarge", ("A100-SXM4-40GB", None)),
    ("A100", 80, "Standard_NC24ads_A100_v4", ("A100-PCIe-80GB", None)),
    ("tpu-v5p-8", None, "", ("TPU-v5p", 4)),
    ("tpu-v5litepod-4", None, "", ("TPU-v5e", 4)),
    ("tpu-v4-8", None, "", ("TPU-v4", 4)),
    ("A100", 24, "x", (None, None)),
    ("A100", 40960 * 2 ** 20 / 1e9, "p4d.24xlarge", ("A100-SXM4-40GB", None)),  # SkyPilot AWS GpuInfo SizeInMiB
    ("A100", 81920 * 2 ** 20 / 1e9, "p4de.24xlarge", ("A100-SXM4-80GB", None)),
    ("A100", 60, "x", (None, None)),  # 50% from 40 GB, 25% from 80 GB: neither within 10%
    ("Gaudi HL-205", 32, "dl1.24xlarge", (None, None)),
])
def test_name_mapping(name, memory, instance, expected):
    chip, chips, why = prices.map_accelerator(name, memory, instance)
    assert (chip, chips) == expected
    assert bool(why) == (chip is None)


def test_an_h100_nvl_instance_maps_to_its_own_chip_only_when_the_catalog_has_it():
    """Azure's NC H100 v5 sells the 94 GB H100 NVL: never imported as the SXM part; picked up as
    H100-NVL-94GB once data/accelerators.csv has that chip."""
    chip, _, why = prices.map_accelerator("H100", 94, "Standard_NC40ads_H100_v5")
    if "H100-NVL-94GB" in set(catalog.accelerators()["accelerator"]):
        assert chip == "H100-NVL-94GB"
    else:
        assert chip is None and "H100-NVL-94GB" in why


def test_every_mapped_chip_exists_in_the_accelerator_catalog():
    known = set(catalog.accelerators()["accelerator"])
    targets = {v for t in prices.NAME_MAP.values() for v in (t.values() if isinstance(t, dict) else [t])}
    targets |= {c for c, _ in prices.TPU_MAP.values()}
    targets |= {v for _, o in prices.INSTANCE_RULES for v in o.values() if v and v != "H100-NVL-94GB"}
    assert targets <= known


def _existing():
    return pd.read_csv(paths.DATA_DIR / "offerings.csv", dtype=str, keep_default_na=False)


def test_merge_summary_counts_added_updated_unchanged_and_kept_by_provider():
    existing = _existing()
    imp = prices.import_file(FIX / "aws" / "vms.csv", "skypilot", price_as_of="2026-11-30", today=TODAY)
    merged, summary = pricesync.merge(existing, imp.rows)
    assert len(merged) == len(existing) + (summary["action"] == "added").sum()
    assert set(summary["provider"]) == {"AWS"}
    again, summary2 = pricesync.merge(merged, imp.rows)
    assert (summary2["action"] == "unchanged").all() and len(again) == len(merged)
    older = prices.import_file(FIX / "aws" / "vms.csv", "skypilot", price_as_of="2020-01-01", today=TODAY)
    changed = older.rows.assign(spot_usd_per_hour=older.rows["spot_usd_per_hour"] * 2)
    _, summary3 = pricesync.merge(merged, changed)
    assert summary3["action"].str.startswith("kept").any()  # an older price never replaces a newer one
    text = pricesync.summary_table(summary, imp.skipped)
    assert "AWS" in text
    newer = imp.rows.assign(spot_usd_per_hour=imp.rows["spot_usd_per_hour"] * 2, price_as_of="2026-12-01")
    updated, summary4 = pricesync.merge(merged, newer)
    oid = summary4.loc[summary4["action"] == "updated", "offering"].iloc[0]
    note = updated.set_index("offering").loc[oid, "notes"]
    was = merged.set_index("offering").loc[oid, "spot_usd_per_hour"]
    was_date = merged.set_index("offering").loc[oid, "price_as_of"]
    assert "Previous row: " in note and f"spot_usd_per_hour {was}" in note and f"price_as_of {was_date}" in note


def test_merged_file_still_loads_in_the_catalog(tmp_path):
    for f in paths.DATA_DIR.glob("*.csv"):
        shutil.copy(f, tmp_path / f.name)
    imp = prices.import_file(FIX / "gcp" / "vms.csv", "skypilot", today=TODAY, regions=["us-central1", "us-east4"])
    merged, _ = pricesync.merge(_existing(), imp.rows)
    merged.to_csv(tmp_path / "offerings.csv", index=False)
    off = catalog.load("offerings", str(tmp_path))
    assert "gcp-tpu-v6e-4-us-central1" in set(off["offering"])
    assert "gcp-tpu-v6e-4-asia-east1" not in set(off["offering"])  # --region filter


def _cli(*args):
    """``python -m workbook prices import ARGS``, in this process (price_helpers.prices_cli)."""
    return prices_cli("import", *args)


def test_cli_out_writes_the_imported_rows_and_leaves_the_catalog(tmp_path):
    before = (paths.DATA_DIR / "offerings.csv").read_bytes()
    r = _cli(FIX / "gcp" / "vms.csv", "--format", "skypilot", "--as-of", "2026-10-01", "--out", tmp_path / "o.csv")
    assert r.returncode == 0, r.stderr
    assert "GCP" in r.stdout and "skipped" in r.stdout
    out = pd.read_csv(tmp_path / "o.csv", dtype=str, keep_default_na=False)
    assert set(out["price_as_of"]) == {"2026-10-01"}
    assert (paths.DATA_DIR / "offerings.csv").read_bytes() == before


@pytest.mark.parametrize("fmt, src, edit, expected", [
    ("skypilot", "aws/vms.csv", lambda t: t.replace("98.32,30.684600", "98.32,n/a", 1), "row 12: SpotPrice"),
    ("skypilot", "aws/vms.csv", lambda t: t.replace(",SpotPrice,", ",Spot,", 1), "row 1: SpotPrice"),
    ("gpuhunt", "gpuhunt/aws.csv", lambda t: t.replace("False", "maybe", 1), "row 2: spot"),
    ("gpuhunt", "gpuhunt/aws.csv", lambda t: t.replace("1.204", "-1.204", 1), "row 3: price"),
])
def test_bad_files_exit_2_with_file_row_and_column(tmp_path, fmt, src, edit, expected):
    bad = tmp_path / "aws" / Path(src).name
    bad.parent.mkdir()
    bad.write_text(edit((FIX / src).read_text()))
    r = _cli(bad, "--format", fmt, "--out", tmp_path / "o.csv")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1 and str(Path(bad.name)) in line and expected in line, line


def test_missing_file_and_bad_date_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        prices.import_file(tmp_path / "aws" / "vms.csv", "skypilot")
    with pytest.raises(InputError, match="--as-of"):
        prices.import_file(FIX / "aws" / "vms.csv", "skypilot", price_as_of="last week")
