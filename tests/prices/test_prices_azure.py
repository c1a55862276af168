"""`prices refresh --source azure` (issue 29): Azure Retail Prices API pages from a folder and from a local HTTP
server on 127.0.0.1 that links its pages by NextPageLink. The pages are hand-written in the API's item format
(values chosen for the assertions, not copies of Azure's prices); no test reaches the network.
"""
import datetime as dt
import json

import pandas as pd
import pytest

from price_helpers import catalog_rows as _rows, prices_cli as _cli
from workbook import azurefeed, paths

TODAY = dt.date.today().isoformat()
H100, A100, NV6, NV36 = ("Standard_ND96isr_H100_v5", "Standard_NC24ads_A100_v4", "Standard_NV6ads_A10_v5",
                         "Standard_NV36ads_A10_v5")


def item(sku, region, price, *, kind="Consumption", meter="", term=None, product="", since="2025-03-01", unit="1 Hour"):
    out = {"currencyCode": "USD", "retailPrice": price, "unitOfMeasure": unit, "armRegionName": region,
           "armSkuName": sku, "meterName": meter or sku.split("_", 1)[1].replace("_", " "),
           "skuName": meter or sku, "productName": product or "Virtual Machines GPU Series", "type": kind,
           "effectiveStartDate": f"{since}T00:00:00Z", "serviceName": "Virtual Machines"}
    if term:
        out["reservationTerm"] = term
    return out


PAGE1 = [
    item(H100, "westeurope", 110.0),
    item(H100, "westeurope", 132.232, product="Virtual Machines NDsr H100 v5 Series Windows"),
    item(H100, "westeurope", 40.0, meter="ND96isr H100 v5 Spot", since="2025-06-01"),
    item(H100, "westeurope", 20.0, meter="ND96isr H100 v5 Low Priority", since="2026-01-01"),
    item(H100, "westeurope", 613200.0, kind="Reservation", term="1 Year", since="2025-01-01"),     # 70.0 / h
    item(H100, "westeurope", 1156320.0, kind="Reservation", term="3 Years", since="2025-01-01"),   # 44.0 / h
    item(NV6, "westeurope", 0.5),
    item(NV36, "northeurope", 3.2, since="2024-09-01"),
    item("Standard_D4s_v5", "westeurope", 0.2),
]
PAGE2 = [
    item(A100, "swedencentral", 4.0, since="2024-11-01"),
    item(A100, "swedencentral", 1.0, kind="DevTestConsumption"),
]


def _write(folder, pages, links=None):
    folder.mkdir(parents=True, exist_ok=True)
    for i, items in enumerate(pages):
        nxt = links[i] if links else "https://prices.azure.com:443/api/retail/prices?$skip=100"
        (folder / f"page-{i + 1}.json").write_text(json.dumps({"BillingCurrency": "USD", "Items": items,
                                                               "NextPageLink": nxt, "Count": len(items)}))


def _catalog(tmp_path, regions=("eastus", "unspecified")):
    """The Azure rows of data/offerings.csv in ``regions`` (the hand rows; None: every Azure row)."""
    off = pd.read_csv(paths.DATA_DIR / "offerings.csv", dtype=str, keep_default_na=False)
    keep = (off["provider"] == "Azure") & (off["region"].isin(regions) if regions else True)
    f = tmp_path / "offerings.csv"
    off[keep].to_csv(f, index=False, lineterminator="\n")
    return f


def test_a_folder_of_recorded_pages_gives_linux_spot_and_term_prices_dated_by_effective_start(tmp_path):
    base = tmp_path / "mirror"
    _write(base / "azure" / "retail-prices", [PAGE1, PAGE2])
    out = _catalog(tmp_path)
    r = _cli("refresh", "--source", "azure", "--from", base, "--out", out)
    assert r.returncode == 0, r.stderr
    rows = _rows(out)
    h = rows.loc["azure-standard-nd96isr-h100-v5-westeurope"]
    assert (h["accelerator"], h["chips_per_instance"], h["region"]) == ("H100-SXM5-80GB", "8", "westeurope")
    # Linux price, not Windows; spot from the Spot meter, not Low Priority; term prices / hours of the term
    assert (h["on_demand_usd_per_hour"], h["spot_usd_per_hour"]) == ("110", "40")
    assert (float(h["commit_1y_usd_per_hour"]), float(h["commit_3y_usd_per_hour"])) == (70.0, 44.0)
    assert h["price_as_of"] == "2025-06-01"  # the latest effectiveStartDate of the row's prices
    assert h["as_of"] == TODAY and h["price_basis"] == "catalog"
    assert h["source"].startswith("Azure Retail Prices API") and "(prices refresh)" in h["source"]
    assert rows.loc["azure-standard-nc24ads-a100-v4-swedencentral", "price_as_of"] == "2024-11-01"  # page 2
    assert rows.loc["azure-standard-nc24ads-a100-v4-swedencentral", "accelerator"] == "A100-PCIe-80GB"
    assert rows.loc["azure-standard-nv36ads-a10-v5-northeurope", "chips_per_instance"] == "1"
    assert not any("nv6ads" in i for i in rows.index)  # a sixth of a GPU is never a chip count
    assert "1/6" in r.stdout and "Low Priority" in r.stdout and "Windows" in r.stdout
    # host columns come from the existing row of the same VM size (the API gives none)
    assert h["vcpus"] == "96"


def test_a_local_server_follows_next_page_link_and_dates_recorded_pages_the_same_way(tmp_path, server):
    folder = tmp_path / "srv"
    url = server(folder)
    _write(folder, [PAGE1, PAGE2], links=[f"{url}/page-2.json", None])
    out = _catalog(tmp_path)
    r = _cli("refresh", "--source", "azure", "--from", f"{url}/page-1.json", "--out", out)
    assert r.returncode == 0, r.stderr
    rows = _rows(out)
    assert "2 page(s)" in r.stdout
    assert rows.loc["azure-standard-nc24ads-a100-v4-swedencentral", "on_demand_usd_per_hour"] == "4"
    assert rows.loc["azure-standard-nd96isr-h100-v5-westeurope", "price_as_of"] == "2025-06-01"


def test_a_newer_api_price_supersedes_an_older_hand_row_of_the_same_id(tmp_path):
    base = tmp_path / "mirror"
    _write(base, [[item("Standard_NC24ads_A100_v4", "eastus", 3.9, since="2026-11-20")]])
    out = _catalog(tmp_path)
    assert _cli("refresh", "--source", "azure", "--from", base, "--out", out).returncode == 0
    rows = _rows(out)
    assert rows.loc["azure-standard-nc24ads-a100-v4-eastus", "on_demand_usd_per_hour"] == "3.9"
    assert rows.loc["azure-standard-nc24ads-a100-v4-eastus-superseded", "on_demand_usd_per_hour"] == "3.673"


def test_an_older_recorded_price_never_replaces_a_newer_row(tmp_path):
    base = tmp_path / "mirror"
    _write(base, [PAGE2])  # swedencentral NC24ads at 4.0, in force since 2024-11-01
    out = _catalog(tmp_path, regions=None)
    before = _rows(out).loc["azure-standard-nc24ads-a100-v4-swedencentral"]
    r = _cli("refresh", "--source", "azure", "--from", base, "--out", out, "--dry-run")
    assert r.returncode == 0, r.stderr
    assert before["price_as_of"] > "2024-11-01" and "kept (existing price is newer)" in r.stdout


@pytest.mark.parametrize("page, expected", [
    ("{not json", "not a JSON page"),
    ('{"Items": 3}', "Items: expected a list"),
    (json.dumps({"Items": [item(H100, "westeurope", 1.0, kind="Reservation", term="5 Years")]}), "reservationTerm"),
    (json.dumps({"Items": [item(H100, "westeurope", "cheap")]}), "retailPrice: expected a number"),
    (json.dumps({"Items": [{**item(H100, "westeurope", 1.0), "effectiveStartDate": "soon"}]}), "effectiveStartDate"),
])
def test_a_malformed_page_leaves_the_catalog_byte_identical_with_one_line(tmp_path, page, expected):
    base = tmp_path / "mirror"
    base.mkdir()
    (base / "page-1.json").write_text(page)
    out = _catalog(tmp_path)
    before = out.read_bytes()
    r = _cli("refresh", "--source", "azure", "--from", base, "--out", out)
    assert r.returncode == 2 and out.read_bytes() == before
    assert expected in r.stderr and "Traceback" not in r.stderr


def test_a_page_link_loop_is_refused_not_followed_forever(tmp_path, server):
    folder = tmp_path / "srv"
    url = server(folder)
    _write(folder, [PAGE1], links=[f"{url}/page-1.json"])
    r = _cli("refresh", "--source", "azure", "--from", f"{url}/page-1.json", "--out", _catalog(tmp_path))
    assert r.returncode == 2 and "loop" in r.stderr


def test_the_live_query_filters_virtual_machines_and_every_gpu_size():
    url = azurefeed.api_url()
    assert url.startswith("https://prices.azure.com/api/retail/prices?%24filter=")
    assert "Virtual%20Machines" in url and "Standard_ND96isr_H100_v5" in url and "Standard_NV6ads_A10_v5" in url


def test_a_skypilot_format_azure_file_never_counts_a_fraction_of_a_gpu_as_one_chip(tmp_path):
    from workbook import prices
    f = tmp_path / "azure" / "vms.csv"
    f.parent.mkdir()
    f.write_text("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region\n"
                 "Standard_NV6ads_A10_v5,A10,0.167,6,55,A10,0.454,0.1,westeurope\n"
                 "Standard_NV36ads_A10_v5,A10,1,36,440,A10,4.16,0.85,westeurope\n")
    imp = prices.import_file(f, "skypilot", price_as_of="2026-05-20")
    assert list(imp.rows["instance"]) == ["Standard_NV36ads_A10_v5"]
    assert any("fraction (0.167)" in k for k in imp.skipped)


def test_source_all_reads_recorded_azure_pages_first_so_they_win_over_skypilots_azure_row(tmp_path):
    import shutil
    mirror = tmp_path / "mirror"
    shutil.copytree(paths.ROOT / "tests/prices/fixtures/refresh", mirror)
    sky = mirror / "catalogs/v8/azure/vms.csv"
    sky.parent.mkdir(parents=True)
    sky.write_text("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region\n"
                   "Standard_ND96isr_H100_v5,H100,8,96,1900,H100,200.0,50.0,westeurope\n")
    _write(mirror / "azure" / "retail-prices", [PAGE1])
    out = _catalog(tmp_path)
    r = _cli("refresh", "--source", "all", "--from", mirror, "--out", out)
    assert r.returncode == 0, r.stderr
    assert "azure retail prices" in r.stdout and "same offering id from an earlier file" in r.stdout
    h = _rows(out).loc["azure-standard-nd96isr-h100-v5-westeurope"]
    assert h["on_demand_usd_per_hour"] == "110" and h["source"].startswith("Azure Retail Prices API")
