"""wgc.LLM against the fixtures (logits, tokens, greedy continuations and the chat template made by
Hugging Face transformers / tokenizers), and its generation API on the built-in model."""

import json
import math
import os
import signal
import threading
import time

import numpy as np
import pytest

import wgc
from conftest import deps_dir, fixtures_dir, read_safetensors, rel_error, require


def golden(name):
    d = require(fixtures_dir() / name)
    return json.loads((d / "golden.json").read_text()), read_safetensors(require(d / "golden.safetensors"))


def check_fixture_model(llm, name, tolerance, min_greedy_margin=0.01, tokenize=True):
    meta, g = golden(name)
    for i, prompt in enumerate(meta["prompts"]):
        tokens = g[f"p{i}.tokens"].tolist()
        if tokenize:
            assert llm.tokenize(prompt["text"]) == tokens, f"prompt {i}"
            assert llm.detokenize(tokens) == prompt["decoded"], f"prompt {i}"
        want = g.get(f"p{i}.logits_last4", g.get(f"p{i}.logits_last2"))
        got = llm.logits(tokens)
        assert got.shape == (len(tokens), llm.vocab_size) and got.dtype == np.float32
        assert rel_error(got[-len(want):], want) < tolerance, f"prompt {i}"
        # Greedy continuation (no EOS stop), where the top-1 margin makes it stable.
        if prompt["last_top1_margin"] < min_greedy_margin:
            continue
        llm.generate(tokens, max_tokens=6, temperature=0, ignore_eos=True)
        ids, ref = llm.last_result["ids"], g[f"p{i}.greedy"].tolist()[:6]
        assert ids[0] == ref[0], f"prompt {i}"
        same = next((k for k, (a, b) in enumerate(zip(ids, ref)) if a != b), len(ref))
        assert same >= 4, f"prompt {i}: {ids} vs {ref}"


def test_tiny_llama2_gguf_matches_transformers():
    path = require(fixtures_dir() / "tiny-llama2-f32" / "tiny-llama2-f32-f32.gguf")
    llm = wgc.LLM(path, max_ctx=64)
    assert llm.architecture == "llama" and llm.vocab_size == 32000 and llm.max_ctx == 64
    check_fixture_model(llm, "tiny-llama2-f32", 1e-4)


def test_split_over_two_devices_gives_the_one_device_logits():
    # The model's two layers on two devices of one adapter (as `--gpus 0,0`): the same bits.
    path = require(fixtures_dir() / "tiny-llama2-f32" / "tiny-llama2-f32-f32.gguf")
    one = wgc.LLM(path, max_ctx=64, ctx=wgc.Context(backend="cpu-vulkan"))
    two = wgc.LLM(path, max_ctx=64, gpus=[wgc.Context(backend="cpu-vulkan"), wgc.Context(backend="cpu-vulkan")])
    tokens = [1, 450, 4996, 17354, 1701, 29871]
    assert np.array_equal(one.logits(tokens), two.logits(tokens))
    with pytest.raises(ValueError, match="3 shares for 2 GPUs"):
        wgc.LLM(path, gpus=[0, 0], tensor_split=[1, 2, 3])
    with pytest.raises(ValueError, match="ctx or gpus"):
        wgc.LLM(path, ctx=wgc.Context(backend="cpu-vulkan"), gpus=[0, 0])


def test_kv_cache_types():
    # cache_type as `--cache-type`: f16 keeps the f32 cache's logits to rounding (the built-in model).
    f32 = wgc.LLM(max_ctx=32, ctx=wgc.Context(backend="cpu-vulkan"))
    f16 = wgc.LLM(max_ctx=32, ctx=wgc.Context(backend="cpu-vulkan"), cache_type="f16")
    tokens = f32.tokenize("The moon")
    a, b = f32.logits(tokens), f16.logits(tokens)
    assert np.abs(a - b).max() <= 1e-2 * np.abs(a).max()
    with pytest.raises(ValueError, match="cache_type must be"):
        wgc.LLM(cache_type="q4_0")


def test_tiny_llama3_safetensors_matches_transformers():
    folder = require(fixtures_dir() / "tiny-llama3-bf16")
    require(folder / "model.safetensors")
    llm = wgc.LLM(folder, max_ctx=64)
    assert not llm.has_tokenizer
    check_fixture_model(llm, "tiny-llama3-bf16", 1e-4, tokenize=False)
    with pytest.raises(ValueError, match="has no tokenizer"):
        llm.tokenize("Hello")
    with pytest.raises(ValueError, match="has no tokenizer"):
        llm.generate("Hello")


def test_tiny_llama3_tokenizer_and_chat_template():
    folder = require(fixtures_dir() / "tiny-llama3-bf16")
    tok = require(deps_dir() / "node" / "node_modules" / "@lenml" / "tokenizer-llama3" / "models")
    llm = wgc.LLM(folder, tokenizer=tok, max_ctx=128)
    meta, g = golden("tiny-llama3-bf16")
    for i, prompt in enumerate(meta["prompts"]):
        assert llm.tokenize(prompt["text"]) == g[f"p{i}.tokens"].tolist()
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is 2+2?"},
                {"role": "assistant", "content": "4"}, {"role": "user", "content": "And 3+3?"}]
    assert llm.apply_chat_template(messages) == meta["chat_template_rendered"]
    reply = llm.chat(messages, max_tokens=4, temperature=0)
    r = llm.last_result
    assert reply == r["text"]
    assert r["prompt_ids"] == llm.tokenize(meta["chat_template_rendered"], add_special=False)


# ---- generation on the built-in model ----------------------------------------------------------

def test_streaming_equals_not_streaming(tiny_llm):
    for kw in (dict(temperature=0), dict(temperature=0.9, top_k=20, top_p=0.9, min_p=0.02, seed=7),
               dict(seed=3, stop=["."])):
        text = tiny_llm.generate("The moon", max_tokens=20, **kw)
        ids = tiny_llm.last_result["ids"]
        pieces = list(tiny_llm.generate("The moon", max_tokens=20, stream=True, **kw))
        assert "".join(pieces) == text, kw
        assert tiny_llm.last_result["ids"] == ids
        assert len(pieces) > 1


def test_a_seed_repeats_and_the_result_says_why_it_stopped(tiny_llm):
    a = tiny_llm.generate("Cats", max_tokens=12, seed=11, ignore_eos=True)
    r = tiny_llm.last_result
    assert r["stop"] == "length" and len(r["ids"]) == 12
    assert r["timings"]["generated_tokens"] == 12 and r["timings"]["decode_tokens_per_s"] > 0
    assert tiny_llm.generate("Cats", max_tokens=12, seed=11, ignore_eos=True) == a
    assert tiny_llm.last_result["timings"]["prompt_eval_tokens"] < r["timings"]["prompt_tokens"]  # cached prefix


def test_stop_strings_end_the_text(tiny_llm):
    full = tiny_llm.generate("The", max_tokens=30, temperature=0, ignore_eos=True)
    cut = full.find(" ", 3)
    assert cut > 0
    stop = full[cut:cut + 2]
    text = tiny_llm.generate("The", max_tokens=30, temperature=0, ignore_eos=True, stop=stop)
    assert text == full[:full.find(stop)] and tiny_llm.last_result["stop"] == "stop"


def test_token_ids_in_and_out(tiny_llm):
    ids = tiny_llm.tokenize("Hello world")
    assert tiny_llm.detokenize(ids, skip_special=True) == "Hello world"
    assert tiny_llm.tokenize("Hello world", add_special=False) == ids[1:]
    text = tiny_llm.generate(ids, max_tokens=5, temperature=0)
    assert tiny_llm.last_result["prompt_ids"] == ids
    assert text == tiny_llm.generate("Hello world", max_tokens=5, temperature=0)
    logits = tiny_llm.logits(np.array(ids))
    assert logits.shape == (len(ids), tiny_llm.vocab_size)
    tiny_llm.generate(ids, max_tokens=1, temperature=0, ignore_eos=True)
    assert int(np.argmax(logits[-1])) == tiny_llm.last_result["ids"][0]


def test_chat_keeps_the_conversation_in_the_cache(tiny_llm):
    messages = [{"role": "user", "content": "Tell me about the sea."}]
    reply = tiny_llm.chat(messages, max_tokens=8, seed=5)
    messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": "And the sky?"}]
    tiny_llm.chat(messages, max_tokens=8, seed=5)
    t = tiny_llm.last_result["timings"]
    assert t["prompt_eval_tokens"] < t["prompt_tokens"]
    assert "".join(tiny_llm.chat(messages, max_tokens=8, seed=5, stream=True)) == tiny_llm.chat(
        messages, max_tokens=8, seed=5)


@pytest.mark.parametrize("kw,match", [
    (dict(top_p=1.5), "top_p"), (dict(top_p=0), "top_p"), (dict(min_p=2.0), "min_p"),
    (dict(temperature=math.nan), "temperature"), (dict(repeat_penalty=0), "repeat_penalty"),
    (dict(presence_penalty=math.inf), "presence_penalty"), (dict(repeat_last_n=-2), "penalty_last_n"),
    (dict(seed=-1), "seed"), (dict(max_tokens=-2), "max_tokens"), (dict(stop=[""]), "stop"),
])
def test_bad_sampling_values_raise_value_error_naming_them(tiny_llm, kw, match):
    with pytest.raises(ValueError, match=match):
        tiny_llm.generate("x", **kw)


@pytest.mark.parametrize("kw,match", [
    (dict(temperature="hot"), "temperature must be a number"), (dict(top_k=1.5), "top_k must be an int"),
    (dict(max_tokens="3"), "max_tokens must be an int"), (dict(stop=[1]), "stop"),
])
def test_wrong_types_raise_type_error(tiny_llm, kw, match):
    with pytest.raises(TypeError, match=match):
        tiny_llm.generate("x", **kw)


def test_bad_prompts_ids_and_files(tiny_llm, tmp_path):
    with pytest.raises(TypeError, match="prompt must be a str or a list of token ids"):
        tiny_llm.generate(42)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tiny_llm.generate([1, tiny_llm.vocab_size])
    with pytest.raises(ValueError, match="no tokens"):
        tiny_llm.generate([])
    with pytest.raises(TypeError, match="token ids are ints"):
        tiny_llm.logits(["a"])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tiny_llm.detokenize([-1])
    with pytest.raises(ValueError, match="more than the context"):
        tiny_llm.logits([1] * (tiny_llm.max_ctx + 1))
    with pytest.raises(ValueError, match="needs a str 'content'"):
        tiny_llm.chat([{"role": "user"}])
    with pytest.raises(FileNotFoundError, match="no model file"):
        wgc.LLM(tmp_path / "missing.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all")
    with pytest.raises(wgc.Error, match="junk.gguf"):
        wgc.LLM(junk)


def interrupt_after(seconds):
    t = threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT))
    t.start()
    return t


def test_ctrl_c_stops_a_generation_cleanly():
    # A context long enough that the generation is still running when the signal comes, on the
    # CPU engine too (it fills the shared model's 256 positions in well under the delay).
    tiny_llm = wgc.LLM(max_ctx=16384)
    want = tiny_llm.generate("Once", max_tokens=6, temperature=0, ignore_eos=True)
    t0 = time.monotonic()
    interrupt_after(0.2)
    with pytest.raises(KeyboardInterrupt):
        tiny_llm.generate("Once upon", max_tokens=-1, temperature=0, ignore_eos=True)
    assert time.monotonic() - t0 < 10
    assert tiny_llm.last_result["stop"] == "cancelled"
    # The model is still usable and gives what it gave before.
    assert tiny_llm.generate("Once", max_tokens=6, temperature=0, ignore_eos=True) == want
    interrupt_after(0.2)
    with pytest.raises(KeyboardInterrupt):
        for _ in tiny_llm.generate("Once upon", max_tokens=-1, temperature=0, ignore_eos=True, stream=True):
            pass
    assert tiny_llm.generate("Once", max_tokens=6, temperature=0, ignore_eos=True) == want


def test_an_abandoned_stream_stops_and_the_model_goes_on(tiny_llm):
    want = tiny_llm.generate("Once", max_tokens=6, temperature=0, ignore_eos=True)
    s = tiny_llm.generate("A long story", max_tokens=-1, ignore_eos=True, stream=True, seed=1)
    next(s)
    s.close()
    del s
    s = tiny_llm.generate("A long story", max_tokens=-1, ignore_eos=True, stream=True, seed=1)
    next(s)
    del s  # dropped without close()
    assert tiny_llm.generate("Once", max_tokens=6, temperature=0, ignore_eos=True) == want


def test_the_gil_is_released_while_generating(tiny_llm):
    counted, running = [0], [True]

    def count():
        while running[0]:
            counted[0] += 1

    t = threading.Thread(target=count)
    t.start()
    try:
        tiny_llm.generate("The", max_tokens=12, temperature=0, ignore_eos=True)
    finally:
        running[0] = False
        t.join()
    assert counted[0] > 10000
