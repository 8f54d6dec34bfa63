#!/usr/bin/env python3
"""Fixtures for the architectures of issue 34, made by implementations this project did not write.

Tiny random-weight models (Gemma 2, Gemma 3, Phi-3 with partial rotary + LongRoPE + a window, Mistral
with a sliding window, Llama with llama3 and with YaRN rope scaling, Mixtral, Qwen2-MoE, Qwen3-MoE,
OLMoE, a BERT (bge-like, CLS pooling), a RoBERTa (mean pooling), a ModernBERT (rotary, local and global
layers, GeGLU), an XLM-RoBERTa with a SentencePiece Unigram tokenizer and Qwen3 as an embedding model),
built and saved by Hugging Face transformers; reference outputs computed by transformers from the
saved files; GGUF copies written by llama.cpp's own converter (convert_hf_to_gguf.py). Chat
templates of Gemma and Phi rendered by transformers' apply_chat_template.

Run where torch, transformers, tokenizers, safetensors (and sentence-transformers) are installed
(the GPU machine; the CPU is enough):

    python3 scripts/make_arch_fixtures.py --out DIR [--converter LLAMA_CPP_SOURCE_DIR] [--only NAME,NAME]

The converter folder needs convert_hf_to_gguf.py, conversion/ and gguf-py/ of a llama.cpp source
tree (node-llama-cpp's npm package carries one as llama/gitRelease.bundle). Everything written is
described in DIR/README.md (tests/data/arch/README.md in the repository).
"""

import argparse
import copy
import json
import logging
import math
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

SEED = 20261207
N_GREEDY = 8
SHORT, LONG = 11, 27  # prompt lengths in tokens (LONG > every window and > Phi-3's original context)

CORPUS = """The quick brown fox jumps over the lazy dog. A model reads tokens and writes logits.
Sliding windows keep the last few keys; global layers see every key. Experts share the work:
a router picks two of them for each token, and their outputs are mixed by the router's weights.
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
Numbers 0 1 2 3 4 5 6 7 8 9 10 42 100 2026 and symbols + - * / = < > ( ) [ ] { } : ; , . ! ?
Embedding models pool the hidden states of an encoder: the first token, the mean, or the last.
Soft caps bound the scores with tanh; rotary embeddings turn pairs of features by the position.
Hello world! How are you today? I am fine, thank you. What is 2+2? It is 4. And 3+3? It is 6.
Caf\u00e9 na\u00efve \u00fcber \u65e5\u672c\u8a9e \u2014 emoji \U0001f680 and more text for the merges to learn from.
"""

PROMPT_TEXT = ("The quick brown fox jumps over the lazy dog. Experts share the work: a router picks two of "
               "them for each token, and soft caps bound the scores with tanh.")

# Shared special tokens (ids 0..): RoBERTa needs <pad> = 1.
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>",
            "<|user|>", "<|assistant|>", "<|system|>", "<|end|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>",
            "<|im_sep|>"]
WORDPIECE_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# The chat templates and conversations (shared with scripts/render_chat_templates.py).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from arch_chat_templates import CONVERSATIONS, TEMPLATE_TOKENS, TEMPLATES  # noqa: E402

log = logging.getLogger("arch")


# --- tokenizers --------------------------------------------------------------------------------

def corpus_lines():
    return [line for line in CORPUS.splitlines() if line.strip()] * 3


def train_bpe():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=384, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus_lines(), trainer)
    return tok


def train_wordpiece():
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=256, special_tokens=WORDPIECE_SPECIALS, show_progress=False)
    tok.train_from_iterator(corpus_lines(), trainer)
    return tok


UNIGRAM_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # XLM-R's first ids (<mask> moved up)

# A small SentencePiece normalization rule set (source code points -> target), compiled by
# sentencepiece into a precompiled_charsmap (the Precompiled normalizer of XLM-R's tokenizer.json and
# llama.cpp's tokenizer.ggml.precompiled_charsmap); XLM-R's own nmt_nfkc map is ~240 KB, too big here.
CHARSMAP_RULES = [("FB01", "66 69"), ("FF21", "41"), ("FF42", "62"), ("A0", "20"), ("2460", "31"),
                  ("E9", "65 301"), ("2126", "3A9"), ("3000", "20")]

UNIGRAM_TEXTS = ["Hello world!", "Caf\u00e9 na\u00efve \u00fcber \u65e5\u672c\u8a9e \u2014 emoji \U0001f680",
                 "  leading and  double   spaces ", "\ufb01ne \uff21\uff42c \u00a0nbsp \u2460 \u2126hm \u3000wide",
                 "unknown: \u03a9\u00df\u0416 \u20ac5", "def fib(n):", "The quick brown fox jumps over the lazy dog.",
                 "a", "\u65e5\u672c"]


def precompiled_charsmap():
    """The charsmap sentencepiece compiles from CHARSMAP_RULES (None without sentencepiece)."""
    import tempfile
    import sentencepiece as spm
    os.environ["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = "python"
    from sentencepiece import sentencepiece_model_pb2 as pb
    with tempfile.TemporaryDirectory() as d:
        rules = Path(d) / "rules.tsv"
        rules.write_text("".join(f"{a}\t{b}\n" for a, b in CHARSMAP_RULES))
        spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus_lines()), model_prefix=str(Path(d) / "m"),
                                       vocab_size=120, model_type="unigram", normalization_rule_tsv=str(rules),
                                       minloglevel=2, hard_vocab_limit=False)
        proto = pb.ModelProto()
        proto.ParseFromString((Path(d) / "m.model").read_bytes())
        return bytes(proto.normalizer_spec.precompiled_charsmap)


def train_unigram(report):
    """XLM-R's tokenizer shape: a SentencePiece Unigram model (trained by tokenizers' UnigramTrainer),
    the Precompiled normalizer (charsmap from sentencepiece; left out when it is not installed), Metaspace."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.Unigram())
    try:
        cm = precompiled_charsmap()
        tok.normalizer = normalizers.Precompiled(cm)
        report["unigram_charsmap_bytes"] = len(cm)
    except Exception as e:  # noqa: BLE001
        report["unigram_charsmap_error"] = f"{type(e).__name__}: {e}"
        log.warning("no precompiled charsmap: %s", traceback.format_exc())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    trainer = trainers.UnigramTrainer(vocab_size=300, special_tokens=UNIGRAM_SPECIALS, unk_token="<unk>",
                                      show_progress=False, max_piece_length=8)
    tok.train_from_iterator(corpus_lines(), trainer)
    return tok


def fast_tokenizer_class():
    return getattr(transformers, "PreTrainedTokenizerFast", None) or getattr(transformers, "TokenizersBackend")


def save_tokenizer(base, folder, post, bos=None, eos=None, pad=None, unk=None, extra=None, template=None,
                   model_max_length=512):
    """tokenizer.json (a copy of `base` with post-processor `post`: None, ('prefix', tok), ('suffix', tok),
    ('roberta', cls, sep), ('bert', cls, sep)) and tokenizer_config.json, through transformers."""
    from tokenizers import Tokenizer, processors
    tok = Tokenizer.from_str(base.to_str())
    if post is not None:
        kind = post[0]
        if kind == "prefix":
            tok.post_processor = processors.TemplateProcessing(
                single=f"{post[1]} $A", pair=f"{post[1]} $A {post[1]} $B", special_tokens=[(post[1], tok.token_to_id(post[1]))])
        elif kind == "suffix":
            tok.post_processor = processors.TemplateProcessing(
                single=f"$A {post[1]}", pair=f"$A {post[1]} $B {post[1]}", special_tokens=[(post[1], tok.token_to_id(post[1]))])
        elif kind == "roberta":
            # RobertaProcessing's ids as a template (its keyword names changed in tokenizers 0.23).
            tok.post_processor = processors.TemplateProcessing(
                single=f"{post[1]} $A {post[2]}", pair=f"{post[1]} $A {post[2]} {post[2]} $B {post[2]}",
                special_tokens=[(post[1], tok.token_to_id(post[1])), (post[2], tok.token_to_id(post[2]))])
        elif kind == "bert":
            tok.post_processor = processors.TemplateProcessing(
                single=f"{post[1]} $A {post[2]}", pair=f"{post[1]} $A {post[2]} $B:1 {post[2]}:1",
                special_tokens=[(post[1], tok.token_to_id(post[1])), (post[2], tok.token_to_id(post[2]))])
    kwargs = dict(tokenizer_object=tok, model_max_length=model_max_length, clean_up_tokenization_spaces=False)
    for k, v in (("bos_token", bos), ("eos_token", eos), ("pad_token", pad), ("unk_token", unk)):
        if v is not None:
            kwargs[k] = v
    if extra:
        kwargs.update(extra)
    fast = fast_tokenizer_class()(**kwargs)
    if template is not None:
        fast.chat_template = template
    fast.save_pretrained(folder)
    return fast


# --- weights -----------------------------------------------------------------------------------

def randomize(model, gen, gain=1.0, emb_std=1.0, one_plus_norms=False, qk_gain=None):
    """Every parameter random (norm weights and biases too, so a wrong norm or a dropped bias shows),
    rounded to bf16 so the bf16 files hold exactly the weights the references used."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                if name.endswith("bias"):
                    v = torch.randn(p.shape, generator=gen) * 0.1
                elif one_plus_norms:
                    v = torch.randn(p.shape, generator=gen) * 0.25  # used as 1 + w
                else:
                    v = 1.0 + torch.randn(p.shape, generator=gen) * 0.25
            elif "embed" in name:
                v = torch.randn(p.shape, generator=gen) * emb_std
            else:
                g = gain
                if qk_gain is not None and (".q_proj" in name or ".k_proj" in name):
                    g = qk_gain
                v = torch.randn(p.shape, generator=gen) * (g / math.sqrt(p.shape[-1]))
            p.copy_(v.to(torch.bfloat16).to(p.dtype))


def save_bf16(model, folder):
    """Saves the model in bf16 (its weights are bf16 values already); returns the parameters as saved,
    by name, to check what transformers loads back."""
    model.to(torch.bfloat16)
    model.save_pretrained(folder)
    return {k: v.detach().to(torch.float64).clone() for k, v in model.named_parameters()}


def hub_config(folder, cfg_dict):
    """The config as transformers reads a Hub checkpoint's config.json (legacy keys such as rope_scaling,
    rope_theta, rope_local_base_freq or sliding_window_pattern go through its own conversion)."""
    (folder / "config.json").write_text(json.dumps(cfg_dict, indent=1, sort_keys=True) + "\n")
    (folder / "hub_config.json").write_text(json.dumps(cfg_dict, indent=1, sort_keys=True) + "\n")
    cfg = transformers.AutoConfig.from_pretrained(str(folder))
    (folder / "config.json").unlink()
    try:
        cfg._attn_implementation = "eager"
        cfg._experts_implementation = "eager"  # transformers 5's grouped_mm takes no float64
    except Exception:  # noqa: BLE001
        pass
    return cfg


def reload_diff(ref, saved):
    """Largest difference between the parameters transformers loaded and the ones saved (0: same weights)."""
    worst = 0.0
    got = dict(ref.named_parameters())
    for k, v in saved.items():
        if k not in got:
            return f"missing {k}"
        worst = max(worst, float((got[k].detach().to(torch.float64) - v).abs().max()))
    return worst


def tensor_names(folder):
    names = {}
    for f in sorted(Path(folder).glob("*.safetensors")):
        for k, v in load_file(str(f)).items():
            names[k] = [str(v.dtype).replace("torch.", ""), list(v.shape)]
    return names


# MoE checkpoints as the Hub ships them (one tensor per expert): transformers 5 keeps the experts of
# a layer fused in memory; if save_pretrained wrote them fused, they are split here, and the split
# folder is loaded back by transformers (its own converter) and must give the same logits.
HUB_EXPERTS = {
    "mixtral": ("block_sparse_moe.experts.{e}.w1.weight", "block_sparse_moe.experts.{e}.w3.weight",
                "block_sparse_moe.experts.{e}.w2.weight", "block_sparse_moe.gate.weight"),
    "qwen": ("mlp.experts.{e}.gate_proj.weight", "mlp.experts.{e}.up_proj.weight",
             "mlp.experts.{e}.down_proj.weight", "mlp.gate.weight"),
}


def to_hub_experts(folder, style):
    path = Path(folder) / "model.safetensors"
    sd = load_file(str(path))
    if not any(k.endswith("mlp.experts.gate_up_proj") or k.endswith("experts.gate_up_proj.weight") for k in sd):
        return False
    gate_n, up_n, down_n, router_n = HUB_EXPERTS[style]
    out = {}
    for k, v in sd.items():
        if k.endswith("mlp.experts.gate_up_proj") or k.endswith("mlp.experts.gate_up_proj.weight"):
            prefix = k[:k.index("mlp.experts.")]
            n_ff = v.shape[1] // 2
            for e in range(v.shape[0]):
                out[prefix + gate_n.format(e=e)] = v[e, :n_ff, :].contiguous()
                out[prefix + up_n.format(e=e)] = v[e, n_ff:, :].contiguous()
        elif k.endswith("mlp.experts.down_proj") or k.endswith("mlp.experts.down_proj.weight"):
            prefix = k[:k.index("mlp.experts.")]
            for e in range(v.shape[0]):
                out[prefix + down_n.format(e=e)] = v[e].contiguous()
        elif k.endswith("mlp.gate.weight") and style == "mixtral":
            out[k[:k.index("mlp.gate.weight")] + router_n] = v
        else:
            out[k] = v
    save_file(out, str(path), metadata={"format": "pt"})
    return True


# --- references --------------------------------------------------------------------------------

def eager_experts(model):
    """transformers 5 runs MoE experts through grouped_mm, which takes no float64: the eager loop."""
    if hasattr(model, "set_experts_implementation"):
        try:
            model.set_experts_implementation("eager")
        except Exception:  # noqa: BLE001  (a model without experts)
            pass
    return model


def load_f64(cls, folder):
    try:
        m = cls.from_pretrained(folder, dtype=torch.float64, attn_implementation="eager")
    except TypeError:
        m = cls.from_pretrained(folder, torch_dtype=torch.float64, attn_implementation="eager")
    return eager_experts(m).eval()


def rope_buffers(model):
    out = {}
    for name, buf in model.named_buffers():
        if "inv_freq" in name:
            out[name] = buf.detach().to(torch.float64).cpu().numpy().astype(np.float32)
    scal = {}
    for name, mod in model.named_modules():
        v = getattr(mod, "attention_scaling", None)
        if v is not None:
            try:
                scal[name] = float(v)
            except Exception:
                scal[name] = repr(v)
    return out, scal


class RouterProbe:
    """Records, for each MoE router (a Linear named *.gate whose rows are experts), the smallest gap
    between the k-th and (k+1)-th router logit over the tokens: a gap near 0 makes the expert choice fragile."""

    def __init__(self, model, n_experts, k):
        self.k, self.min_gap, self.hooks = k, float("inf"), []
        for name, mod in model.named_modules():
            w = getattr(mod, "weight", None)
            if name.endswith(".gate") and isinstance(w, torch.Tensor) and w.dim() == 2 and w.shape[0] == n_experts:
                self.hooks.append(mod.register_forward_pre_hook(self._pre))

    def _pre(self, mod, args):
        x = args[0].reshape(-1, args[0].shape[-1]).to(torch.float64)
        logits = x @ mod.weight.to(torch.float64).T
        s = torch.sort(logits, dim=-1, descending=True).values
        self.min_gap = min(self.min_gap, float((s[:, self.k - 1] - s[:, self.k]).min()))

    def close(self):
        for h in self.hooks:
            h.remove()


def causal_reference(model, prompts, golden, info, extra_checks=None):
    """For each prompt: logits at every position (one forward pass), hidden states of the prompt,
    8 greedy tokens (each step a full forward pass without a cache, so each step is the same function
    of its tokens as the logits)."""
    with torch.no_grad():
        for i, ids in enumerate(prompts):
            x = torch.tensor([ids])
            out = model(input_ids=x, output_hidden_states=True)
            logits = out.logits[0].to(torch.float64)
            golden[f"p{i}.tokens"] = torch.tensor(ids, dtype=torch.int32)
            golden[f"p{i}.logits"] = logits.to(torch.float32).contiguous()
            if out.hidden_states is not None:
                golden[f"p{i}.hidden"] = torch.stack([h[0] for h in out.hidden_states]).to(torch.float32).contiguous()
            inv, scal = rope_buffers(model)
            for name, v in inv.items():
                golden[f"p{i}.rope.{name}"] = torch.from_numpy(v)
            info.setdefault("attention_scaling", {})[f"p{i}"] = scal
            seq = list(ids)
            for _ in range(N_GREEDY):
                lg = model(input_ids=torch.tensor([seq])).logits[0, -1]
                seq.append(int(torch.argmax(lg)))
            golden[f"p{i}.greedy"] = torch.tensor(seq[len(ids):], dtype=torch.int32)
            top2 = torch.topk(logits[-1], 2).values
            info.setdefault("prompts", []).append({
                "n_tokens": len(ids), "greedy": seq[len(ids):], "last_top1_margin": float(top2[0] - top2[1]),
                "max_abs_logit": float(logits.abs().max())})
            if extra_checks:
                extra_checks(i, x, logits)


def window_effect(model, x, logits):
    """max |logits with the window - logits with no window| / max |logits|: > 0 when the window binds."""
    cfg = model.config
    old = cfg.sliding_window
    layer_old = []
    cfg.sliding_window = 1 << 20
    for m in model.modules():
        if hasattr(m, "sliding_window") and m is not model:
            layer_old.append((m, m.sliding_window))
            if m.sliding_window is not None:
                m.sliding_window = 1 << 20
    try:
        with torch.no_grad():
            l2 = model(input_ids=x).logits[0].to(torch.float64)
    finally:
        cfg.sliding_window = old
        for m, v in layer_old:
            m.sliding_window = v
    return float((logits - l2).abs().max() / logits.abs().max())


# --- the models --------------------------------------------------------------------------------

def common_decoder(vocab, **kw):
    d = dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-5, rope_theta=10000.0,
             tie_word_embeddings=False, initializer_range=0.02, use_cache=True)
    d.update(kw)
    return d


def specs(vocab, ids):
    s = {}
    s["gemma2"] = dict(
        cls="Gemma2ForCausalLM", arch="Gemma2ForCausalLM", one_plus_norms=True, emb_std=1.0 / 8.0, qk_gain=2.0,
        bos="<bos>", eos="<eos>", post=("prefix", "<bos>"), template="gemma-2", final_cap_auto=True,
        config=dict(model_type="gemma2", vocab_size=vocab, hidden_size=64, intermediate_size=128,
                    num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                    query_pre_attn_scalar=32, hidden_activation="gelu_pytorch_tanh", max_position_embeddings=256,
                    rms_norm_eps=1e-6, rope_theta=10000.0, attention_bias=False, sliding_window=6,
                    layer_types=["sliding_attention", "full_attention"] * 2, attn_logit_softcapping=5.0,
                    final_logit_softcapping=None, tie_word_embeddings=True, bos_token_id=ids["<bos>"],
                    eos_token_id=[ids["<eos>"], ids["<end_of_turn>"]], pad_token_id=ids["<pad>"]),
        window=True)
    s["gemma3"] = dict(
        cls="Gemma3ForCausalLM", arch="Gemma3ForCausalLM", one_plus_norms=True, emb_std=1.0 / 8.0,
        bos="<bos>", eos="<eos>", post=("prefix", "<bos>"), template="gemma-3",
        config=dict(model_type="gemma3_text", vocab_size=vocab, hidden_size=64, intermediate_size=128,
                    num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=1, head_dim=16,
                    query_pre_attn_scalar=16, hidden_activation="gelu_pytorch_tanh", max_position_embeddings=256,
                    rms_norm_eps=1e-6, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                    rope_scaling={"rope_type": "linear", "factor": 8.0}, sliding_window=5, sliding_window_pattern=6,
                    layer_types=["sliding_attention"] * 5 + ["full_attention"], attention_bias=False,
                    attn_logit_softcapping=None, final_logit_softcapping=None, tie_word_embeddings=True,
                    bos_token_id=ids["<bos>"], eos_token_id=[ids["<eos>"], ids["<end_of_turn>"]],
                    pad_token_id=ids["<pad>"]),
        window=True)
    s["phi3"] = dict(
        cls="Phi3ForCausalLM", arch="Phi3ForCausalLM", bos="<s>", eos="<|endoftext|>", post=("prefix", "<s>"),
        template="phi-3.5",
        config=dict(model_type="phi3", vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, hidden_act="silu", max_position_embeddings=64,
                    original_max_position_embeddings=16, rms_norm_eps=1e-5, rope_theta=10000.0,
                    partial_rotary_factor=0.5,
                    rope_scaling={"type": "longrope", "short_factor": [1.0, 1.25, 2.0, 3.5],
                                  "long_factor": [1.5, 3.0, 5.5, 11.0]},
                    sliding_window=12, tie_word_embeddings=False, bos_token_id=ids["<s>"],
                    eos_token_id=[ids["<|endoftext|>"], ids["<|end|>"]], pad_token_id=ids["<|endoftext|>"]),
        window=True)
    s["mistral"] = dict(
        cls="MistralForCausalLM", arch="MistralForCausalLM", bos="<s>", eos="</s>", post=("prefix", "<s>"),
        config=dict(model_type="mistral", **common_decoder(vocab, head_dim=16, sliding_window=5, rope_theta=1000000.0,
                                                          bos_token_id=ids["<s>"], eos_token_id=ids["</s>"])),
        window=True)
    s["llama3-rope"] = dict(
        cls="LlamaForCausalLM", arch="LlamaForCausalLM", bos="<s>", eos="</s>", post=("prefix", "<s>"),
        config=dict(model_type="llama", **common_decoder(
            vocab, head_dim=16, tie_word_embeddings=True,
            rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": 64},
            bos_token_id=ids["<s>"], eos_token_id=ids["</s>"])))
    s["llama-yarn"] = dict(
        cls="LlamaForCausalLM", arch="LlamaForCausalLM", bos="<s>", eos="</s>", post=("prefix", "<s>"),
        config=dict(model_type="llama", **common_decoder(
            vocab, head_dim=16, max_position_embeddings=128,
            rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32,
                          "beta_fast": 32.0, "beta_slow": 1.0},
            bos_token_id=ids["<s>"], eos_token_id=ids["</s>"])))
    s["mixtral"] = dict(
        cls="MixtralForCausalLM", arch="MixtralForCausalLM", bos="<s>", eos="</s>", post=("prefix", "<s>"),
        moe=("mixtral", 4, 2),
        config=dict(model_type="mixtral", **common_decoder(
            vocab, intermediate_size=64, head_dim=16, num_local_experts=4, num_experts_per_tok=2,
            router_jitter_noise=0.0, output_router_logits=False, sliding_window=None, rope_theta=1000000.0,
            bos_token_id=ids["<s>"], eos_token_id=ids["</s>"])))
    s["qwen2moe"] = dict(
        cls="Qwen2MoeForCausalLM", arch="Qwen2MoeForCausalLM", bos=None, eos="<|endoftext|>", post=None,
        moe=("qwen", 6, 2),
        config=dict(model_type="qwen2_moe", **common_decoder(
            vocab, intermediate_size=128, moe_intermediate_size=32, shared_expert_intermediate_size=96,
            num_experts=6, num_experts_per_tok=2, norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[],
            output_router_logits=False, use_sliding_window=False, rope_theta=1000000.0,
            rms_norm_eps=1e-6, bos_token_id=None, eos_token_id=ids["<|endoftext|>"])))
    s["qwen3moe"] = dict(
        cls="Qwen3MoeForCausalLM", arch="Qwen3MoeForCausalLM", bos=None, eos="<|im_end|>", post=None,
        moe=("qwen", 8, 3),
        config=dict(model_type="qwen3_moe", **common_decoder(
            vocab, intermediate_size=128, moe_intermediate_size=32, num_experts=8, num_experts_per_tok=3,
            norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], head_dim=24, attention_bias=False,
            output_router_logits=False, use_sliding_window=False, rope_theta=1000000.0, rms_norm_eps=1e-6,
            bos_token_id=None, eos_token_id=ids["<|im_end|>"])))
    s["olmoe"] = dict(
        cls="OlmoeForCausalLM", arch="OlmoeForCausalLM", bos=None, eos="<|endoftext|>", post=None,
        moe=("qwen", 8, 2),
        config=dict(model_type="olmoe", **common_decoder(
            vocab, intermediate_size=32, num_experts=8, num_experts_per_tok=2, norm_topk_prob=False,
            num_key_value_heads=4, clip_qkv=None, output_router_logits=False, bos_token_id=None,
            eos_token_id=ids["<|endoftext|>"], pad_token_id=ids["<pad>"])))
    s["glm4"] = dict(
        cls="Glm4ForCausalLM", arch="Glm4ForCausalLM", bos=None, eos="<|endoftext|>", post=None,
        config=dict(model_type="glm4", **common_decoder(
            vocab, head_dim=16, partial_rotary_factor=0.5, attention_bias=True, hidden_act="silu",
            bos_token_id=None, eos_token_id=ids["<|endoftext|>"], pad_token_id=ids["<pad>"])))
    return s


def make_causal(name, spec, out, bpe, prompts_for, report, gen):
    folder = out / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    info = {"name": name, "class": spec["cls"]}
    cls = getattr(transformers, spec["cls"])
    cfg_dict = copy.deepcopy(spec["config"])
    cfg_dict["architectures"] = [spec["arch"]]
    config = hub_config(folder, cfg_dict)
    torch.manual_seed(SEED)
    model = cls(config).eval()
    randomize(model, gen, emb_std=spec.get("emb_std", 1.0), one_plus_norms=spec.get("one_plus_norms", False),
              qk_gain=spec.get("qk_gain"))
    tok = save_tokenizer(bpe, folder, spec["post"], bos=spec["bos"], eos=spec["eos"], pad="<pad>",
                         template=TEMPLATES.get(spec.get("template")) if spec.get("template") else None)
    ids = tok(PROMPT_TEXT)["input_ids"]
    prompts = [ids[:SHORT], ids[:LONG]]
    if len(ids) < LONG:
        raise RuntimeError(f"prompt is only {len(ids)} tokens")
    if spec.get("final_cap_auto"):
        # A final soft-cap that binds: half the largest raw logit over the prompts.
        with torch.no_grad():
            m64 = eager_experts(copy.deepcopy(model).to(torch.float64))
            raw = max(float(m64(input_ids=torch.tensor([p])).logits.abs().max()) for p in prompts)
        cap = round(raw * 0.5, 2)
        model.config.final_logit_softcapping = cap
        info["final_logit_softcapping"] = {"cap": cap, "max_abs_raw_logit": raw}
    saved = save_bf16(model, folder)
    info["saved_config"] = json.loads((folder / "config.json").read_text())
    info["checkpoint_format"] = "transformers save_pretrained"
    if "moe" in spec:
        if to_hub_experts(folder, spec["moe"][0]):
            info["checkpoint_format"] = "experts split into one tensor each as the Hub ships them (from " \
                                        "transformers' fused save), loaded back by transformers"
    info["tensors"] = tensor_names(folder)
    ref = load_f64(cls, folder)
    info["reference_config"] = ref.config.to_dict()
    info["reload_param_max_diff"] = reload_diff(ref, saved)
    golden = {}
    probe = RouterProbe(ref, spec["moe"][1], spec["moe"][2]) if "moe" in spec else None

    checks = {}

    def extra(i, x, logits):
        if spec.get("window"):
            checks.setdefault("window_effect", []).append(window_effect(ref, x, logits))
        if name == "gemma2":
            saved = []
            for m in ref.modules():
                if hasattr(m, "attn_logit_softcapping"):
                    saved.append((m, m.attn_logit_softcapping))
                    m.attn_logit_softcapping = None
            old = ref.config.attn_logit_softcapping
            ref.config.attn_logit_softcapping = None
            with torch.no_grad():
                l2 = ref(input_ids=x).logits[0].to(torch.float64)
            for m, v in saved:
                m.attn_logit_softcapping = v
            ref.config.attn_logit_softcapping = old
            checks.setdefault("attn_softcap_effect", []).append(float((logits - l2).abs().max() / logits.abs().max()))

    causal_reference(ref, prompts, golden, info, extra)
    if probe is not None:
        info["router_min_topk_gap"] = probe.min_gap
        probe.close()
    info["checks"] = checks
    info["tensors_golden"] = {k: [str(v.dtype).replace("torch.", ""), list(v.shape)] for k, v in golden.items()}
    save_file(golden, str(folder / "golden.safetensors"))
    # The text of each prompt, as the tokenizer decodes it.
    for i, p in enumerate(prompts):
        info["prompts"][i]["text"] = tok.decode(p, skip_special_tokens=False)
    info["transformers"] = transformers.__version__
    info["torch"] = torch.__version__
    info["reference_dtype"] = "float64 (transformers keeps RMSNorm, rope angles and MoE router softmax in float32)"
    (folder / "golden.json").write_text(json.dumps(json_safe(info), indent=1, sort_keys=True, default=str) + "\n")
    report[name] = {"ok": True, "checks": checks, "router_min_topk_gap": info.get("router_min_topk_gap"),
                    "prompts": [(p["n_tokens"], p["last_top1_margin"]) for p in info["prompts"]]}


# --- encoders ----------------------------------------------------------------------------------

def write_sentence_transformers(folder, pooling, normalize=True):
    mods = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        mods.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    (folder / "modules.json").write_text(json.dumps(mods, indent=1) + "\n")
    (folder / "1_Pooling").mkdir(exist_ok=True)
    pool = {"word_embedding_dimension": 64, "pooling_mode_cls_token": pooling == "cls",
            "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
            "pooling_mode_lasttoken": pooling == "last", "include_prompt": True}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pool, indent=1) + "\n")
    if normalize:
        (folder / "2_Normalize").mkdir(exist_ok=True)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64, "do_lower_case": False}) + "\n")


ENCODER_TEXTS = ["Hello world! How are you today?",
                 "The quick brown fox jumps over the lazy dog. Embedding models pool the hidden states of an encoder."]


def fit_text(tok, text, n):
    """`text` less its last words until it is at most n tokens with the tokenizer's special tokens."""
    words = text.split(" ")
    while len(words) > 1 and len(tok(" ".join(words))["input_ids"]) > n:
        words.pop()
    return " ".join(words)


def pool(hidden, pooling):
    if pooling == "cls":
        v = hidden[0]
    elif pooling == "mean":
        v = hidden.mean(dim=0)
    else:
        v = hidden[-1]
    return v / v.norm()


TOKEN_TYPE_MODELS = ("BertModel", "RobertaModel", "XLMRobertaModel")


def encoder_window_effect(ref, kwargs, hidden):
    """max |last hidden with the local window - with no window| / max |last hidden| (ModernBERT's
    local_attention made larger than any prompt): > 0 when the window binds."""
    old = ref.config.local_attention
    ref.config.local_attention = 1 << 20
    saved = []
    for m in ref.modules():
        if m is not ref and getattr(m, "sliding_window", None) is not None:
            saved.append((m, m.sliding_window))
            m.sliding_window = (1 << 19) + 1
    try:
        h2 = ref(**kwargs).last_hidden_state[0].to(torch.float64)
    finally:
        ref.config.local_attention = old
        for m, v in saved:
            m.sliding_window = v
    return float((hidden - h2).abs().max() / hidden.abs().max())


def tokenizer_cases(folder, tok):
    """Reference ids of UNIGRAM_TEXTS and the corpus lines: from the tokenizers library reading the
    saved tokenizer.json, with and without the post-processor's special tokens, and whether
    transformers' AutoTokenizer (the class tokenizer_config.json names) gives the same."""
    from tokenizers import Tokenizer
    raw = Tokenizer.from_file(str(folder / "tokenizer.json"))
    try:
        auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    except Exception as e:  # noqa: BLE001
        auto = None
        log.warning("AutoTokenizer: %s", e)
    cases = []
    for t in UNIGRAM_TEXTS + [line for line in CORPUS.splitlines() if line.strip()]:
        e = raw.encode(t)
        c = {"text": t, "ids": e.ids, "tokens": e.tokens, "ids_no_special": raw.encode(t, add_special_tokens=False).ids,
             "pretrained_fast_agrees": tok(t)["input_ids"] == e.ids}
        if auto is not None:
            c["auto_class"] = type(auto).__name__
            c["auto_agrees"] = auto(t)["input_ids"] == e.ids
        cases.append(c)
    return cases


def make_encoder(name, spec, out, tokenizers_, report, gen):
    folder = out / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    info = {"name": name, "class": spec["cls"], "pooling": spec["pooling"], "normalize": True}
    cls = getattr(transformers, spec["cls"])
    cfg_dict = copy.deepcopy(spec["config"])
    cfg_dict["architectures"] = [spec["arch"]]
    config = hub_config(folder, cfg_dict)
    torch.manual_seed(SEED)
    model = cls(config).eval()
    randomize(model, gen, emb_std=spec.get("emb_std", 1.0))
    tok = save_tokenizer(tokenizers_[spec["tokenizer"]], folder, spec["post"], **spec["tok_kwargs"])
    if spec.get("tokenizer_class"):
        # The class the Hub's files name (llama.cpp's converter loads it through AutoTokenizer).
        tc = json.loads((folder / "tokenizer_config.json").read_text())
        tc["tokenizer_class"] = spec["tokenizer_class"]
        (folder / "tokenizer_config.json").write_text(json.dumps(tc, indent=1) + "\n")
    if spec["tokenizer"] == "unigram":
        info["tokenizer_cases"] = tokenizer_cases(folder, tok)
    saved = save_bf16(model, folder)
    write_sentence_transformers(folder, spec["pooling"])
    info["saved_config"] = json.loads((folder / "config.json").read_text())
    info["tensors"] = tensor_names(folder)
    ref = load_f64(cls, folder)
    info["reference_config"] = ref.config.to_dict()
    info["reload_param_max_diff"] = reload_diff(ref, saved)
    texts = [ENCODER_TEXTS[0], fit_text(tok, ENCODER_TEXTS[1], LONG)]
    golden = {}
    info["prompts"] = []
    with torch.no_grad():
        for i, t in enumerate(texts):
            enc = tok(t)
            ids = enc["input_ids"]
            x = torch.tensor([ids])
            kwargs = {"input_ids": x, "attention_mask": torch.ones_like(x)}
            if "token_type_ids" in enc and spec["cls"] in TOKEN_TYPE_MODELS:
                kwargs["token_type_ids"] = torch.zeros_like(x)
            o = ref(**kwargs, output_hidden_states=True)
            hidden = o.last_hidden_state[0].to(torch.float64)
            emb = pool(hidden, spec["pooling"])
            golden[f"p{i}.tokens"] = torch.tensor(ids, dtype=torch.int32)
            golden[f"p{i}.last_hidden"] = hidden.to(torch.float32).contiguous()
            if o.hidden_states is not None:
                golden[f"p{i}.hidden"] = torch.stack([h[0] for h in o.hidden_states]).to(torch.float32).contiguous()
            if spec.get("window"):
                info.setdefault("window_effect", []).append(encoder_window_effect(ref, kwargs, hidden))
            golden[f"p{i}.embedding"] = emb.to(torch.float32).contiguous()
            inv, scal = rope_buffers(ref)
            for n, v in inv.items():
                golden[f"p{i}.rope.{n}"] = torch.from_numpy(v)
            info["prompts"].append({"n_tokens": len(ids), "text": tok.decode(ids, skip_special_tokens=False)})
        # A padded batch of both prompts (right padding, attention mask): what a batched encoder must match.
        a, b = golden["p0.tokens"].tolist(), golden["p1.tokens"].tolist()
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        n = max(len(a), len(b))
        xb = torch.tensor([a + [pad_id] * (n - len(a)), b + [pad_id] * (n - len(b))])
        mb = torch.tensor([[1] * len(a) + [0] * (n - len(a)), [1] * len(b) + [0] * (n - len(b))])
        kwargs = {"input_ids": xb, "attention_mask": mb}
        if spec["cls"] in TOKEN_TYPE_MODELS:
            kwargs["token_type_ids"] = torch.zeros_like(xb)
        ob = ref(**kwargs).last_hidden_state.to(torch.float64)
        info["batch_vs_single_max_diff"] = max(
            float((ob[0, :len(a)] - golden["p0.last_hidden"].to(torch.float64)).abs().max()),
            float((ob[1, :len(b)] - golden["p1.last_hidden"].to(torch.float64)).abs().max()))
    # The same embeddings through sentence-transformers (its tokenizer call, pooling and normalisation).
    try:
        from sentence_transformers import SentenceTransformer
        st = SentenceTransformer(str(folder), device="cpu")
        st = st.to(torch.float64)
        got = st.encode(texts, convert_to_numpy=True, normalize_embeddings=False)
        info["sentence_transformers"] = {
            "version": __import__("sentence_transformers").__version__,
            "max_abs_diff": [float(np.abs(got[i].astype(np.float64) - golden[f"p{i}.embedding"].numpy()).max())
                             for i in range(len(texts))]}
    except Exception as e:  # noqa: BLE001
        info["sentence_transformers"] = {"error": f"{type(e).__name__}: {e}"}
    info["tensors_golden"] = {k: [str(v.dtype).replace("torch.", ""), list(v.shape)] for k, v in golden.items()}
    save_file(golden, str(folder / "golden.safetensors"))
    info["transformers"] = transformers.__version__
    info["torch"] = torch.__version__
    info["reference_dtype"] = "float64 (transformers keeps RMSNorm and rope angles in float32)"
    (folder / "golden.json").write_text(json.dumps(json_safe(info), indent=1, sort_keys=True, default=str) + "\n")
    report[name] = {"ok": True, "st": info["sentence_transformers"], "batch": info["batch_vs_single_max_diff"]}


def encoder_specs(bpe_vocab, wp_vocab, bpe_ids, wp_ids, uni_vocab=0, uni_ids=None):
    s = {}
    s["bert"] = dict(
        cls="BertModel", arch="BertModel", pooling="cls", tokenizer="wordpiece", post=("bert", "[CLS]", "[SEP]"),
        tok_kwargs=dict(unk="[UNK]", pad="[PAD]", extra={"cls_token": "[CLS]", "sep_token": "[SEP]",
                                                          "mask_token": "[MASK]"}),
        emb_std=0.5,
        config=dict(model_type="bert", vocab_size=wp_vocab, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=128, hidden_act="gelu", max_position_embeddings=64, type_vocab_size=2,
                    layer_norm_eps=1e-12, pad_token_id=wp_ids["[PAD]"], position_embedding_type="absolute"))
    s["roberta"] = dict(
        cls="RobertaModel", arch="RobertaModel", pooling="mean", tokenizer="bpe", post=("roberta", "<s>", "</s>"),
        tok_kwargs=dict(bos="<s>", eos="</s>", unk="<unk>", pad="<pad>",
                        extra={"cls_token": "<s>", "sep_token": "</s>", "mask_token": "<mask>"}),
        emb_std=0.5,
        config=dict(model_type="roberta", vocab_size=bpe_vocab, hidden_size=64, num_hidden_layers=2,
                    num_attention_heads=4, intermediate_size=128, hidden_act="gelu", max_position_embeddings=66,
                    type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=bpe_ids["<pad>"], bos_token_id=bpe_ids["<s>"],
                    eos_token_id=bpe_ids["</s>"], position_embedding_type="absolute"))
    # ModernBERT: rotary positions with their own base in global and local layers (layer 0 global, then
    # every 2nd: global, local, global), a local window (|i - j| <= 4) smaller than the prompts, GeGLU
    # MLP (exact GELU), LayerNorm without bias, pre-norm (layer 0 without its attention norm), a final
    # norm; mean pooling as modernbert-embed's sentence-transformers config.
    s["modernbert"] = dict(
        cls="ModernBertModel", arch="ModernBertModel", pooling="mean", tokenizer="bpe", post=("roberta", "<s>", "</s>"),
        tok_kwargs=dict(bos="<s>", eos="</s>", unk="<unk>", pad="<pad>",
                        extra={"cls_token": "<s>", "sep_token": "</s>", "mask_token": "<mask>"}),
        emb_std=0.5, window=True,
        config=dict(model_type="modernbert", vocab_size=bpe_vocab, hidden_size=64, intermediate_size=96,
                    num_hidden_layers=3, num_attention_heads=4, hidden_activation="gelu", max_position_embeddings=128,
                    norm_eps=1e-5, norm_bias=False, global_rope_theta=160000.0, local_rope_theta=10000.0,
                    global_attn_every_n_layers=2, local_attention=8, attention_bias=False, mlp_bias=False,
                    classifier_pooling="mean", pad_token_id=bpe_ids["<pad>"], bos_token_id=bpe_ids["<s>"],
                    eos_token_id=bpe_ids["</s>"], cls_token_id=bpe_ids["<s>"], sep_token_id=bpe_ids["</s>"],
                    tie_word_embeddings=True))
    # XLM-RoBERTa (multilingual-e5, bge-m3): RoBERTa layers and position offset, a SentencePiece
    # Unigram tokenizer; CLS pooling as bge-m3.
    if uni_ids is not None:
        s["xlmr"] = dict(
            cls="XLMRobertaModel", arch="XLMRobertaModel", pooling="cls", tokenizer="unigram",
            post=("roberta", "<s>", "</s>"), tokenizer_class="XLMRobertaTokenizer",
            tok_kwargs=dict(bos="<s>", eos="</s>", unk="<unk>", pad="<pad>",
                            extra={"cls_token": "<s>", "sep_token": "</s>", "mask_token": "<mask>"}),
            emb_std=0.5,
            config=dict(model_type="xlm-roberta", vocab_size=uni_vocab, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=128, hidden_act="gelu", max_position_embeddings=66,
                        type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=uni_ids["<pad>"],
                        bos_token_id=uni_ids["<s>"], eos_token_id=uni_ids["</s>"],
                        position_embedding_type="absolute"))
    s["qwen3-embedding"] = dict(
        cls="Qwen3Model", arch="Qwen3Model", pooling="last", tokenizer="bpe", post=("suffix", "<|endoftext|>"),
        tok_kwargs=dict(eos="<|im_end|>", pad="<|endoftext|>"),
        config=dict(model_type="qwen3", vocab_size=bpe_vocab, hidden_size=64, intermediate_size=128,
                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                    max_position_embeddings=512, rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
                    attention_bias=False, use_sliding_window=False, eos_token_id=bpe_ids["<|im_end|>"]))
    return s


# --- chat templates ----------------------------------------------------------------------------

def render_templates(out, bpe):
    from tokenizers import Tokenizer
    res = {"transformers": transformers.__version__, "templates": {}}
    for tname, src in TEMPLATES.items():
        bos, eos = TEMPLATE_TOKENS[tname]
        tok = fast_tokenizer_class()(tokenizer_object=Tokenizer.from_str(bpe.to_str()), bos_token=bos, eos_token=eos)
        entry = {"source": src, "bos_token": bos, "eos_token": eos, "renders": []}
        for cname, msgs in CONVERSATIONS.items():
            for agp in (True, False):
                r = {"conversation": cname, "add_generation_prompt": agp}
                try:
                    r["text"] = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=agp,
                                                        chat_template=src)
                except Exception as e:  # noqa: BLE001
                    r["error"] = f"{type(e).__name__}: {e}"
                entry["renders"].append(r)
        res["templates"][tname] = entry
    res["conversations"] = CONVERSATIONS
    (out / "chat_templates_transformers.json").write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")


# --- GGUF through llama.cpp's converter ----------------------------------------------------------

def convert_all(out, converter, names, report):
    converter = Path(converter).resolve()
    sys.path.insert(0, str(converter / "gguf-py"))
    sys.path.insert(0, str(converter))
    import convert_hf_to_gguf as C  # noqa: E402
    import conversion  # noqa: E402
    from conversion import base as CB  # noqa: E402
    pre = {"value": "gpt-2"}
    # Our tokenizers are small and new: llama.cpp's table of known pre-tokenizer hashes cannot know
    # them, so name the pre-tokenizer (byte-level GPT-2 for the BPE ones, BERT's default otherwise).
    CB.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre["value"]
    # No SentencePiece model here: the architectures that insist on one take the GPT-2 vocab path.
    for arch in ("Gemma2ForCausalLM", "Phi3ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM",
                 "MixtralForCausalLM", "Gemma3ForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM",
                 "OlmoeForCausalLM", "Qwen3Model"):
        try:
            conversion.get_model_class(arch).set_vocab = CB.TextModel._set_vocab_gpt2
        except Exception as e:  # noqa: BLE001
            report.setdefault("_converter_patch", []).append(f"{arch}: {e}")
    for name in names:
        folder = out / name
        dst = folder / f"{name}-bf16.gguf"
        pre["value"] = "default" if name == "bert" else "gpt-2"
        t0 = time.time()
        argv = sys.argv
        sys.argv = ["convert_hf_to_gguf.py", str(folder), "--outfile", str(dst), "--outtype", "bf16"]
        try:
            C.main()
            report.setdefault("gguf", {})[name] = {"ok": dst.exists(), "bytes": dst.stat().st_size if dst.exists() else 0,
                                                   "seconds": round(time.time() - t0, 2)}
        except BaseException as e:  # noqa: BLE001  (the converter calls sys.exit on errors)
            report.setdefault("gguf", {})[name] = {"ok": False, "error": f"{type(e).__name__}: {e}",
                                                   "trace": traceback.format_exc()[-3000:]}
            if dst.exists():
                dst.unlink()
        finally:
            sys.argv = argv
            flush(out, report)
        # Metadata the converter wrote, for the README and the tests' expectations.
        if dst.exists():
            try:
                import gguf  # noqa: E402
                r = gguf.GGUFReader(str(dst))
                kv = {}
                for f in r.fields.values():
                    if f.name.startswith("tokenizer.ggml.") and f.name not in (
                            "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.bos_token_id",
                            "tokenizer.ggml.eos_token_id"):
                        continue
                    try:
                        v = f.contents()
                    except Exception:  # noqa: BLE001
                        v = "?"
                    if isinstance(v, str) and len(v) > 200:
                        v = v[:200] + "..."
                    kv[f.name] = v
                tensors = {t.name: [t.tensor_type.name, [int(x) for x in t.shape]] for t in r.tensors}
                (folder / "gguf_dump.json").write_text(json.dumps({"metadata": kv, "tensors": tensors}, indent=1,
                                                                  sort_keys=True, default=str) + "\n")
            except Exception as e:  # noqa: BLE001
                report["gguf"][name]["dump_error"] = f"{type(e).__name__}: {e}"


def json_safe(v):
    """v with NaN and infinities as null: JSON has no such numbers (transformers' padded ModernBERT
    batch gives NaN: padded rows attend to nothing, and 0 * NaN reaches the real rows)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v


def flush(out, report):
    """report.json now (a run cut short still leaves what it did)."""
    (out / "report.json").write_text(json.dumps(json_safe(report), indent=1, sort_keys=True, default=str) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--converter", type=Path, help="llama.cpp source folder (convert_hf_to_gguf.py, conversion/, gguf-py/)")
    ap.add_argument("--only", help="comma-separated model names")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    torch.set_grad_enabled(False)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    report = {"transformers": transformers.__version__, "torch": torch.__version__, "python": sys.version}
    for mod in ("tokenizers", "safetensors", "sentence_transformers", "numpy"):
        try:
            report[mod] = __import__(mod).__version__
        except Exception as e:  # noqa: BLE001
            report[mod] = f"not importable: {e}"
    t0 = time.time()
    bpe = train_bpe()
    wp = train_wordpiece()
    bpe_ids = {s: bpe.token_to_id(s) for s in SPECIALS}
    wp_ids = {s: wp.token_to_id(s) for s in WORDPIECE_SPECIALS}
    report["bpe_vocab"], report["wordpiece_vocab"] = bpe.get_vocab_size(), wp.get_vocab_size()
    only = set(args.only.split(",")) if args.only else None
    done = []
    gen = torch.Generator().manual_seed(SEED)
    for name, spec in specs(bpe.get_vocab_size(), bpe_ids).items():
        if only and name not in only:
            continue
        t = time.time()
        try:
            make_causal(name, spec, out, bpe, None, report, gen)
            done.append(name)
        except Exception as e:  # noqa: BLE001
            report[name] = {"ok": False, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-4000:]}
        report[name]["seconds"] = round(time.time() - t, 2)
        print(f"{name}: {report[name].get('ok')} {report[name]['seconds']} s", flush=True)
        flush(out, report)
    try:
        uni = train_unigram(report)
        uni_ids = {s: uni.token_to_id(s) for s in UNIGRAM_SPECIALS}
        report["unigram_vocab"] = uni.get_vocab_size()
    except Exception as e:  # noqa: BLE001
        uni, uni_ids = None, None
        report["unigram"] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-3000:]}
    for name, spec in encoder_specs(bpe.get_vocab_size(), wp.get_vocab_size(), bpe_ids, wp_ids,
                                    uni.get_vocab_size() if uni else 0, uni_ids).items():
        if only and name not in only:
            continue
        t = time.time()
        try:
            make_encoder(name, spec, out, {"bpe": bpe, "wordpiece": wp, "unigram": uni}, report, gen)
            done.append(name)
        except Exception as e:  # noqa: BLE001
            report[name] = {"ok": False, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-4000:]}
        report[name]["seconds"] = round(time.time() - t, 2)
        print(f"{name}: {report[name].get('ok')} {report[name]['seconds']} s", flush=True)
        flush(out, report)
    try:
        if not only:
            render_templates(out, bpe)
            report["chat_templates"] = "ok"
    except Exception as e:  # noqa: BLE001
        report["chat_templates"] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-3000:]}
    if args.converter:
        try:
            convert_all(out, args.converter, done, report)
        except Exception as e:  # noqa: BLE001
            report["gguf_error"] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-3000:]}
    report["seconds"] = round(time.time() - t0, 1)
    (out / "report.json").write_text(json.dumps(json_safe(report), indent=1, sort_keys=True, default=str) + "\n")
    print(json.dumps({k: v for k, v in report.items()}, indent=1, default=str)[:6000])


if __name__ == "__main__":
    main()
