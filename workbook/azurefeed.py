"""Read the Azure Retail Prices API (https://prices.azure.com/api/retail/prices) for ``prices refresh --source
azure``: SkyPilot's Azure file is old and lists US regions only; the API lists every region.

The API answers JSON pages ``{"Items": [...], "NextPageLink": url-or-null}`` (Microsoft Learn, "Azure Retail
Prices REST API overview"). One item is one meter price: ``armSkuName`` (the VM size), ``armRegionName``,
``retailPrice`` (USD), ``unitOfMeasure`` ('1 Hour'), ``type`` (Consumption, Reservation, DevTestConsumption),
``reservationTerm`` ('1 Year', '3 Years'; the price of a reservation is for the whole term), ``meterName`` and
``skuName`` (a spot price says 'Spot'; 'Low Priority' is Azure Batch's older low-priority meter, not a VM spot
price, and is left out), ``productName`` (a Windows price says 'Windows'; the Linux price is kept) and
``effectiveStartDate`` (the day the price took effect).

Rows: one per (VM size, region) with on-demand = the Linux Consumption price, spot = the Linux Spot price,
1y/3y = the reservation's term price / 8,760 or 26,280 hours (365 days x 24 h per year). GPU sizes map to
chips through ``SKUS`` (chip counts from Microsoft's VM size pages, cited there); a size that holds a fraction
of a GPU (NVads A10 v5 below NV36) is skipped and counted.

Dates: a recorded page (a folder, or any URL other than the live API) dates each row by its prices'
``effectiveStartDate`` (the latest of the row's prices: all of them were in force from that day; a lower
bound), or by the recording day a folder's ``SOURCES.csv`` names. The live API lists the prices in force when
it answers, so its rows carry the fetch day and name the effective date in ``notes``.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
import urllib.parse
from pathlib import Path

import pandas as pd

from . import paths, prices
from .errors import InputError
from .pricefeeds import REFRESH_MARK, NotPublished, Result, _is_url, _manifest, get_bytes

API_URL = "https://prices.azure.com/api/retail/prices"
SOURCE_STEM = "Azure Retail Prices API"
FOLDER = "azure/retail-prices"   # where a mirror keeps recorded pages: <base>/azure/retail-prices/*.json
MAX_PAGES = 500                  # the GPU filter below answers in a few pages of 100 (or 1,000) items
HOURS_PER_YEAR = 365 * 24        # 8,760: Azure's reservations are priced for 1 or 3 whole years
TERMS = {"1 Year": ("commit_1y_usd_per_hour", 1), "3 Years": ("commit_3y_usd_per_hour", 3)}

_DOCS = "MicrosoftDocs/azure-docs articles/virtual-machines/sizes/gpu-accelerated"
# VM size -> (chip id of data/accelerators.csv, chips per VM, where the count comes from).
SKUS: dict[str, tuple[str, int, str]] = {
    "Standard_ND96isr_H100_v5": ("H100-SXM5-80GB", 8, f"{_DOCS}/includes/nd-h100-v5-series-specs.md @44d9173 (8 GPUs)"),
    "Standard_ND96isr_H200_v5": ("H200-SXM-141GB", 8, "microsoft/aspire src/Aspire.Hosting.Azure.Kubernetes/AksNodeVmSizes.cs @5bd693a (Standard_ND96isr_H200_v5: 8 GPUs)"),
    "Standard_ND96asr_v4": ("A100-SXM4-40GB", 8, f"{_DOCS}/includes/nd-a100-v4-series-specs.md @f323a18 (8 GPUs)"),
    "Standard_ND96amsr_A100_v4": ("A100-SXM4-80GB", 8, f"{_DOCS}/includes/ndm-a100-v4-series-specs.md @9114cfa (8 GPUs)"),
    "Standard_NC24ads_A100_v4": ("A100-PCIe-80GB", 1, f"{_DOCS}/includes/nc-a100-v4-series-specs.md @1e4c740 (1-4 GPUs; 24 vCPUs = 1)"),
    "Standard_NC48ads_A100_v4": ("A100-PCIe-80GB", 2, f"{_DOCS}/includes/nc-a100-v4-series-specs.md @1e4c740 (48 vCPUs = 2)"),
    "Standard_NC96ads_A100_v4": ("A100-PCIe-80GB", 4, f"{_DOCS}/includes/nc-a100-v4-series-specs.md @1e4c740 (96 vCPUs = 4)"),
    "Standard_NC40ads_H100_v5": ("H100-NVL-94GB", 1, f"{_DOCS}/includes/ncads-h100-v5-series-specs.md @70e871c (1-2 H100 NVL; 40 vCPUs = 1)"),
    "Standard_NC80adis_H100_v5": ("H100-NVL-94GB", 2, f"{_DOCS}/includes/ncads-h100-v5-series-specs.md @70e871c (80 vCPUs = 2)"),
    "Standard_ND96isr_MI300X_v5": ("MI300X", 8, f"{_DOCS}/includes/nd-mi300x-v5-series-specs.md @277d7db (8 GPUs)"),
    "Standard_NC4as_T4_v3": ("T4", 1, f"{_DOCS}/includes/ncast4v3-series-specs.md @419ee46 (1-4 T4; 4-16 vCPUs = 1)"),
    "Standard_NC8as_T4_v3": ("T4", 1, f"{_DOCS}/includes/ncast4v3-series-specs.md @419ee46"),
    "Standard_NC16as_T4_v3": ("T4", 1, f"{_DOCS}/includes/ncast4v3-series-specs.md @419ee46"),
    "Standard_NC64as_T4_v3": ("T4", 4, f"{_DOCS}/includes/ncast4v3-series-specs.md @419ee46 (64 vCPUs = 4)"),
    "Standard_NV36ads_A10_v5": ("A10", 1, f"{_DOCS}/includes/nvadsa10v5-series-specs.md @60705da (1/6-2 A10; NV36 = 1)"),
    "Standard_NV36adms_A10_v5": ("A10", 1, f"{_DOCS}/includes/nvadsa10v5-series-specs.md @60705da"),
    "Standard_NV72ads_A10_v5": ("A10", 2, f"{_DOCS}/includes/nvadsa10v5-series-specs.md @60705da (NV72 = 2)"),
    "Standard_ND128isr_NDR_GB200_v6": ("GB200", 4, "learn.microsoft.com nd-gb200-v6-series accelerators table ('Standard_ND128isr_NDR_GB200_v6 | 4 | 192', as quoted in a public price tool; not read first-hand): 4 GPUs"),
}
# Sizes that hold a fraction of one GPU: never a chip count.
FRACTIONAL = {"Standard_NV6ads_A10_v5": "1/6", "Standard_NV12ads_A10_v5": "1/3", "Standard_NV18ads_A10_v5": "1/2"}


def api_url(skus=None) -> str:
    """The live API's first page for the GPU sizes, Virtual Machines only."""
    names = sorted(skus or (*SKUS, *FRACTIONAL))
    sku_filter = " or ".join(f"armSkuName eq '{s}'" for s in names)
    flt = f"serviceName eq 'Virtual Machines' and ({sku_filter})"
    return f"{API_URL}?{urllib.parse.urlencode({'$filter': flt}, quote_via=urllib.parse.quote)}"


def _page(data: bytes, where: str) -> tuple[list, str | None]:
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{where}: not a JSON page of the Azure Retail Prices API ({str(e)[:80]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("Items"), list):
        raise InputError(f"{where}: Items: expected a list of prices (an Azure Retail Prices API page)")
    nxt = doc.get("NextPageLink")
    if nxt is not None and not (isinstance(nxt, str) and nxt.startswith(("http://", "https://"))):
        raise InputError(f"{where}: NextPageLink: expected an http(s) URL or null, got {str(nxt)[:60]!r}")
    return doc["Items"], nxt or None


def read_pages(base: str) -> tuple[list[tuple[str, list]], str]:
    """[(page name, items)] and a display name of where they came from. A URL: that page and every page its
    ``NextPageLink`` names; a folder: its ``*.json`` pages in name order (``<base>/azure/retail-prices`` when
    it exists, else the folder itself; a folder's links are not followed)."""
    if _is_url(base):
        pages, url, seen = [], base, set()
        while url:
            if url in seen or len(pages) >= MAX_PAGES:
                raise InputError(f"{url}: NextPageLink: a loop or more than {MAX_PAGES} pages")
            seen.add(url)
            try:
                data = get_bytes(url, "")
            except NotPublished:
                raise InputError(f"{url}: HTTP 404") from None
            items, url = _page(data, url)
            pages.append((f"page {len(pages) + 1}", items))
        return pages, base.split("?")[0]
    folder = Path(base) / FOLDER if (Path(base) / FOLDER).is_dir() else Path(base)
    if not folder.is_dir():
        raise InputError(f"{paths.rel(folder)}: no such folder (expected recorded API pages, "
                         f"<base>/{FOLDER}/*.json)")
    files = sorted(folder.glob("*.json"))
    if not files:
        raise InputError(f"{paths.rel(folder)}: no *.json page (expected recorded Azure Retail Prices API pages)")
    pages = []
    for f in files:
        _, text = prices.read_text(f)
        pages.append((f.name, _page(text.encode("utf-8"), paths.rel(f))[0]))
    return pages, paths.rel(folder)


def _date(text, where: str) -> str:
    d = prices.price_date(str(text or "")[:10])
    if d is None:
        raise InputError(f"{where}: effectiveStartDate: expected an ISO date, got {str(text)[:40]!r}")
    return d.isoformat()


def rows_from_items(pages, imp: prices.Imported, regions: list[str] | None = None) -> list[dict]:
    """Offerings rows (undated: ``effective`` holds each row's latest effectiveStartDate) from API items."""
    groups: dict[tuple[str, str], dict] = {}
    for name, items in pages:
        for j, it in enumerate(items, start=1):
            where = f"{name}: item {j}"
            if not isinstance(it, dict):
                raise InputError(f"{where}: expected a JSON object")
            sku, region = str(it.get("armSkuName") or ""), str(it.get("armRegionName") or "")
            if sku in FRACTIONAL:
                imp.skip(f"{sku}: a fraction ({FRACTIONAL[sku]}) of one GPU")
                continue
            if sku not in SKUS:
                imp.skip("VM size not in the GPU size table (azurefeed.SKUS)")
                continue
            if regions and region not in regions:
                continue
            if not region:
                imp.skip("item without an armRegionName")
                continue
            if str(it.get("unitOfMeasure", "")).strip() != "1 Hour":
                imp.skip("unitOfMeasure other than '1 Hour'")
                continue
            if str(it.get("currencyCode", "USD")) != "USD":
                imp.skip("currencyCode other than USD")
                continue
            if "windows" in str(it.get("productName", "")).lower():
                imp.skip("Windows price (the Linux price is kept)")
                continue
            meter = f"{it.get('meterName', '')} {it.get('skuName', '')}".lower()
            if "low priority" in meter:
                imp.skip("Low Priority meter (Azure Batch), not a VM spot price")
                continue
            kind = str(it.get("type", ""))
            price = prices._number(it.get("retailPrice"), name, j, "retailPrice", required=True, limit=1e9)
            if kind == "Consumption":
                col = "spot_usd_per_hour" if "spot" in meter else "on_demand_usd_per_hour"
            elif kind == "Reservation":
                term = str(it.get("reservationTerm", ""))
                if term not in TERMS:
                    raise InputError(f"{where}: reservationTerm: expected '1 Year' or '3 Years', got {term[:20]!r}")
                col, years = TERMS[term]
                price = price / (HOURS_PER_YEAR * years)
            else:
                imp.skip(f"type {kind or 'blank'} (not Consumption or Reservation)")
                continue
            g = groups.setdefault((sku, region), {"effective": ""})
            if col not in g or price < g[col]:
                g[col] = price
            g["effective"] = max(g["effective"], _date(it.get("effectiveStartDate"), where))
    out = []
    for (sku, region), g in sorted(groups.items()):
        chip, count, cite = SKUS[sku]
        row = prices._row("azure", "Azure", "hyperscaler", sku, region, chip, count,
                          g.get("on_demand_usd_per_hour"), g.get("spot_usd_per_hour"), None, None,
                          f"Linux price. {count} x {chip} per VM ({cite}).")
        for col in ("commit_1y_usd_per_hour", "commit_3y_usd_per_hour"):
            if col in g:
                row[col] = round(g[col], 6)
        if "commit_1y_usd_per_hour" in g or "commit_3y_usd_per_hour" in g:
            row["notes"] += " 1y/3y = reservation price for the whole term / 8,760 or 26,280 hours."
        row["effective"] = g["effective"]
        out.append(row)
    return out


def azure(base: str | None, regions: list[str] | None, today: _dt.date, res: Result) -> None:
    """``prices refresh --source azure``: the live API (``base`` None), a recorded page served over http(s)
    (its ``NextPageLink`` followed), or a folder of recorded pages."""
    live = base is None
    start = api_url() if live else base
    manifest = {} if _is_url(start) else _manifest(start)
    imp = prices.Imported(pd.DataFrame())
    try:
        pages, where = read_pages(start)
        rows = rows_from_items(pages, imp, regions)
    except InputError as e:
        res.failed.append(f"azure: {e.problems[0] if e.problems else e}")
        return
    recorded = next((m for p, m in manifest.items() if p.startswith(FOLDER) or p == "azure"), None)
    for r in rows:
        eff = r.pop("effective")
        if live:
            r["price_as_of"] = today.isoformat()
            r["notes"] += f" Prices in force since {eff} (effectiveStartDate), listed by the API on {today}."
            how = "fetch day (the live API lists the prices in force)"
        elif recorded and recorded.get("price_as_of"):
            r["price_as_of"] = recorded["price_as_of"]
            r["notes"] += f" Prices in force since {eff} (effectiveStartDate)."
            how = f"SOURCES.csv: {recorded.get('how', '')}".strip()
        else:
            r["price_as_of"] = eff
            how = "effectiveStartDate of the row's prices (a lower bound: in force from that day)"
    commit = f" @{recorded['commit'][:7]}" if recorded and recorded.get("commit") else ""
    src = f"{SOURCE_STEM} {API_URL if live else where}{commit} {REFRESH_MARK}"
    df = pd.DataFrame(rows)
    if len(df):
        df = df.assign(source=src, as_of=today.isoformat(), price_basis="catalog")
    df = prices.typed(df, f"{where} (Azure Retail Prices API)") if len(df) else df
    res.rows.append(df)
    res.providers.add("Azure")
    for what, n in imp.skipped.items():
        res.skipped[f"azure: {what}"] = res.skipped.get(f"azure: {what}", 0) + n
    dates = sorted({d for d in df.get("price_as_of", [])}) if len(df) else []
    span = f"{dates[0]}..{dates[-1]}" if len(dates) > 1 else (dates[0] if dates else "none")
    res.read.append(f"azure retail prices {where}: {len(pages)} page(s), {len(df)} rows, price_as_of {span} ({how if rows else 'no rows'})")
    res.stems.append(f"{SOURCE_STEM} ")
