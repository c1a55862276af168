"""Hints for an unknown model id: catalog models of the same family and a similar stated size, and the
way to describe a model the catalog lacks (``workload.hf_config``). Pure functions over (id, parameters)
pairs, so the catalog loader passes its rows in."""
from __future__ import annotations

import difflib
import re

_SIZE = re.compile(r"(?:(\d+)x)?(\d+(?:\.\d+)?)\s*([bmt])(?![a-z])", re.I)


def model_size_params(word: str) -> float | None:
    """The parameter count a model name states ('qwen2.5-7b' 7e9, 'mixtral-8x7b' 5.6e10, 'qwen3-235b-a22b'
    2.35e11: the first size, the total), or None when the name states none."""
    m = _SIZE.search(word)
    if not m:
        return None
    scale = {"m": 1e6, "b": 1e9, "t": 1e12}[m.group(3).lower()]
    return float(m.group(2)) * scale * (int(m.group(1)) if m.group(1) else 1)


def _family(word: str) -> str:
    """A model id's family: its leading letters ('qwen2.5-7b' qwen, 'Meta-Llama-3-8B' llama)."""
    w = word.lower().rsplit("/", 1)[-1].removeprefix("meta-")
    m = re.match(r"[a-z]+", w)
    return m.group(0) if m else w


def suggest_model(word: str, catalog_models) -> str:
    """The hint for an unknown model id: catalog models of the same family and of a size within 4x of
    the size the name states (nearest size first), else the nearest sizes of any family; a same-family
    model far off in size is named with its ratio, never offered as the match; and the way to use a
    model the catalog lacks (``workload.hf_config``)."""
    size, fam = model_size_params(word), _family(word)
    rows = [(m, float(p), _family(m)) for m, p in catalog_models if p == p]
    hint = ("; for a model the catalog lacks, give workload.hf_config: the path of its Hugging Face config.json "
            "(read offline), or workload.architecture")
    if size is None:
        close = difflib.get_close_matches(word, [r[0] for r in rows], n=1, cutoff=0.4)
        return (f" (did you mean {close[0]!r}?)" if close else "") + hint
    ratio = lambda p: max(p, size) / min(p, size)  # noqa: E731
    same = sorted((r for r in rows if r[2] == fam), key=lambda r: ratio(r[1]))
    near = [r for r in same if ratio(r[1]) <= 4]
    others = sorted((r for r in rows if r[2] != fam and ratio(r[1]) <= 2), key=lambda r: ratio(r[1]))
    spelled = difflib.get_close_matches(word.lower(), [r[0] for r in near], n=1, cutoff=0.8)
    near = sorted(near, key=lambda r: r[0] not in spelled)   # a near spelling of the same size first
    picks = (near + others)[:3]
    words = ", ".join(f"{m} ({p / 1e9:,.3g}B)" for m, p, _ in picks)
    far = [r for r in same if r not in near][:1]
    far_text = "".join(f"; {m} is the same family but {ratio(p):,.0f}x {'smaller' if p < size else 'larger'}"
                       for m, p, _ in far)
    lead = f" (nearest in size, {size / 1e9:,.3g}B: {words}{far_text})" if picks else (
        f" (no catalog model within 2x of {size / 1e9:,.3g}B{far_text})")
    return f"{lead}{hint}"
