"""wgc.LLM: Llama-family language models (Llama 2/3, Mistral, Qwen 2/3; GGUF or Hugging Face
safetensors) on the GPU."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _wgc
from ._wgc import Context

Prompt = Union[str, Sequence[int]]


def _number(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"wgc.LLM: {name} must be a number, got {type(v).__name__}")
    return float(v)


def _integer(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"wgc.LLM: {name} must be an int, got {type(v).__name__}")
    return int(v)


def _sampling(temperature, top_p, top_k, min_p, seed, repeat_penalty, presence_penalty,
              frequency_penalty, repeat_last_n) -> Dict[str, Any]:
    """The sampling values the caller set (the model's defaults fill the rest)."""
    s: Dict[str, Any] = {}
    for name, v in (("temperature", temperature), ("top_p", top_p), ("min_p", min_p),
                    ("repeat_penalty", repeat_penalty), ("presence_penalty", presence_penalty),
                    ("frequency_penalty", frequency_penalty)):
        if v is not None:
            s[name] = _number(name, v)
    for name, v in (("top_k", top_k), ("repeat_last_n", repeat_last_n)):
        if v is not None:
            v = _integer(name, v)
            if not -(2**31) <= v < 2**31:
                raise ValueError(f"wgc.LLM: {name} = {v} is out of range")
            s[name] = v
    if seed is not None:
        seed = _integer("seed", seed)
        if not 0 <= seed < 2**64:
            raise ValueError(f"wgc.LLM: seed must be in [0, 2**64), got {seed}")
        s["seed"] = seed
    return s


def _stops(stop) -> List[str]:
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    stops = list(stop)
    for s in stops:
        if not isinstance(s, str):
            raise TypeError(f"wgc.LLM: stop must be a str or a list of str, got an item {s!r}")
    return stops


class LLM:
    """A Llama-family model with its tokenizer, ready to generate.

    LLM(path=None, *, tokenizer=None, max_ctx=0, ctx=None)

    path: a .gguf file or a Hugging Face folder (config.json + *.safetensors); None loads the
    built-in wgc-tiny-dict model. tokenizer: a tokenizer.json, folder or .gguf when the model has
    none of its own. max_ctx: the KV cache length (0: the model's context, at most 4096).

    Generation runs on the GPU with the GIL released; Ctrl-C stops it cleanly (KeyboardInterrupt,
    the model stays usable). The KV cache is kept between calls: a prompt that starts with what
    the last call saw (a chat's earlier turns) runs only its new tokens.

        llm = wgc.LLM()                                     # the built-in model
        print(llm.generate("The moon", max_tokens=32, seed=1))
        for piece in llm.generate("Once", stream=True):     # text as it is decoded
            print(piece, end="", flush=True)
        llm.chat([{"role": "user", "content": "Hi"}])       # with the model's chat template
    """

    def __init__(self, path: Optional[Union[str, os.PathLike]] = None, *,
                 tokenizer: Optional[Union[str, os.PathLike]] = None, max_ctx: int = 0,
                 ctx: Optional[Context] = None, gpus: Optional[Sequence[Union[int, Context]]] = None,
                 tensor_split: Optional[Sequence[float]] = None, cache_type: str = "f32") -> None:
        if ctx is not None and not isinstance(ctx, Context):
            raise TypeError(f"wgc.LLM: ctx must be a wgc.Context, got {type(ctx).__name__}")
        # gpus: the model split by layers over these devices (adapter indices, as `wgc generate
        # --gpus 0,1`, or Contexts; [0, 0] opens one GPU twice), the first range on the first;
        # tensor_split: their shares of the layers (default: equal layer counts).
        more: List[Context] = []
        if gpus is not None:
            if ctx is not None:
                raise ValueError("wgc.LLM: give ctx or gpus, not both")
            devs = [g if isinstance(g, Context) else Context(adapter=_integer("gpus", g)) for g in gpus]
            if len(devs) < 1:
                raise ValueError("wgc.LLM: gpus is empty")
            ctx, more = devs[0], devs[1:]
        split = [float(p) for p in tensor_split] if tensor_split is not None else []
        if split and len(split) != len(more) + 1:
            raise ValueError(f"wgc.LLM: tensor_split has {len(split)} shares for {len(more) + 1} GPUs (gpus)")
        max_ctx = _integer("max_ctx", max_ctx)
        # cache_type: the KV cache's storage, "f32", "f16" or "q8_0" (as `wgc generate --cache-type`)
        if cache_type not in ("f32", "f16", "q8_0"):
            raise ValueError(f"wgc.LLM: cache_type must be 'f32', 'f16' or 'q8_0', not {cache_type!r}")
        for what, p in (("model", path), ("tokenizer", tokenizer)):
            if p is not None:
                if not isinstance(p, (str, os.PathLike)):
                    raise TypeError(f"wgc.LLM: {what} must be a path, got {type(p).__name__}")
                if not os.path.exists(p):
                    raise FileNotFoundError(f"wgc.LLM: no {what} file or folder {os.fspath(p)!r}")
        self._m = _wgc.LLM(ctx or _wgc.default_context(), None if path is None else os.fspath(path),
                           None if tokenizer is None else os.fspath(tokenizer), max_ctx, more, split,
                           cache_type)

    # ---- generation ------------------------------------------------------------------------

    def generate(self, prompt: Prompt, max_tokens: int = 128, temperature: Optional[float] = None,
                 top_p: Optional[float] = None, top_k: Optional[int] = None, min_p: Optional[float] = None,
                 seed: Optional[int] = None, stop: Union[str, Sequence[str], None] = None, *,
                 stream: bool = False, repeat_penalty: Optional[float] = None,
                 presence_penalty: Optional[float] = None, frequency_penalty: Optional[float] = None,
                 repeat_last_n: Optional[int] = None, ignore_eos: bool = False,
                 add_special: bool = True) -> Union[str, Iterator[str]]:
        """Continues `prompt` (text, or a list of token ids) and returns the new text.

        max_tokens: at most this many tokens (-1: until an end-of-turn token, a stop string or the
        end of the context). Sampling (None takes the model's default, see default_sampling):
        temperature (<= 0: greedy), top_p in (0, 1], top_k (<= 0: off), min_p in [0, 1],
        repeat_penalty > 0, presence_penalty, frequency_penalty, repeat_last_n (tokens the
        penalties look back over; -1: all), seed (None: a random one). Out-of-range values raise
        ValueError naming the argument. stop: a string or strings that end the text (not
        included). stream=True returns an iterator over pieces of text as they are decoded; they
        join to what stream=False returns. add_special: the tokenizer's BOS where the model wants
        it. last_result has the token ids, why it stopped and the timings.
        """
        if not isinstance(prompt, str):
            if isinstance(prompt, (bytes, bytearray)) or not isinstance(prompt, (Sequence, np.ndarray)):
                raise TypeError(f"wgc.LLM.generate: prompt must be a str or a list of token ids, "
                                f"got {type(prompt).__name__}")
            prompt = [int(i) if isinstance(i, np.integer) else i for i in prompt]
        s = self._m.start(prompt, _integer("max_tokens", max_tokens), _stops(stop), bool(ignore_eos),
                          bool(add_special),
                          _sampling(temperature, top_p, top_k, min_p, seed, repeat_penalty, presence_penalty,
                                    frequency_penalty, repeat_last_n))
        return s if stream else s.run_to_end()

    def chat(self, messages: Sequence[Mapping[str, Any]], max_tokens: int = 256,
             temperature: Optional[float] = None, top_p: Optional[float] = None, top_k: Optional[int] = None,
             min_p: Optional[float] = None, seed: Optional[int] = None,
             stop: Union[str, Sequence[str], None] = None, *, stream: bool = False,
             repeat_penalty: Optional[float] = None, presence_penalty: Optional[float] = None,
             frequency_penalty: Optional[float] = None, repeat_last_n: Optional[int] = None
             ) -> Union[str, Iterator[str]]:
        """The assistant's reply to `messages` ([{"role": "system"|"user"|"assistant", "content":
        str}, ...]), rendered with the model's chat template (a plain "role: content" template
        when it has none). Arguments as for generate. Earlier turns stay in the KV cache, so
        calling again with the reply and a new message appended runs only the new tokens.
        """
        return self.generate(self.apply_chat_template(messages), max_tokens, temperature, top_p, top_k, min_p,
                             seed, stop, stream=stream, repeat_penalty=repeat_penalty,
                             presence_penalty=presence_penalty, frequency_penalty=frequency_penalty,
                             repeat_last_n=repeat_last_n, add_special=False)

    def apply_chat_template(self, messages: Sequence[Mapping[str, Any]],
                            add_generation_prompt: bool = True) -> str:
        """The prompt text the chat template makes of `messages` (it writes BOS itself)."""
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise TypeError("wgc.LLM.chat: messages must be a list of {'role': ..., 'content': ...} dicts")
        for i, m in enumerate(messages):
            if not isinstance(m, Mapping):
                raise TypeError(f"wgc.LLM.chat: messages[{i}] must be a dict, got {type(m).__name__}")
            for key in ("role", "content"):
                if not isinstance(m.get(key), str):
                    raise ValueError(f"wgc.LLM.chat: messages[{i}] needs a str {key!r}")
        try:
            text = json.dumps(list(messages))
        except (TypeError, ValueError) as e:
            raise TypeError(f"wgc.LLM.chat: messages must be JSON-like: {e}") from None
        return self._m.render_chat(text, bool(add_generation_prompt))

    # ---- tokens and logits -----------------------------------------------------------------

    def tokenize(self, text: str, add_special: bool = True) -> List[int]:
        """Token ids of `text` (with BOS where the model's tokenizer adds one when add_special)."""
        if not isinstance(text, str):
            raise TypeError(f"wgc.LLM.tokenize: text must be a str, got {type(text).__name__}")
        return self._m.tokenize(text, bool(add_special))

    def detokenize(self, ids: Sequence[int], skip_special: bool = False) -> str:
        """The text of token ids (skip_special drops special tokens such as BOS)."""
        return self._m.detokenize(list(ids), bool(skip_special))

    def logits(self, ids: Sequence[int]) -> np.ndarray:
        """The model's logits at every position of `ids` (run from an empty cache): float32 [n, vocab]."""
        return self._m.logits(list(ids))

    def reset(self) -> None:
        """Empties the KV cache (the next prompt runs in full)."""
        self._m.reset()

    # ---- facts ---------------------------------------------------------------------------------

    @property
    def last_result(self) -> Optional[Dict[str, Any]]:
        """The last finished generation: text, ids, prompt_ids, stop ('eos', 'stop', 'length',
        'context', 'cancelled'), message and timings (prompt and decode tokens/s, as the CLI)."""
        return self._m.last_result

    @property
    def default_sampling(self) -> Dict[str, Any]:
        """The sampling a generation gets for the values it does not set (per model, as the CLI)."""
        return self._m.default_sampling

    @property
    def path(self) -> str:
        return self._m.path

    @property
    def vocab_size(self) -> int:
        return self._m.vocab_size

    @property
    def max_ctx(self) -> int:
        """Tokens the KV cache holds."""
        return self._m.max_ctx

    @property
    def architecture(self) -> str:
        return self._m.architecture

    @property
    def has_tokenizer(self) -> bool:
        return self._m.has_tokenizer

    @property
    def chat_template(self) -> Optional[str]:
        """The model's Jinja chat template ('' when it has none; None without a tokenizer)."""
        return self._m.chat_template

    @property
    def context(self) -> Context:
        return self._m.context

    def __repr__(self) -> str:
        return f"wgc.LLM({self.path!r}, {self.architecture}, context {self.max_ctx})"
