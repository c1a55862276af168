"""Hostile inputs for every file surface of the CLI (issue 28's probes, rebuilt as data).

``cases(tmp)`` builds each case's files under ``tmp`` and returns ``(surface, name, argv)``; the
tests run each argv through ``workbook.cli.main`` and expect one line, exit 2 (or 0/1 when the
input is valid), no traceback, no hang. ``python tests/hostile.py TREE`` runs them as separate
processes against a checkout (the before/after figures of the issue's closing note).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = (ROOT / "data/scenarios/chat-70b-realtime.yaml").read_text()
TRAIN = (ROOT / "data/scenarios/llama-8b-finetune.yaml").read_text()
MEAS_HEADER = "run,accelerator,chips,model,precision,seq_len,global_batch_tokens,tokens_per_s"
MEAS_ROW = "r1,H100-SXM5-80GB,8,llama-3.1-8b,bf16,4096,4194304,30000"
HF_OK = {"model_type": "llama", "num_attention_heads": 32, "hidden_size": 4096, "num_hidden_layers": 32,
         "vocab_size": 128256, "intermediate_size": 14336, "num_key_value_heads": 8}
SKY_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone"


def _w(tmp: Path, name: str, content) -> Path:
    p = tmp / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return p


def _fifo(tmp: Path, name: str) -> Path:
    p = tmp / name
    if not p.exists():
        os.mkfifo(p)
    return p


def _loop(tmp: Path, name: str) -> Path:
    a, b = tmp / name, tmp / (name + ".b")
    if not a.is_symlink():
        a.symlink_to(b)
        b.symlink_to(a)
    return a


def _link(tmp: Path, name: str, target: str) -> Path:
    p = tmp / name
    if not p.is_symlink():
        p.symlink_to(target)
    return p


def _scenario_with(tmp: Path, name: str, text: str, replace: tuple[str, str] | None = None, extra: str = "") -> Path:
    body = text.replace(*replace) if replace else text
    return _w(tmp, name, body + extra)


def _hf_scenario(tmp: Path, name: str, cfg) -> Path:
    d = tmp / name
    d.mkdir(exist_ok=True)
    if isinstance(cfg, (bytes, str)):
        _w(d, "config.json", cfg)
    else:
        _w(d, "config.json", json.dumps(cfg))
    body = TRAIN.replace("model: llama-3.1-8b", "hf_config: config.json")
    return _w(d, "s.yaml", body)


def _meas_scenario(tmp: Path, name: str, csv_text, link_to: str | None = None) -> Path:
    d = tmp / name
    d.mkdir(exist_ok=True)
    if link_to:
        _link(d, "runs.csv", link_to)
    elif csv_text == "FIFO":
        _fifo(d, "runs.csv")
    else:
        _w(d, "runs.csv", csv_text)
    return _w(d, "s.yaml", TRAIN + "measurements: runs.csv\n")


def _portfolio(tmp: Path, name: str, scenario_ref: str) -> Path:
    return _w(tmp, name, f"name: p\nmonths: 12\nworkloads:\n  - scenario: {scenario_ref}\n")


def _summary(tmp: Path, name: str, obj) -> Path:
    return _w(tmp, name, obj if isinstance(obj, (str, bytes)) else json.dumps(obj))


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def cases(tmp: Path) -> list[tuple[str, str, list[str]]]:
    """(surface, case, argv) for every probe; the files live under ``tmp``."""
    tmp.mkdir(parents=True, exist_ok=True)
    ok_summary = _summary(tmp, "ok.json", {"scenario": "x", "recommendation": {"accelerator": "H100"}})
    out = [
        # scenario
        ("scenario", "fifo", ["validate", str(_fifo(tmp, "s.fifo.yaml"))]),
        ("scenario", "dev-zero", ["validate", "/dev/zero"]),
        ("scenario", "dev-urandom", ["estimate", "/dev/urandom"]),
        ("scenario", "directory", ["validate", str(tmp)]),
        ("scenario", "symlink-loop", ["validate", str(_loop(tmp, "loop.yaml"))]),
        ("scenario", "proc-environ", ["validate", str(_link(tmp, "env.yaml", "/proc/self/environ"))]),
        ("scenario", "path-100kB", ["validate", "x" * 100_000 + ".yaml"]),
        ("scenario", "latin1", ["validate", str(_w(tmp, "latin1.yaml", SCENARIO.encode() + b"# caf\xe9\n"))]),
        ("scenario", "utf16", ["validate", str(_w(tmp, "u16.yaml", SCENARIO.encode("utf-16")))]),
        ("scenario", "nul-bytes", ["validate", str(_w(tmp, "nul.yaml", b"name: a\x00\x00\n"))]),
        ("scenario", "deep-yaml", ["validate", str(_w(tmp, "deep.yaml", "a: " + _deep(5000)))]),
        ("scenario", "requests-1e12", ["estimate", str(_scenario_with(
            tmp, "rps.yaml", SCENARIO, ("requests_per_s: 20", "requests_per_s: 1.0e+12")))]),
        ("scenario", "tokens-1e15", ["estimate", str(_scenario_with(
            tmp, "tok.yaml", TRAIN, ("tokens: 2.0e+9", "tokens: 1.0e+15")))]),
        ("scenario", "seq-len-1e12", ["estimate", str(_scenario_with(
            tmp, "seq.yaml", TRAIN, ("seq_len: 8192", "seq_len: 1000000000000\n  seq_len_beyond_context: true")))]),
        ("scenario", "long-accelerator-id", ["validate", str(_scenario_with(
            tmp, "longid.yaml", SCENARIO, ("A100-SXM4-80GB,", "A" * 100_000 + ",")))]),
        # hf config
        ("hf_config", "string-number", ["estimate", str(_hf_scenario(tmp, "hf-str", {**HF_OK, "hidden_size": "4096"}))]),
        ("hf_config", "mpt-attn-list", ["estimate", str(_hf_scenario(tmp, "hf-mpt", {
            "model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32, "vocab_size": 50432,
            "attn_config": [1, 2]}))]),
        ("hf_config", "int-5000-digits", ["estimate", str(_hf_scenario(tmp, "hf-big", '{"model_type": "llama", '
                                                                              '"hidden_size": ' + "9" * 5000 + "}"))]),
        ("hf_config", "deep-json", ["estimate", str(_hf_scenario(tmp, "hf-deep", '{"a": ' + _deep(100_000) + "}"))]),
        ("hf_config", "kv-heads-negative", ["estimate", str(_hf_scenario(tmp, "hf-neg", {**HF_OK, "num_key_value_heads": -8}))]),
        ("hf_config", "kv-heads-tiny", ["estimate", str(_hf_scenario(tmp, "hf-tiny", {**HF_OK, "num_key_value_heads": 0.5}))]),
        ("hf_config", "fifo", ["validate", str(_hf_fifo(tmp))]),
        ("hf_config", "path-100kB", ["estimate", str(_scenario_with(
            tmp, "hfpath.yaml", TRAIN, ("model: llama-3.1-8b", "hf_config: " + "x" * 100_000)))]),
        ("measurements", "path-100kB", ["estimate", str(_scenario_with(
            tmp, "mpath.yaml", TRAIN, extra="measurements: " + "y" * 100_000 + "\n"))]),
        ("hf_config", "nan", ["estimate", str(_hf_scenario(tmp, "hf-nan", '{"model_type": "llama", "hidden_size": NaN}'))]),
        # measurements
        ("measurements", "empty", ["estimate", str(_meas_scenario(tmp, "m-empty", ""))]),
        ("measurements", "ragged", ["estimate", str(_meas_scenario(tmp, "m-ragged", MEAS_HEADER + "\n" + MEAS_ROW + ",x,y\n"))]),
        ("measurements", "chips-1e308", ["estimate", str(_meas_scenario(
            tmp, "m-chips", MEAS_HEADER + "\n" + MEAS_ROW.replace(",8,", ",1e308,") + "\n"))]),
        ("measurements", "seq-len-1e12", ["estimate", str(_meas_scenario(
            tmp, "m-seq", MEAS_HEADER + "\n" + MEAS_ROW.replace(",4096,", ",1000000000000,") + "\n"))]),
        ("measurements", "fifo", ["estimate", str(_meas_scenario(tmp, "m-fifo", "FIFO"))]),
        ("measurements", "proc-environ", ["estimate", str(_meas_scenario(tmp, "m-env", "", "/proc/self/environ"))]),
        ("measurements", "latin1", ["estimate", str(_meas_scenario(tmp, "m-latin", (MEAS_HEADER + "\n" + MEAS_ROW).encode()
                                                                     + b",\n".replace(b",", b"") + b"# caf\xe9\n"))]),
        ("measurements", "runs-fifo-cli", ["calibrate", "--runs", str(_fifo(tmp, "runs.fifo"))]),
        # portfolio
        ("portfolio", "etc-shadow", ["plan", str(_portfolio(tmp, "shadow.yaml", "/etc/shadow"))]),
        ("portfolio", "dev-zero", ["plan", "/dev/zero"]),
        ("portfolio", "symlink-loop", ["plan", str(_portfolio(tmp, "loopp.yaml", str(_loop(tmp, "sloop.yaml"))))]),
        ("portfolio", "fifo", ["plan", str(_fifo(tmp, "p.fifo.yaml"))]),
        # diff
        ("diff", "fifo", ["diff", str(_fifo(tmp, "d.fifo.json")), str(ok_summary)]),
        ("diff", "deep-json", ["diff", str(_summary(tmp, "deep.json", '{"a": ' + _deep(100_000) + "}")), str(ok_summary)]),
        ("diff", "recommendation-list", ["diff", str(_summary(tmp, "reclist.json", {"recommendation": [1, 2]})),
                                          str(ok_summary)]),
        ("diff", "warnings-dicts", ["diff", str(_summary(tmp, "warn.json", {"recommendation": {"warnings": [{"a": 1}]}})),
                                    str(ok_summary)]),
        ("diff", "options-strings", ["diff", str(_summary(tmp, "opts.json", {"options": ["x", 3]})), str(ok_summary)]),
        ("diff", "dev-zero", ["diff", "/dev/zero", str(ok_summary)]),
        # price files (import only; the catalog is never written with --dry-run)
        ("prices", "fifo", ["prices", "import", str(_fifo(tmp, "vms.fifo.csv")), "--format", "skypilot", "--provider", "aws", "--out", str(tmp / "imported.csv")]),
        ("prices", "directory", ["prices", "import", str(tmp), "--format", "skypilot", "--provider", "aws", "--out", str(tmp / "imported.csv")]),
        ("prices", "dev-zero", ["prices", "import", "/dev/zero", "--format", "skypilot", "--provider", "aws", "--out", str(tmp / "imported.csv")]),
        ("prices", "latin1", ["prices", "import", str(_w(tmp, "vms-latin.csv", (SKY_HEADER + "\n").encode() + b"p3\xe9,V100,1,8,61,,3.06,0.9,us-east-1,\n")),
                              "--format", "skypilot", "--provider", "aws", "--out", str(tmp / "imported.csv")]),
        ("prices", "count-inf", ["prices", "import", str(_w(tmp, "vms-inf.csv", SKY_HEADER + "\np3.2xlarge,V100,inf,8,61,,3.06,0.9,us-east-1,us-east-1a\n")),
                                 "--format", "skypilot", "--provider", "aws", "--out", str(tmp / "imported.csv")]),
        ("prices", "cell-200kB", ["prices", "import", str(_w(tmp, "vms-big.csv", SKY_HEADER + "\np3.2xlarge,V100,1,8,61,,3.06,0.9," + "x" * 200_000 + ",a\n")),
                                  "--format", "skypilot", "--provider", "aws", "--out", str(tmp / "imported.csv")]),
    ]
    return out


def _hf_fifo(tmp: Path) -> Path:
    d = tmp / "hf-fifo"
    d.mkdir(exist_ok=True)
    _fifo(d, "config.json")
    return _w(d, "s.yaml", TRAIN.replace("model: llama-3.1-8b", "hf_config: config.json"))


def main(argv: list[str]) -> int:
    """Run every case as a process against the checkout ``argv[0]``: one line per case with the
    exit status, the stderr line count, whether a traceback was printed, and the time taken."""
    import subprocess
    import tempfile
    import time
    tree = Path(argv[0]).resolve()
    limit = float(argv[1]) if len(argv) > 1 else 30
    tmp = Path(tempfile.mkdtemp(prefix="hostile-"))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    bad = 0
    try:
        for surface, name, args in cases(tmp):
            t0 = time.time()
            try:
                p = subprocess.run([sys.executable, "-m", "workbook", *args], cwd=tree, env=env, capture_output=True,
                                   text=True, timeout=limit, errors="replace")
                rc, err = p.returncode, p.stderr
            except subprocess.TimeoutExpired:
                rc, err = "hang", ""
            tb = "Traceback" in err
            lines = len(err.strip().splitlines())
            leak = any(s in err for s in ("root:", "PYTHONPATH=", "PATH=/", "SHELL="))
            fine = rc in (0, 1, 2) and not tb and len(err) < 2000 and not leak
            bad += not fine
            first = err.strip().splitlines()[0][:110] if err.strip() else ""
            print(f"{'ok ' if fine else 'BAD'} {surface:12} {name:22} rc={rc!s:4} lines={lines:3} "
                  f"{time.time() - t0:5.1f}s  {first}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
