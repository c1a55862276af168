"""The whole-server balance of an offer (issue 12): is the host around the chips big enough for the
workload? Three checks on the offering's host specs (``data/offerings.csv`` ``vcpus``,
``host_memory_bytes``, ``local_nvme_bytes``), each flagged only where it is certainly short:

- *CPU per chip for the input pipeline*: fewer than ``MIN_VCPUS_PER_CHIP`` vCPUs per accelerator.
  PyTorch runs one process per device (``torch.nn.parallel.DistributedDataParallel``: "one
  process per GPU", pytorch.org/docs/stable/notes/ddp.html; vLLM likewise one worker per GPU) and a
  ``DataLoader`` with ``num_workers > 0`` adds that many worker processes per rank
  (pytorch.org/docs/stable/data.html, "Multi-process data loading"): one vCPU for the rank and one
  for a single loader worker is the floor, below it input preparation and the training loop share
  a core.
- *Host RAM for loading the model*: less host RAM than the weights the instance's chips hold.
  Loading a checkpoint goes through host memory: Transformers' default path holds two full copies
  in RAM ("Instantiating a big model", huggingface.co/docs/transformers/v4.20.0/big_models) and
  ``low_cpu_mem_usage`` still needs "1x model size in CPU memory" (``from_pretrained`` docstring,
  huggingface/transformers PR #16621); every process of a distributed job loads its own copy. The
  share is a lower bound, ``weights x min(1, chips_per_instance / chips)`` (weights spread evenly
  over every chip of the plan), so a flag means short even for a fully sharded load.
- *NVMe for checkpoints (training) and model files (serving)*: a local disk smaller than the
  instance's share of one checkpoint (``checkpoint_bytes`` x the same share) or of the weights
  cannot hold it, so checkpoints and model loading go over the network (the checkpoint tier and
  load time of ``pricing``). Physical capacity, no threshold; only where ``local_nvme_bytes`` is
  published.

A blank host spec is "not checked", never a flag (``host_checks`` says which were checked).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pandas.core.dtypes.cast import maybe_box_native

from .. import catalog
from ..model.profile import weight_bytes, workload_profile
from ..scenario import Scenario

MIN_VCPUS_PER_CHIP = 2.0  # one rank process + one DataLoader worker per chip (PyTorch DDP / DataLoader docs)
GB = 1e9


def _num(v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def _build_host_index(full: pd.DataFrame) -> dict[str, dict]:
    off = full[[c for c in _HOST_COLUMNS if c in full]]   # what balance_flags reads, not every column
    off = off.drop_duplicates("offering")
    cols = list(off.columns)
    return {r["offering"]: r for r in (dict(zip(cols, row)) for row in zip(*_column_values(off, cols)))}


_HOSTS = catalog.PerLoad(_build_host_index)


def _host_index() -> dict[str, dict]:
    """Every offering's host specs (``_HOST_COLUMNS`` of its catalog row) by offering id, from ``data/offerings.csv``; built
    once per catalog load (callers only read it)."""
    return _HOSTS.get(catalog.offerings())


def _column_values(df: pd.DataFrame, cols: list) -> list[list]:
    """The values of ``cols`` as lists, as ``to_dict("records")`` gives them (the values of object and extension
    columns through pandas' ``maybe_box_native``: numpy scalars as Python ones, NA as None), a column at a time."""
    return [df[c].tolist() if isinstance(df[c].dtype, np.dtype) and df[c].dtype != object else
            list(map(maybe_box_native, df[c].tolist())) for c in cols]


_HOST_COLUMNS = ("offering", "instance", "chips_per_instance", "vcpus", "host_memory_bytes", "local_nvme_bytes")


def _host(offering: str, hosts: dict[str, dict] | None = None) -> dict | None:
    """The offering's catalog row (host specs), None when it is not in ``data/offerings.csv``."""
    return (hosts if hosts is not None else _host_index()).get(offering)


def _weights(s: Scenario) -> float:
    w = s.workload
    prec = w.precision if not s.is_training or w.precision in ("fp32",) else "bf16"
    return float(weight_bytes(workload_profile(w), prec))


def _share(option, cpi: float) -> float:
    """The instance's least share of the plan's weights, ``min(1, chips_per_instance / chips)``; NaN
    when the option has no plan (it did not fit), so nothing is checked against it."""
    chips = _num(option.get("chips"))
    if not math.isfinite(chips) or chips <= 0:
        return math.nan
    return min(1.0, cpi / chips)


def balance_flags(s: Scenario, option, weights_bytes: float | None = None,
                  hosts: dict[str, dict] | None = None) -> tuple[list[str], list[str]]:
    """(flags, checks) for one priced option (a row with ``offering``, ``chips`` and, for training,
    ``checkpoint_bytes``): each flag one sentence naming the shortfall and its source rule (module
    docstring); ``checks`` the checks that could be made (``cpu``, ``ram``, ``nvme``)."""
    host = option if "vcpus" in option and "host_memory_bytes" in option and "instance" in option else (
        _host(option.get("offering"), hosts) if isinstance(option.get("offering"), str) else None)
    if host is None:
        return [], []
    cpi = _num(host.get("chips_per_instance"))
    inst = f"{host['offering']} ({host['instance']})"
    flags, checks = [], []
    vcpus = _num(host.get("vcpus"))
    if math.isfinite(vcpus) and cpi > 0:
        checks.append("cpu")
        if vcpus / cpi < MIN_VCPUS_PER_CHIP:
            flags.append(f"Host CPU short: {inst} has {vcpus:g} vCPUs for {cpi:g} chips ({vcpus / cpi:.1f} per chip), "
                         f"under {MIN_VCPUS_PER_CHIP:g} per chip (one process per chip plus one input-pipeline worker, "
                         "PyTorch DDP/DataLoader): the input pipeline can starve the chips.")
    share = _share(option, cpi)
    wb = _weights(s) if weights_bytes is None else weights_bytes
    need = wb * share
    ram = _num(host.get("host_memory_bytes"))
    if math.isfinite(ram) and math.isfinite(need):
        checks.append("ram")
        if ram < need:
            flags.append(f"Host RAM short: {inst} has {ram / GB:,.0f} GB of host memory but its chips hold at least "
                         f"{need / GB:,.0f} GB of weights, and loading a checkpoint needs 1x that in host RAM even with "
                         "low_cpu_mem_usage (2x by default; Hugging Face 'Instantiating a big model'): load in shards "
                         "straight to the devices or pick a larger host.")
    nvme = _num(host.get("local_nvme_bytes"))
    if math.isfinite(nvme) and math.isfinite(need):
        checks.append("nvme")
        ckpt = _num(option.get("checkpoint_bytes")) if s.is_training else math.nan
        what, size = ("one checkpoint shard", ckpt * share) if math.isfinite(ckpt) else ("the model files", need)
        if nvme < size:
            flags.append(f"Local NVMe short: {inst} has {nvme / GB:,.0f} GB of local NVMe, less than {what} "
                         f"({size / GB:,.0f} GB on this instance): it is written to and read from network storage.")
    return flags, checks


def balance_table(s: Scenario, options: pd.DataFrame) -> pd.DataFrame:
    """``host_warnings`` (the flags joined by a space, "" when none) and ``host_checks`` (``cpu,ram,nvme``
    or the subset published) for every row of ``options`` (same index)."""
    if options is None or options.empty or "offering" not in options:
        return pd.DataFrame({"host_warnings": pd.Series(dtype=object), "host_checks": pd.Series(dtype=object)})
    wb, hosts = _weights(s), _host_index()   # once per table, not per row
    # the columns balance_flags reads (the option's own host specs when it carries them)
    cols = [c for c in ("offering", "instance", "chips", "checkpoint_bytes", "chips_per_instance", "vcpus",
                        "host_memory_bytes", "local_nvme_bytes") if c in options]
    memo: dict = {}   # the ways to pay of one offering share their host and plan: checked once
    out = []
    # the rows as ``to_dict("records")`` gives them (numpy scalars of object columns as Python ones), a column
    # at a time; a row's dict is built only for a row not checked before
    for row in zip(*_column_values(options, cols)):
        key = tuple(None if isinstance(v, float) and v != v else v for v in row)
        if key not in memo:
            memo[key] = balance_flags(s, dict(zip(cols, row)), wb, hosts)
        out.append(memo[key])
    return pd.DataFrame({"host_warnings": [" ".join(f) for f, _ in out],
                         "host_checks": [",".join(c) for _, c in out]}, index=options.index)
