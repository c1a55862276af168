"""The chips of 2025-2026 (issue 24): each answers `estimate`, the names catalogs use resolve to them,
and a GB200 NVL72 rack runs tensor parallelism across its 72 GPUs at NVLink rates."""
import pandas as pd
import pytest

import workbook as wb
from workbook import analysis, catalog
from workbook.model import comm, replica, serving

NEW_CHIPS = ["B300-SXM-288GB", "GB200", "GB300", "MI350X", "MI355X", "Gaudi3", "RTX-PRO-6000", "H20",
             "H100-NVL-94GB", "H200-NVL-141GB", "L40", "A10"]


@pytest.mark.parametrize("chip", NEW_CHIPS)
def test_every_new_chip_gets_an_option_or_a_clear_reason(chip):
    # data/scenarios/small-model-cheap.yaml (Llama 3.2 1B, bf16) restricted to one chip, as a user would.
    s = wb.with_overrides(wb.load_scenario("small-model-cheap"), **{"candidates.accelerators": [chip]})
    a = analysis.analyse(s, n_draws=50)
    perf = a.perf.set_index("accelerator").loc[chip]
    assert bool(perf["fits"]) and perf["tpot_ms"] > 0
    priced = a.priced[a.priced["accelerator"] == chip]
    assert len(priced)
    passing = priced[priced["excluded_reason"].isna()]
    # an option, or one sentence per excluded way to pay that says why
    assert len(passing) or priced["excluded_reason"].str.len().gt(10).all()
    if len(passing):
        assert a.recommendation.accelerator == chip


@pytest.mark.parametrize("alias,chip", [("B300", "B300-SXM-288GB"), ("GB200", "GB200"), ("gb200-nvl72", "GB200"),
                                        ("GB300", "GB300"), ("MI355X", "MI355X"), ("MI350X", "MI350X"),
                                        ("Gaudi3", "Gaudi3"), ("HL-325L", "Gaudi3"), ("RTXPRO6000", "RTX-PRO-6000"),
                                        ("H20", "H20"), ("H100-NVL", "H100-NVL-94GB"), ("H200-NVL", "H200-NVL-141GB"),
                                        ("L40", "L40"), ("A10", "A10"), ("A10G", "A10G"), ("L40S", "L40S")])
def test_catalog_names_resolve_to_the_new_chips(alias, chip):
    assert catalog.resolve("accelerators", alias) == chip


def test_fp4_peaks_are_dense_and_only_where_fp4_tensor_cores_exist():
    acc = catalog.accelerators().set_index("accelerator")
    fp4 = acc["peak_fp4_flops_per_s"]
    # NVIDIA HGX page: HGX B200 FP4 '144 PFLOPS | 72 PFLOPS' (sparse | dense) per 8 GPUs -> 9 PF dense per GPU
    assert fp4["B200-SXM-180GB"] == pytest.approx(9e15)
    for chip in ("B300-SXM-288GB", "GB200", "GB300", "MI350X", "MI355X", "RTX-PRO-6000"):
        assert fp4[chip] > 0 and fp4[chip] / acc.loc[chip, "peak_fp8_flops_per_s"] <= 3.01  # dense: at most 3x FP8
    for chip in ("H100-SXM5-80GB", "H200-SXM-141GB", "H20", "H100-NVL-94GB", "MI300X", "Gaudi3", "L40", "A10"):
        assert pd.isna(fp4[chip])


def test_gaudi_is_its_own_platform_with_every_capability_sourced():
    acc = catalog.accelerator("Gaudi3")
    assert acc["platform"] == "gaudi" and acc["kind"] == "asic"
    sw = catalog.software()
    caps = set(sw[sw["platform"] == "cuda"]["capability"])
    gaudi = sw[sw["platform"] == "gaudi"].set_index("capability")
    assert set(gaudi.index) == caps
    assert gaudi.loc["pytorch", "support"] == "supported" and gaudi.loc["vllm", "support"] == "supported"
    assert gaudi.loc["custom_cuda_kernels", "support"] == "none"
    assert gaudi["source"].str.len().gt(20).all()


def test_tensor_parallelism_spans_a_switched_nvlink_rack_but_not_a_torus():
    acc = catalog.accelerators().set_index("accelerator")
    assert comm.tp_domain_chips(acc.loc["GB200"]) == 72 and comm.tp_domain_chips(acc.loc["GB300"]) == 72
    assert {4, 16, 64} <= set(serving.tp_candidates(acc.loc["GB200"]).astype(int))
    # an HGX board stays an 8-GPU domain; a Trainium2 UltraServer's torus keeps TP inside the 16-chip instance
    assert comm.tp_domain_chips(acc.loc["B300-SXM-288GB"]) == 8
    assert max(serving.tp_candidates(acc.loc["H100-SXM5-80GB"])) == 8
    assert comm.tp_domain_chips(acc.loc["Trainium2"]) == 16 and comm.tp_domain_chips(acc.loc["TPU-v5p"]) == 4


def _405b_on_gb200(tp: int):
    s = wb.load_scenario("chat-70b-realtime")  # Llama 3.1 70B in FP8, 1,024 in / 256 out, TTFT 500 ms, TPOT 50 ms
    return wb.with_overrides(s, **{"workload.model": "llama-3.1-405b", "workload.requests_per_s": 2,
                                   "candidates.accelerators": ["GB200"],
                                   "cluster": {"accelerator": "GB200", "chips": tp, "parallelism": {"tp": tp}}})


def test_405b_served_at_tp16_inside_one_gb200_nvl72_gets_an_option():
    a = analysis.analyse(_405b_on_gb200(16), n_draws=50)
    row = a.perf.set_index("accelerator").loc["GB200"]
    assert int(row["tp"]) == 16 and bool(row["fits"]) and bool(row["meets_slo"])
    ok = a.priced[a.priced["excluded_reason"].isna()]
    assert len(ok) and a.recommendation.accelerator == "GB200"
    assert (ok["chips"] == 16).all() and (ok["instances"] == 1).all()  # one rack holds the 16 GPUs


def test_expert_parallelism_inside_the_rack_crosses_nvlink_and_beyond_it_the_network():
    rec = catalog.accelerator_record("GB200")
    lay = replica.Layout(4, 1, 64, net_bytes_per_s=5e10)
    assert replica._crossing_bytes_per_s(rec, lay, 64) == rec["intra_node_bytes_per_s"] == 9e11
    assert replica._crossing_bytes_per_s(rec, lay, 144) == 5e10  # two racks: the 400 Gb/s per-GPU network
    h100 = catalog.accelerator_record("H100-SXM5-80GB")
    assert replica._crossing_bytes_per_s(h100, lay, 16) == 5e10  # two HGX boards: the network


def test_gaudi_framework_fit_reads_its_own_software_rows():
    from workbook import decision
    s = wb.load_scenario("small-model-cheap")  # PyTorch serving
    fit = decision.framework_fit(s, ["Gaudi3"]).iloc[0]
    assert fit["platform"] == "gaudi" and fit["framework_support"] == "supported" and fit["framework_reason"] is None
    jax_only = wb.with_overrides(s, **{"workload.framework": "jax", "constraints.frameworks": ["jax"]})
    reason = decision.framework_fit(jax_only, ["Gaudi3"]).iloc[0]["framework_reason"]
    assert "Intel Gaudi" in reason and "JAX" in reason
