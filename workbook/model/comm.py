"""Collective communication times: all-reduce, reduce-scatter, all-gather, all-to-all and
point-to-point over a group of chips laid out on a topology.

A ``Topology`` describes one fast domain (an NVLink/NVSwitch node or NVL72 rack, an xGMI mesh, a
PCIe server, a TPU slice or a Trainium instance) and the network between domains (InfiniBand/EFA/
RoCE NICs for GPUs, the data-centre network between TPU slices). It is built from a row of
``catalog.accelerators()`` and, when there is one, a row of ``data/topology.csv``.

Every function is vectorised: ``bytes_``, ``n`` (group size) and ``stride`` (distance in chip
ranks between consecutive members; the group of a parallelism dimension with inner dimensions of
total size ``s`` has stride ``s``) may be numpy arrays of one shape, so the scaling search prices
every configuration of its grid in one call.

Conventions: bandwidths are bytes per second per chip per direction; ``bytes_`` is the size of the
whole buffer on one chip (all-reduce: the buffer reduced; all-gather: the gathered output;
reduce-scatter: the input before scattering; all-to-all: the chip's send buffer).

Sources
- Ring collectives: 2(n-1)/n·M/B for all-reduce, (n-1)/n·M/B for reduce-scatter and all-gather
  (NCCL documentation, "Performance reported by NCCL tests": busBw = algBw·2(n-1)/n for AllReduce
  and (n-1)/n for AllGather/ReduceScatter; Patarasuk & Yuan 2009 "Bandwidth optimal all-reduce").
- Latency: NCCL's own cost model (NVIDIA/nccl src/graph/tuning.cc): a ring collective pays a base
  latency plus a per-step latency for each of its (n-1) steps, network steps priced higher than
  NVLink steps; the tree algorithm pays 2·((k-1)·intra + log2(nodes)·net). The per-step values are
  in ``data/topology.csv`` with their commit.
- GPU nodes and clusters: "How to Scale Your Model" (scaling-book, Austin et al. 2025) ch. 12
  "How to Think About GPUs": within a node T = bytes·(N-1)/(N·W_GPU egress); across nodes a
  hierarchical collective costs max(T_node, T_scale-out) with the scale-out part at node egress
  bandwidth, reduced by the number of chips of an inner sharded axis in each node; all-to-all
  B·(N-1)/(N²·W) within a node, and its cross-node part at per-node egress.
- TPU tori: scaling-book ch. 3 "Sharded Matrices and How to Multiply Them": a bidirectional ring
  all-gather over an axis costs V/W_ICI (W_ICI = bidirectional bandwidth of the axis), independent
  of the axis length; without wraparound links the ring runs one way (half the bandwidth); over
  several axes the bandwidth adds up; hops cost about 1 µs each; an all-to-all on a bidirectional
  ring costs a quarter of an all-gather of the same total array.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import catalog
from ..errors import InputError

KINDS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")


# --- textbook formulas --------------------------------------------------------------------------

def ring_all_reduce_s(bytes_, n, bytes_per_s, step_latency_s=0.0):
    """Ring all-reduce of ``bytes_`` on each of ``n`` chips: 2(n-1)/n·M/B + 2(n-1)·α.

    A reduce-scatter then an all-gather, each n-1 steps of M/n bytes (NCCL docs: busBw = algBw ·
    2(n-1)/n; Patarasuk & Yuan 2009)."""
    n = np.asarray(n, dtype=float)
    return 2.0 * (n - 1.0) / n * np.asarray(bytes_, dtype=float) / bytes_per_s + 2.0 * (n - 1.0) * step_latency_s


def ring_all_gather_s(bytes_, n, bytes_per_s, step_latency_s=0.0):
    """Ring all-gather producing ``bytes_`` on each of ``n`` chips: (n-1)/n·M/B + (n-1)·α (NCCL docs)."""
    n = np.asarray(n, dtype=float)
    return (n - 1.0) / n * np.asarray(bytes_, dtype=float) / bytes_per_s + (n - 1.0) * step_latency_s


def ring_reduce_scatter_s(bytes_, n, bytes_per_s, step_latency_s=0.0):
    """Ring reduce-scatter of ``bytes_`` on each of ``n`` chips: (n-1)/n·M/B + (n-1)·α (NCCL docs);
    the mirror image of the all-gather, same cost."""
    return ring_all_gather_s(bytes_, n, bytes_per_s, step_latency_s)


def switch_all_to_all_s(bytes_per_chip, n, bytes_per_s):
    """All-to-all over ``n`` chips on a switch: each sends (n-1)/n of its buffer, B·(n-1)/n / W.

    scaling-book ch. 12: B_total·(N-1)/(W·N²) with B_total = n · bytes per chip."""
    n = np.asarray(n, dtype=float)
    return (n - 1.0) / n * np.asarray(bytes_per_chip, dtype=float) / bytes_per_s


def torus_all_gather_s(bytes_, axis_bytes_per_s, n_axes=1, wraparound=True):
    """All-gather of ``bytes_`` (the gathered array) over ``n_axes`` full torus axes:
    V / (W_axis · n_axes), W_axis the bidirectional bandwidth of one axis; a ring without
    wraparound links sends one way only, half the bandwidth (scaling-book ch. 3)."""
    w = np.asarray(axis_bytes_per_s, dtype=float) * n_axes * (1.0 if wraparound else 0.5)
    return np.asarray(bytes_, dtype=float) / w


# --- topology ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Topology:
    """One fast domain and the network between domains, as the collectives see them."""

    accelerator: str
    domain: str
    fabric: str  # switch | mesh | torus | pcie
    domain_chips: int  # chips in one fast domain (NVLink domain, TPU slice, Trainium instance)
    intra_bytes_per_s: float  # per chip, per direction, over all of its fast links
    inter_bytes_per_s: float  # per chip, per direction, to other domains (NIC share, DCN share)
    shape: tuple = ()  # torus axis lengths of one domain
    axis_bytes_per_s: tuple = ()  # per chip, outgoing bytes/s along each torus axis (its two links)
    wraparound: tuple = ()  # per torus axis: has wraparound links
    base_latency_s: float = 0.0
    hop_latency_s: float = 0.0
    net_latency_s: float = 0.0
    # NCCL's low-latency (LL) protocol: lower latencies, a fraction of the bandwidth (NaN: none)
    ll_base_latency_s: float = np.nan
    ll_hop_latency_s: float = np.nan
    ll_net_latency_s: float = np.nan
    ll_bandwidth_fraction: float = np.nan
    n_domains: int = 1
    notes: str = ""

    def describe(self) -> str:
        """One sentence for reports: what the fast domain is and how fast each level is."""
        shape = f" shaped {'x'.join(map(str, self.shape))}" if self.shape else ""
        net = (f"{self.inter_bytes_per_s / 1e9:,.1f} GB/s per chip between domains"
               if np.isfinite(self.inter_bytes_per_s) else "no network between domains in the catalog")
        return (f"{self.n_domains} x {self.domain}{shape} ({self.domain_chips} chips, {self.fabric}, "
                f"{self.intra_bytes_per_s / 1e9:,.0f} GB/s per chip per direction); {net}")


def _num(v, default=np.nan) -> float:
    return default if v is None or pd.isna(v) else float(v)


def _shape(text: str) -> tuple:
    return tuple(int(x) for x in str(text).lower().split("x"))


def _pick_slice(shapes: list[tuple], chips: int) -> tuple:
    """The slice a job of ``chips`` runs on: the smallest listed shape that holds it; beyond the
    largest, the largest shape that divides ``chips`` (Multislice), else the largest."""
    sizes = [math.prod(s) for s in shapes]
    order = sorted(range(len(shapes)), key=lambda i: sizes[i])
    for i in order:
        if sizes[i] >= chips:
            return shapes[i]
    dividing = [i for i in order if chips % sizes[i] == 0]
    return shapes[dividing[-1]] if dividing else shapes[order[-1]]


def _balanced_shape(domain: int, dims: int) -> tuple:
    """Axis lengths of a torus of ``domain`` chips over ``dims`` axes, as equal as powers of two allow.
    Used only when data/topology.csv has no slice shapes for the accelerator (an assumption)."""
    if dims <= 1:
        return (domain,)
    shape = [1] * dims
    rest = domain
    i = 0
    while rest > 1 and rest % 2 == 0:
        shape[i % dims] *= 2
        rest //= 2
        i += 1
    shape[-1] *= rest
    return tuple(sorted(shape))


def _acc_name(acc) -> str | None:
    """The accelerator's id: a catalog row's index label, else its ``accelerator`` field (a dict too)."""
    name = getattr(acc, "name", None)
    return name if isinstance(name, str) else acc.get("accelerator")


def topology_options(acc: pd.Series) -> pd.DataFrame:
    """The rows of data/topology.csv for one accelerator (empty when it has none)."""
    t = catalog.load("topology")
    name = _acc_name(acc)
    return t[t["accelerator"] == name].reset_index(drop=True)


@functools.lru_cache(maxsize=1)
def _topology_table() -> dict:
    """data/topology.csv as dicts grouped by accelerator, in file order (one ``to_dict`` per process,
    not a filter and a conversion per accelerator)."""
    out: dict = {}
    for r in catalog.load("topology").to_dict("records"):
        out.setdefault(r["accelerator"], []).append(r)
    return {k: tuple(v) for k, v in out.items()}


@functools.lru_cache(maxsize=None)
def _topology_rows(name: str) -> tuple:
    """data/topology.csv rows of one accelerator as dicts (read once per process)."""
    return _topology_table().get(name, ())


def tp_domain_chips(acc) -> int:
    """Chips that tensor and expert parallelism may span on the chip-to-chip link (``acc``: a catalog
    row or record): the node (``chips_per_node``), or the whole fast domain when that is one switched
    domain larger than a node, not a torus: a GB200 or GB300 NVL72 rack is 72 GPUs on NVLink
    switches, 4 per host (NVIDIA GB200 NVL72; "How to Scale Your Model", GPUs chapter: "72 GPUs in
    a single NVLink domain with full 900GB/s of GPU to GPU bandwidth"), so tensor parallelism of 16
    stays on NVLink. A torus (TPU, Trainium2) keeps the node: its axes are priced by ``topology``."""
    node = int(_num(acc.get("chips_per_node"), 1))
    dom, dims = _num(acc.get("fast_domain_chips")), _num(acc.get("torus_dims"), 0.0)
    if np.isnan(dom) or int(dom) <= node or dims > 0:
        return node
    return int(dom)


_ACC_FIELDS = ("intra_node_bytes_per_s", "inter_node_bytes_per_s", "torus_dims", "fast_domain_chips", "chips_per_node")


def topology(acc: pd.Series | dict, chips: int | None = None, domain: str | None = None, *,
             domain_chips: int | None = None, intra_node_bytes_per_s: float | None = None,
             inter_node_bytes_per_s: float | None = None) -> Topology:
    """The Topology a job of ``chips`` chips of accelerator ``acc`` (a row of
    ``catalog.accelerators()``, indexed by id or with an ``accelerator`` field, or such a row as a
    dict, ``catalog.accelerator_record``) runs on.

    ``domain`` picks an interconnect option of data/topology.csv by name (default: the row marked
    ``default``); keyword overrides replace catalog figures for what-if questions (a 72-GPU NVLink
    domain, a 3.2 Tb/s network). Without a topology row the fabric is a torus when the catalog gives
    ``torus_dims`` and a switch otherwise, the domain is ``fast_domain_chips`` (or
    ``chips_per_node``), and latencies are zero (none published). Cached per process on the
    accelerator's interconnect fields and the arguments (the catalogs are read once)."""
    name = _acc_name(acc)
    fields = tuple(None if np.isnan(v) else v for v in (_num(acc.get(f)) for f in _ACC_FIELDS))  # NaN never hits a cache
    return _topology(str(name), fields, None if chips is None else int(chips), domain, domain_chips,
                     intra_node_bytes_per_s, inter_node_bytes_per_s)


@functools.lru_cache(maxsize=4096)
def _topology(name: str, fields: tuple, chips, domain, domain_chips, intra_node_bytes_per_s,
              inter_node_bytes_per_s) -> Topology:
    acc = dict(zip(_ACC_FIELDS, (np.nan if v is None else v for v in fields)))
    rows = _topology_rows(name)
    row = None
    if domain is not None:
        hit = [r for r in rows if r["domain"] == domain]
        if not hit:
            raise InputError(f"topology: accelerator {name}: unknown domain {domain!r}"
                             f"{catalog._suggest(domain, [r['domain'] for r in rows])}"
                             + ("" if rows else " (data/topology.csv has no rows for it)"))
        row = hit[0]
    elif rows:
        default = [r for r in rows if bool(r["default"])]
        row = (default or rows)[0]
    intra = _num(intra_node_bytes_per_s if intra_node_bytes_per_s is not None else acc.get("intra_node_bytes_per_s"))
    inter = _num(inter_node_bytes_per_s if inter_node_bytes_per_s is not None else acc.get("inter_node_bytes_per_s"))
    dims = int(_num(acc.get("torus_dims"), 0))
    if row is not None:
        fabric, dom_name = row["fabric"], row["domain"]
        dom = int(row["domain_chips"])
        shapes = [_shape(s) for s in str(row["slice_shapes"]).split(";")] if isinstance(row["slice_shapes"], str) else []
        wrap_multiple = _num(row["wraparound_multiple"])
        axis_bw_text = row["axis_bytes_per_s"]
        lat = (_num(row["base_latency_s"], 0.0), _num(row["hop_latency_s"], 0.0), _num(row["net_latency_s"], 0.0))
        ll = tuple(_num(row[c]) for c in ("ll_base_latency_s", "ll_hop_latency_s", "ll_net_latency_s", "ll_bandwidth_fraction"))
        notes = str(row["notes"]) if isinstance(row["notes"], str) else ""
    else:
        fabric = "torus" if dims >= 1 else "switch"
        dom = int(_num(acc.get("fast_domain_chips"), _num(acc.get("chips_per_node"), 1)))
        dom_name = f"{dom}-chip {'torus' if fabric == 'torus' else 'node'}"
        shapes, wrap_multiple, axis_bw_text, lat = [], np.nan, None, (0.0, 0.0, 0.0)
        ll = (np.nan,) * 4
        notes = "no data/topology.csv row: fabric and shape inferred from data/accelerators.csv; no latency terms"
    if domain_chips is not None:
        dom = int(domain_chips)
        shapes = [s for s in shapes if math.prod(s) <= dom]
    shape = ()
    if fabric == "torus":
        if shapes:
            shape = _pick_slice(shapes, chips or dom)
        else:
            shape = _balanced_shape(min(dom, chips or dom), max(dims, 1))
        dom = math.prod(shape)
        if isinstance(axis_bw_text, str) and axis_bw_text.strip() and len(axis_bw_text.split(";")) == len(shape):
            axis_bw = tuple(float(x) for x in axis_bw_text.split(";"))
            if intra_node_bytes_per_s is not None:  # a what-if scales every axis alike
                axis_bw = tuple(x * intra / sum(axis_bw) for x in axis_bw)
        else:
            axis_bw = tuple([intra / len(shape)] * len(shape))
        wrap = tuple(bool(np.isfinite(wrap_multiple) and a % wrap_multiple == 0 and a > 1) for a in shape)
    else:
        axis_bw, wrap = (), ()
    n_domains = 1 if not chips else int(math.ceil(chips / dom))
    where = f"data/accelerators.csv: {name}"
    if chips and chips > 1 and min(chips, dom) > 1 and not np.isfinite(intra):
        raise InputError(f"{where}: intra_node_bytes_per_s is blank, so communication among {name} chips "
                         "cannot be priced (give it, or pass intra_node_bytes_per_s=...)")
    if n_domains > 1 and not np.isfinite(inter):
        raise InputError(f"{where}: inter_node_bytes_per_s is blank, so {chips} chips (more than one "
                         f"{dom}-chip domain) cannot be priced (give it, or pass inter_node_bytes_per_s=...)")
    return Topology(accelerator=str(name), domain=str(dom_name), fabric=str(fabric), domain_chips=int(dom),
                    intra_bytes_per_s=intra, inter_bytes_per_s=inter, shape=shape, axis_bytes_per_s=axis_bw,
                    wraparound=wrap, base_latency_s=lat[0], hop_latency_s=lat[1], net_latency_s=lat[2],
                    ll_base_latency_s=ll[0], ll_hop_latency_s=ll[1], ll_net_latency_s=ll[2],
                    ll_bandwidth_fraction=ll[3], n_domains=n_domains, notes=notes)


def ideal_topology(chips: int = 1) -> Topology:
    """A network with unbounded bandwidth and no latency: communication costs nothing (for tests and
    for isolating compute and bubble effects)."""
    return Topology(accelerator="ideal", domain="ideal", fabric="switch", domain_chips=max(int(chips), 1),
                    intra_bytes_per_s=np.inf, inter_bytes_per_s=np.inf)


def with_changes(topo: Topology, **changes) -> Topology:
    """A copy of a Topology with some fields replaced (``dataclasses.replace``)."""
    return replace(topo, **changes)


# --- a group on the topology --------------------------------------------------------------------

def _placement(n, stride, topo: Topology):
    """Members of each group inside one domain (k) and domains the group spans (m).

    Ranks are laid out domain by domain; a group whose members are ``stride`` ranks apart has
    floor(domain/stride) members per domain (at least 1, at most n)."""
    n = np.asarray(n, dtype=float)
    stride = np.asarray(stride, dtype=float)
    k = np.clip(np.floor(topo.domain_chips / stride), 1.0, n)
    k = np.minimum(k, n)
    m = np.ceil(n / k)
    return n, stride, k, m


def _torus_terms(k, stride, topo: Topology):
    """For a group of k chips ``stride`` apart inside one torus domain (ranks laid out along the
    first axis first): effective bandwidth (sum over the axes it spans of the axis bandwidth, halved
    without a wraparound ring, divided by the groups interleaved on the axis), ring hops for the
    latency, and the all-to-all time per byte (the slowest axis bisection)."""
    bw = np.zeros(np.broadcast(k, stride).shape)
    hops = np.zeros_like(bw)
    a2a = np.zeros_like(bw)
    P = 1.0
    for a, w, wrap in zip(topo.shape, topo.axis_bytes_per_s, topo.wraparound):
        step = np.clip(stride / P, 1.0, a)  # positions between members along this axis
        extent = np.clip(k * stride / P, 1.0, a)  # positions the group reaches along this axis
        cov = np.maximum(extent / step, 1.0)  # distinct positions it occupies
        spans = cov >= 2.0
        ring = (extent >= a) & wrap  # the group closes the axis ring through the wraparound link
        f = np.where(ring, 1.0, 0.5) / step
        bw = bw + np.where(spans, f * w, 0.0)
        hops = hops + np.where(spans, np.where(ring, cov / 2.0, cov - 1.0) * step, 0.0)
        a2a = np.maximum(a2a, np.where(spans, cov / (4.0 * f * w), 0.0))
        P *= a
    return bw, hops, a2a


def _intra_bw(k, stride, topo: Topology):
    if topo.fabric == "torus":
        bw, hops, _ = _torus_terms(k, stride, topo)
        return bw, hops
    if topo.fabric == "mesh":
        links = max(topo.domain_chips - 1, 1)
        return topo.intra_bytes_per_s * (k - 1.0) / links, k - 1.0
    return np.full(np.shape(k), topo.intra_bytes_per_s, dtype=float), k - 1.0


def _safe_div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a > 0, a / b, 0.0)


def group(n, stride, topo: Topology) -> dict:
    """What every collective over groups of ``n`` chips ``stride`` ranks apart shares, whatever its
    kind, bytes and calls (``collective_s``): the placement (``_placement``), the bandwidth inside the
    domain (``_intra_bw``) and the latency of a call per algorithm and protocol (filled as used). The
    data-parallel schedules price five collectives over one group (``model.dataparallel``)."""
    n, stride, k, m = _placement(n, stride, topo)
    bw_i, hops = _intra_bw(k, stride, topo)
    return {"topo": topo, "n": n, "stride": stride, "k": k, "m": m, "bw_i": bw_i, "hops": hops, "latency": {}}


def _group_latency(gr: dict, kind: str, ll: bool):
    """Seconds of latency per call of ``kind`` over the group ``gr`` (``group``), Simple protocol or LL."""
    key = (kind if kind in ("all_to_all", "all_reduce") else "ring", ll)
    hit = gr["latency"].get(key)
    if hit is not None:
        return hit
    topo, n, k, m, hops = gr["topo"], gr["n"], gr["k"], gr["m"], gr["hops"]
    base, hop, net = ((topo.ll_base_latency_s, topo.ll_hop_latency_s, topo.ll_net_latency_s) if ll
                      else (topo.base_latency_s, topo.hop_latency_s, topo.net_latency_s))
    if kind == "all_to_all":
        dom_steps = np.where(k > 1, np.maximum(hops, 1.0) if topo.fabric == "torus" else 1.0, 0.0)
        out = base + dom_steps * hop + np.where(m > 1, net, 0.0)
    else:
        dom_steps = hops if topo.fabric == "torus" else (n - m)
        out = base + dom_steps * hop + (m - 1.0) * net
        if kind == "all_reduce":
            out = base + 2.0 * (dom_steps * hop + (m - 1.0) * net)
            if topo.fabric != "torus":
                tree = base + 2.0 * ((k - 1.0) * hop + np.ceil(np.log2(m)) * net)
                out = np.minimum(out, tree)
    gr["latency"][key] = out
    return out


def ring_band_s(bytes_, gr: dict, topo: Topology | None = None):
    """The bandwidth term of a reduce-scatter or all-gather of ``bytes_`` over the group ``gr``
    (``group``): the larger of the ring inside the domain and the scale-out part (``collective_s``);
    an all-reduce moves twice it. Shared by the collectives of one buffer over one group
    (``model.dataparallel``: the gradient buffer's all-reduce and reduce-scatters). ``topo``: the
    network (default the group's)."""
    M = np.asarray(bytes_, dtype=float)
    k, m = gr["k"], gr["m"]
    a_in, a_out = (k - 1.0) / k * M, (m - 1.0) / m * M / k
    with np.errstate(divide="ignore", invalid="ignore"):  # ``_safe_div`` of both, under one errstate
        t_in = np.where(a_in > 0, a_in / gr["bw_i"], 0.0)
        t_out = np.where(m > 1, np.where(a_out > 0, a_out / float((topo or gr["topo"]).inter_bytes_per_s), 0.0), 0.0)
    return np.maximum(t_in, t_out)


def collective_s(kind: str, bytes_, n, stride, topo: Topology, calls=1, group_terms: dict | None = None,
                 ring_band=None):
    """Seconds for ``calls`` collectives of ``kind`` moving ``bytes_`` in total (summed over the
    calls) over groups of ``n`` chips whose consecutive members are ``stride`` ranks apart.

    Bandwidth term (scaling-book ch. 12): inside a domain, a ring over the k members at the
    fabric's bandwidth; across m domains, each chip carries 1/k of the buffer over its own NIC
    share, so the scale-out part is (m-1)/m · (M/k) / W_inter; the two levels pipeline, so the time
    is the larger of the two. All-reduce is twice an all-gather. All-to-all: the share of the buffer
    that stays in the domain over the fabric, the rest over the network.

    Latency term, once per call (NCCL tuning.cc, ring algorithm): base + (n-m) domain steps +
    (m-1) network steps, twice for an all-reduce, which may use the tree algorithm instead
    (2·((k-1) steps + log2 m network steps), priced here with the ring's per-step latencies) when
    that is shorter; on a torus the domain steps are the ring hops along each spanned axis
    (scaling-book ch. 3, about 1 µs each). NCCL picks, per message, the faster of its Simple
    protocol and its low-latency LL protocol (lower latencies, a fraction of the bandwidth); where
    data/topology.csv gives LL figures both are priced and the faster kept. ``ring_band``: the
    bandwidth term ``ring_band_s`` already computed for these bytes and this group (not all-to-all)."""
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    gr = group(n, stride, topo) if group_terms is None else group_terms
    M = np.asarray(bytes_, dtype=float)
    n, stride, k, m = gr["n"], gr["stride"], gr["k"], gr["m"]
    calls = np.asarray(calls, dtype=float)
    inter = topo.inter_bytes_per_s
    if kind == "all_to_all":
        if topo.fabric == "torus":
            _, _, a2a = _torus_terms(k, stride, topo)
            t_in = (k / n) * M * a2a
        elif topo.fabric == "mesh":
            t_in = np.where(k > 1, (M / n) / (topo.intra_bytes_per_s / max(topo.domain_chips - 1, 1)), 0.0)
        else:
            t_in = (k - 1.0) / n * M / topo.intra_bytes_per_s
        t_out = np.where(m > 1, (n - k) / n * M / inter, 0.0)
        band = np.maximum(t_in, t_out)
    else:
        band = ring_band_s(M, gr, topo) if ring_band is None else ring_band
        if kind == "all_reduce":
            band = 2.0 * band
    out = band + calls * _group_latency(gr, kind, False)
    if np.isfinite(topo.ll_bandwidth_fraction) and kind != "all_to_all":
        ll = band / topo.ll_bandwidth_fraction + calls * _group_latency(gr, kind, True)
        out = np.minimum(out, ll)
    return np.where(n > 1, out, 0.0)


def all_reduce_s(bytes_, n, topo: Topology, stride=1, calls=1):
    """All-reduce of ``bytes_`` per chip over ``n`` chips ``stride`` apart (see ``collective_s``)."""
    return collective_s("all_reduce", bytes_, n, stride, topo, calls)


def reduce_scatter_s(bytes_, n, topo: Topology, stride=1, calls=1):
    """Reduce-scatter of a ``bytes_`` input per chip (see ``collective_s``)."""
    return collective_s("reduce_scatter", bytes_, n, stride, topo, calls)


def all_gather_s(bytes_, n, topo: Topology, stride=1, calls=1):
    """All-gather producing ``bytes_`` on every chip (see ``collective_s``)."""
    return collective_s("all_gather", bytes_, n, stride, topo, calls)


def all_to_all_s(bytes_, n, topo: Topology, stride=1, calls=1):
    """All-to-all of a ``bytes_`` send buffer per chip (see ``collective_s``)."""
    return collective_s("all_to_all", bytes_, n, stride, topo, calls)


def p2p_s(bytes_, stride, topo: Topology, calls=1):
    """Send ``bytes_`` (summed over ``calls``) to the chip ``stride`` ranks away (pipeline stages).

    Across domains: over the chip's NIC share plus a network step; inside a switch: the chip's
    full bandwidth; in a mesh: one peer link; in a torus: one link, one way (half the axis
    bandwidth, scaling-book ch. 2/3), with one hop per position crossed."""
    M = np.asarray(bytes_, dtype=float)
    stride = np.asarray(stride, dtype=float)
    calls = np.asarray(calls, dtype=float)
    cross = stride >= topo.domain_chips
    if topo.fabric == "torus":
        P = 1.0
        link = np.full(stride.shape, np.nan)
        steps = np.ones(stride.shape)
        for a, w in zip(topo.shape, topo.axis_bytes_per_s):
            here = (stride >= P) & (stride < P * a)
            link = np.where(here, w / 2.0, link)
            steps = np.where(here, stride / P, steps)
            P *= a
        intra_bw = np.where(np.isnan(link), topo.intra_bytes_per_s, link)
        intra_lat = steps * topo.hop_latency_s
    elif topo.fabric == "mesh":
        intra_bw = np.full(stride.shape, topo.intra_bytes_per_s / max(topo.domain_chips - 1, 1))
        intra_lat = np.full(stride.shape, topo.hop_latency_s)
    else:
        intra_bw = np.full(stride.shape, topo.intra_bytes_per_s)
        intra_lat = np.full(stride.shape, topo.hop_latency_s)
    bw = np.where(cross, topo.inter_bytes_per_s, intra_bw)
    lat = topo.base_latency_s + np.where(cross, topo.net_latency_s, intra_lat)
    return M / bw + calls * lat
