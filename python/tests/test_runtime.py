"""Contexts, tensors, info, errors and leaks."""

import gc
import json
import os
import subprocess

import numpy as np
import pytest

import wgc
from conftest import rss_bytes


def test_info_is_what_the_cli_prints(ctx):
    info = wgc.info()
    for key in ("device", "backend", "adapter_type", "features", "limits", "subgroup_min_size"):
        assert key in info
    assert info["backend"] == "vulkan"  # never Dawn's Null backend
    assert info == ctx.info()
    cli = os.environ.get("WGC_CLI")
    if not cli:
        pytest.skip("WGC_CLI (the wgc executable) not set: not compared with `wgc info --json`")
    out = subprocess.run([cli, "info", "--json"], check=True, capture_output=True, text=True).stdout
    assert json.loads(out) == info


def test_context_options_and_errors():
    with pytest.raises(ValueError, match="backend"):
        wgc.Context(backend="tpu")
    c = wgc.Context(backend="auto")
    assert c.device == wgc.info(c)["device"]
    assert "wgc.Context(" in repr(c)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32])
def test_tensor_round_trip(dtype, rng):
    a = (rng.standard_normal((3, 5, 7)) * 1000).astype(dtype)
    t = wgc.Tensor(a)
    assert t.shape == (3, 5, 7) and t.dtype == np.dtype(dtype) and t.size == 105 and t.ndim == 3
    assert t.nbytes == a.nbytes and len(t) == 3
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(np.asarray(t), a)
    v = t.reshape(15, 7)
    assert v.shape == (15, 7)
    np.testing.assert_array_equal(v.numpy(), a.reshape(15, 7))


def test_tensor_of_a_non_contiguous_array(rng):
    a = rng.standard_normal((8, 6)).astype(np.float32)[:, ::2]
    np.testing.assert_array_equal(wgc.Tensor(a).numpy(), a)


def test_tensor_zeros_and_bad_arguments():
    np.testing.assert_array_equal(wgc.Tensor.zeros((4, 3), np.int32).numpy(), np.zeros((4, 3), np.int32))
    assert wgc.Tensor.empty(10).shape == (10,)
    with pytest.raises(TypeError, match="float64"):
        wgc.Tensor(np.zeros(3))
    with pytest.raises(TypeError, match="float16"):
        wgc.Tensor.zeros(3, np.float16)
    with pytest.raises(ValueError, match="empty"):
        wgc.Tensor(np.zeros(0, np.float32))
    with pytest.raises(ValueError, match="negative"):
        wgc.Tensor.zeros((2, -1))
    with pytest.raises(ValueError, match="element counts differ"):
        wgc.Tensor(np.zeros(6, np.float32)).reshape(4, 2)


def test_errors_are_a_hierarchy():
    for e in (wgc.DeviceError, wgc.GpuError, wgc.LimitError, wgc.ShaderError):
        assert issubclass(e, wgc.Error)
    assert issubclass(wgc.Error, RuntimeError)
    # A lost GPU device: retryable on a new Context (the C++ side: tests/test_device_loss.cpp).
    assert issubclass(wgc.DeviceLost, wgc.DeviceError)


def test_a_buffer_past_the_device_limit_is_a_limit_error(ctx):
    too_big = ctx.info()["limits"]["max_buffer_size"] // 4 + 1
    with pytest.raises(wgc.LimitError, match="maxBufferSize"):
        wgc.Tensor.empty(too_big)


def test_nothing_leaks_across_a_thousand_small_calls(ctx, tiny_llm):
    x = np.arange(64, dtype=np.float32)
    t = wgc.Tensor(x)
    shader = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) { b[g.x] = a[g.x] + 1.0; }
"""

    def calls(n):
        for _ in range(n):
            wgc.add(t, t).numpy()
            wgc.sum(x)
            wgc.map("x * 2.0", x, device="gpu")
            wgc.run(shader, inputs={"a": x}, outputs={"b": ((64,), np.float32)})
            tiny_llm.tokenize("leak check")

    calls(100)  # warm: pipelines compiled, pool filled
    gc.collect()
    rss0, buffers0 = rss_bytes(), ctx.allocated_buffers
    calls(1000)
    gc.collect()
    grown = rss_bytes() - rss0
    assert ctx.allocated_buffers == buffers0
    assert grown < 4 << 20, f"RSS grew by {grown / 2**20:.1f} MiB over 1000 calls"
