"""A Hugging Face ``config.json`` as the fields of ``scenario.Architecture``, read offline.

``workload.hf_config`` names a config.json (or a folder holding one). The keys are those of the
``transformers`` configuration classes of each model type (``LlamaConfig``, ``MistralConfig``,
``MixtralConfig``, ``Qwen2Config``, ``Qwen2MoeConfig``, ``Qwen3Config``, ``Qwen3MoeConfig``,
``GemmaConfig``, ``Gemma2Config``, ``Gemma3TextConfig``, ``DeepseekV3Config`` (and Kimi K2's ``kimi_k2``,
the same keys), ``GptOssConfig``, ``Llama4TextConfig``, ``GPTNeoXConfig``, ``MptConfig``), with the same
defaults where a key is left out. The multimodal wrappers of Gemma 3 and Llama 4 are read through
their ``text_config`` (the language model; the vision tower is not counted). Llama 4 interleaves
dense and MoE layers (``interleave_moe_layer_step`` k: layers k-1, 2k-1, ... are MoE, the rest dense
MLPs of ``intermediate_size_mlp``; every MoE layer has one shared expert of ``intermediate_size``):
only the count of each kind enters the profile (``dense_layers``). A model type or a field this
package cannot represent gives one line naming the key (``InputError``), never a silent
approximation: Qwen/DeepSeek MoE layers interleaved with dense ones (``decoder_sparse_step``,
``mlp_only_layers``, ``moe_layer_freq``), shared experts of a width that is not a whole number of
routed experts, other nested multimodal configs (``text_config``).

Not counted, as ``model.profile`` does not count them: norms and biases (<0.1% of the weights), and
DeepSeek-V3's multi-token-prediction module (``num_nextn_predict_layers``: 14B beside the 671B main
model, used for speculative decoding; DeepSeek-V3 report §2.2).
"""
from __future__ import annotations

from pathlib import Path

from . import inputs, paths
from .errors import InputError

DESCRIPTION = ("A Hugging Face config.json (or a folder holding one), relative to the scenario file, read "
               "offline instead of model/architecture/generic (workbook.hf: Llama, Llama 4, Mistral, Mixtral, Qwen2/3 and "
               "their MoE, Gemma 1-3, gpt-oss, DeepSeek-V2/V3 and Kimi K2 with MLA, GPT-NeoX, MPT)")
LORA_RANK = ("Fine-tuning with LoRA adapters of this rank on every linear layer of the blocks (QLoRA §4): "
             "the base stays frozen at `precision` (nf4 = QLoRA's NF4 with double quantisation, int4, int8) and only the adapters train "
             "(workbook.model.profile.adapter_params)")
MAX_CONFIG_BYTES = 1_000_000
DENSE = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text")
MLA = ("deepseek_v2", "deepseek_v3", "kimi_k2")  # Kimi K2's config.json uses DeepseekV3Config's keys
MOE = ("mixtral", "gpt_oss", "qwen2_moe", "qwen3_moe", "llama4_text") + MLA
OTHER = ("gpt_neox", "mpt")
SUPPORTED = DENSE + MOE + OTHER
# multimodal wrappers whose ``text_config`` is the language model (Gemma3Config, Llama4Config)
WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text"}
TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3_text", "mpt")  # transformers' default tie_word_embeddings (MPT always ties)
# transformers' defaults for keys the published multimodal configs leave out of their text_config
TEXT_DEFAULTS = {"gemma3_text": {"vocab_size": 262_208},
                 "llama4_text": {"interleave_moe_layer_step": 1, "num_experts_per_tok": 1}}


def config_file(path: str | Path) -> Path:
    """The config.json at ``path`` (a file, or a folder holding ``config.json``)."""
    p = Path(path)
    try:
        return p / "config.json" if p.is_dir() else p
    except (OSError, ValueError):
        return p       # a name too long or a symlink loop: read_config says so


def read_config(path: str | Path, where: str = "workload.hf_config") -> dict:
    """The parsed config.json through ``inputs`` (a regular file of at most ``MAX_CONFIG_BYTES``,
    nesting and integer digits bounded); ``InputError`` naming ``where`` otherwise."""
    data = inputs.read_json(config_file(path), "a config.json or a folder holding one", MAX_CONFIG_BYTES, where)
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected a JSON object of configuration keys")
    return data


MAX_DIM = 1_048_576  # scenario.Dim's bound


def _need(cfg: dict, key: str, where: str):
    v = cfg.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= MAX_DIM:
        raise InputError(f"{where}: {key}: expected a positive integer up to {MAX_DIM}, got {inputs.excerpt(v)}")
    return v


def _optional(cfg: dict, key: str, where: str, default=None, low: int = 1):
    """An optional integer key (absent, null or 0 = ``default``) within ``low`` .. ``MAX_DIM``."""
    v = cfg.get(key)
    if v is None or (v == 0 and low > 0 and not isinstance(v, bool)):
        return default
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= MAX_DIM:
        raise InputError(f"{where}: {key}: expected an integer from {low} up to {MAX_DIM}, got {inputs.excerpt(v)}")
    return v


def _unsupported(where: str, key: str, value, why: str):
    return InputError(f"{where}: {key} = {inputs.excerpt(value)} is not supported ({why})")


def _common(cfg: dict, kind: str, where: str) -> dict:
    """The attention and embedding shape shared by the Llama-style configs."""
    heads = _need(cfg, "num_attention_heads", where)
    hidden = _need(cfg, "hidden_size", where)
    kv = _optional(cfg, "num_key_value_heads", where, heads)
    out = {"layers": _need(cfg, "num_hidden_layers", where), "hidden": hidden, "heads": heads, "kv_heads": kv,
           "vocab": _need(cfg, "vocab_size", where), "gated_mlp": True,
           "tied_embeddings": bool(cfg.get("tie_word_embeddings", kind in TIED_BY_DEFAULT))}
    if cfg.get("head_dim") is not None and cfg.get("head_dim") != 0:
        out["head_dim"] = _need(cfg, "head_dim", where)
    return out


def _moe_layers_only(cfg: dict, where: str):
    step = cfg.get("decoder_sparse_step", 1)
    if step not in (None, 1):
        raise _unsupported(where, "decoder_sparse_step", step, "every layer must be a mixture-of-experts layer")
    if cfg.get("mlp_only_layers"):
        raise _unsupported(where, "mlp_only_layers", cfg["mlp_only_layers"], "dense layers only at the start, as dense_layers")
    if cfg.get("moe_layer_freq", 1) != 1:
        raise _unsupported(where, "moe_layer_freq", cfg["moe_layer_freq"], "every layer after the dense ones must be MoE")


def _moe(cfg: dict, kind: str, where: str) -> dict:
    """Routed and shared experts of Mixtral, Qwen2/3-MoE and DeepSeek-V2/V3."""
    if kind == "llama4_text":
        return _llama4(cfg, where)
    _moe_layers_only(cfg, where)
    if kind in ("mixtral", "gpt_oss"):  # every layer MoE; intermediate_size is each expert's width
        experts, width = _need(cfg, "num_local_experts", where), _need(cfg, "intermediate_size", where)
        return {"experts": experts, "experts_per_token": _need(cfg, "num_experts_per_tok", where),
                "moe_ffn_hidden": width, "ffn_hidden": width}
    key = "num_experts" if kind.startswith("qwen") else "n_routed_experts"
    width = _need(cfg, "moe_intermediate_size", where)
    out = {"experts": _need(cfg, key, where), "experts_per_token": _need(cfg, "num_experts_per_tok", where),
           "moe_ffn_hidden": width, "ffn_hidden": _optional(cfg, "intermediate_size", where, width)}
    if kind == "qwen2_moe":
        shared = _optional(cfg, "shared_expert_intermediate_size", where, 0)
        if shared % width:
            raise _unsupported(where, "shared_expert_intermediate_size", shared,
                               f"a whole number of {width}-wide experts is needed")
        out["shared_experts"] = shared // width
    if kind in MLA:
        out.update(shared_experts=_optional(cfg, "n_shared_experts", where, 0),
                   dense_layers=_optional(cfg, "first_k_dense_replace", where, 0))
    return out


def _llama4(cfg: dict, where: str) -> dict:
    """Llama 4 (transformers ``Llama4TextConfig``; Meta's Llama 4 release): ``num_local_experts`` routed
    experts and one shared expert of ``intermediate_size`` in each MoE layer, top-``num_experts_per_tok``
    routing; with ``interleave_moe_layer_step`` k the MoE layers are k-1, 2k-1, ... (``moe_layers``
    when the config lists them) and the others dense MLPs of ``intermediate_size_mlp``: Scout (k 1)
    is MoE throughout, Maverick (k 2) alternates dense and MoE layers."""
    L = _need(cfg, "num_hidden_layers", where)
    step = cfg.get("interleave_moe_layer_step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise InputError(f"{where}: interleave_moe_layer_step: expected a positive integer, got {step!r}")
    listed = cfg.get("moe_layers")
    moe_layers = len(listed) if isinstance(listed, list) and listed else len(range(step - 1, L, step))
    width = _need(cfg, "intermediate_size", where)
    return {"experts": _need(cfg, "num_local_experts", where), "experts_per_token": _need(cfg, "num_experts_per_tok", where),
            "moe_ffn_hidden": width, "shared_experts": 1, "dense_layers": L - moe_layers,
            "ffn_hidden": _need(cfg, "intermediate_size_mlp", where)}


def _mla(cfg: dict, where: str) -> dict:
    """DeepSeek-V2/V3 multi-head latent attention: ``head_dim`` is the non-rotary query/key size."""
    out = {"kv_lora_rank": _need(cfg, "kv_lora_rank", where), "head_dim": _need(cfg, "qk_nope_head_dim", where),
           "qk_rope_head_dim": _need(cfg, "qk_rope_head_dim", where), "v_head_dim": _need(cfg, "v_head_dim", where)}
    if cfg.get("q_lora_rank") is not None and cfg.get("q_lora_rank") != 0:
        out["q_lora_rank"] = _need(cfg, "q_lora_rank", where)
    return out


def _gpt_neox(cfg: dict, where: str) -> dict:
    """GPT-NeoX (Black et al. 2022): a 2-matrix GELU MLP, untied output by default."""
    out = _common(cfg, "gpt_neox", where)
    out.pop("head_dim", None)
    return {**out, "kv_heads": out["heads"], "gated_mlp": False, "ffn_hidden": _need(cfg, "intermediate_size", where)}


def _mpt(cfg: dict, where: str) -> dict:
    """MPT (MosaicML): ``d_model``, ``n_heads``, ``n_layers``, ``expansion_ratio`` x d_model MLP, tied
    output; grouped-query attention through ``attn_config.kv_n_heads``."""
    d, heads = _need(cfg, "d_model", where), _need(cfg, "n_heads", where)
    ratio = cfg.get("expansion_ratio", 4)
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0 < ratio <= 64 or (ratio * d) % 1:
        raise InputError(f"{where}: expansion_ratio: expected a positive number up to 64 (x d_model a whole width), "
                         f"got {inputs.excerpt(ratio)}")
    attn = cfg.get("attn_config")
    if attn is not None and not isinstance(attn, dict):
        raise InputError(f"{where}: attn_config: expected a JSON object (MPT's attention settings), "
                         f"got {type(attn).__name__}")
    kv = _optional(attn or {}, "kv_n_heads", f"{where}: attn_config", heads)
    return {"layers": _need(cfg, "n_layers", where), "hidden": d, "heads": heads, "kv_heads": kv,
            "vocab": _need(cfg, "vocab_size", where), "ffn_hidden": int(ratio * d), "gated_mlp": False,
            "tied_embeddings": True}


def architecture_fields(cfg: dict, where: str = "workload.hf_config") -> dict:
    """The ``scenario.Architecture`` fields of a parsed config.json (see the module docstring)."""
    kind = cfg.get("model_type")
    if not isinstance(kind, str):
        raise InputError(f"{where}: model_type {inputs.excerpt(kind)} is not supported (supported: {', '.join(SUPPORTED)})")
    if "text_config" in cfg:
        if kind not in WRAPPERS or not isinstance(cfg["text_config"], dict):
            raise _unsupported(where, "text_config", "{...}", "a multimodal config; give the language model's own config.json")
        cfg, where = cfg["text_config"], f"{where}: text_config"
        kind = WRAPPERS[kind]
    if kind in ("llama4", "gemma3"):  # a wrapper's model_type on a text-only config
        kind = WRAPPERS[kind]
    cfg = {**TEXT_DEFAULTS.get(kind, {}), **{k: v for k, v in cfg.items() if v is not None or k not in TEXT_DEFAULTS.get(kind, {})}}
    if kind not in SUPPORTED:
        raise InputError(f"{where}: model_type {inputs.excerpt(kind)} is not supported (supported: {', '.join(SUPPORTED)})")
    if kind == "gpt_neox":
        return _gpt_neox(cfg, where)
    if kind == "mpt":
        return _mpt(cfg, where)
    out = _common(cfg, kind, where)
    if kind in DENSE:
        out["ffn_hidden"] = _need(cfg, "intermediate_size", where)
        return out
    out.update(_moe(cfg, kind, where))
    if kind in MLA:
        out.update(_mla(cfg, where))
    return out


def _check(fields: dict, where: str) -> dict:
    """The two rules ``scenario.Architecture`` adds to its field bounds, named by the config's keys."""
    if fields["heads"] % fields["kv_heads"]:
        raise InputError(f"{where}: num_attention_heads ({fields['heads']}) must be a multiple of "
                         f"num_key_value_heads ({fields['kv_heads']})")
    if fields.get("experts_per_token", 1) > fields.get("experts", 1):
        raise InputError(f"{where}: num_experts_per_tok ({fields['experts_per_token']}) exceeds the experts ({fields['experts']})")
    return fields


def load(path: str | Path, where: str = "workload.hf_config") -> dict:
    """``architecture_fields`` of the config.json at ``path`` (``scenario.Architecture(**fields)``)."""
    where = f"{where}: {paths.rel(config_file(path))}"
    return _check(architecture_fields(read_config(path, where), where), where)


def problems(path: str | Path) -> list[str]:
    """Why ``load`` refuses the config.json at ``path`` (one line each; empty when it reads)."""
    try:
        load(path)
    except InputError as e:
        return e.problems
    return []
