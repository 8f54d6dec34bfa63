"""wgc.run: WGSL from Python."""

import numpy as np
import pytest

import wgc

SAXPY = """
struct P { n: u32, a: f32, shift: i32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: P;
override scale: f32 = 1.0;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x < p.n) { out[g.x] = scale * (p.a * x[g.x] + y[g.x]) + f32(p.shift); }
}
"""


def test_saxpy_with_params_and_constants(rng):
    n = 1000  # not a multiple of the workgroup
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    r = wgc.run(SAXPY, inputs={"x": x, "y": y}, outputs={"out": ((n,), np.float32)},
                workgroups=(n + 63) // 64, params=[n, 2.5, -3], constants={"scale": 0.5})
    np.testing.assert_allclose(r["out"], 0.5 * (2.5 * x + y) - 3, rtol=1e-6, atol=1e-6)


def test_params_as_an_array_and_outputs_zeroed_where_unwritten(rng):
    n = 100
    x = rng.standard_normal(n).astype(np.float32)
    params = np.array([40, 0, 0], np.uint32)
    params[1] = np.array([1.0], np.float32).view(np.uint32)[0]
    r = wgc.run(SAXPY, inputs={"x": x, "y": x}, outputs={"out": ((2, 50), "float32")}, workgroups=2, params=params)
    want = np.zeros(n, np.float32)
    want[:40] = 2 * x[:40]
    np.testing.assert_allclose(r["out"].reshape(-1), want, rtol=1e-6)
    assert r["out"].shape == (2, 50)


def test_integer_buffers_and_3d_workgroups():
    src = """
@group(0) @binding(0) var<storage, read> a: array<i32>;
@group(0) @binding(1) var<storage, read_write> b: array<u32>;
@compute @workgroup_size(4, 2, 1) fn main(@builtin(global_invocation_id) g: vec3u,
                                          @builtin(num_workgroups) nw: vec3u) {
  let i = g.x + g.y * 4u * nw.x + g.z * 8u * nw.x * nw.y;
  b[i] = u32(a[i] * a[i]) + g.z;
}
"""
    a = np.arange(-24, 24, dtype=np.int32)
    r = wgc.run(src, inputs={"a": a}, outputs={"b": ((48,), np.uint32)}, workgroups=(1, 3, 2))
    z = np.repeat([0, 1], 24).astype(np.uint32)
    np.testing.assert_array_equal(r["b"], (a.astype(np.int64) ** 2).astype(np.uint32) + z)


def test_tensor_outputs_stay_on_the_device_and_chain():
    src = """
@group(0) @binding(0) var<storage, read_write> v: array<f32>;
@compute @workgroup_size(32) fn main(@builtin(global_invocation_id) g: vec3u) { v[g.x] = v[g.x] * 2.0 + 1.0; }
"""
    t = wgc.Tensor(np.arange(32, dtype=np.float32))
    for _ in range(3):
        r = wgc.run(src, outputs={"v": t})
        assert r["v"] is t
    np.testing.assert_array_equal(t.numpy(), ((np.arange(32) * 2 + 1) * 2 + 1) * 2 + 1)


def test_a_wgsl_error_names_line_and_column():
    src = "@group(0) @binding(0) var<storage, read_write> v: array<f32>;\n" \
          "@compute @workgroup_size(1) fn main() {\n" \
          "  v[0] = undefined_thing;\n" \
          "}\n"
    with pytest.raises(wgc.ShaderError) as e:
        wgc.run(src, outputs={"v": ((1,), np.float32)}, label="mine")
    assert e.value.line == 3 and e.value.column == 10
    assert e.value.errors[0][:2] == (3, 10)
    assert "mine:3:10" in str(e.value) and "undefined_thing" in str(e.value)


def test_bad_arguments_are_named():
    out = {"v": ((4,), np.float32)}
    src = "@group(0) @binding(0) var<storage, read_write> v: array<f32>;\n" \
          "@compute @workgroup_size(1) fn main() { v[0] = 1.0; }"
    with pytest.raises(ValueError, match="workgroups must be 1.."):
        wgc.run(src, outputs=out, workgroups=0)
    with pytest.raises(TypeError, match="workgroups"):
        wgc.run(src, outputs=out, workgroups=(1, 1, 1, 1))
    with pytest.raises(TypeError, match="float64"):
        wgc.run(src, inputs={"v": np.zeros(4)})
    with pytest.raises(TypeError, match="float16"):
        wgc.run(src, outputs={"v": ((4,), np.float16)})
    with pytest.raises(TypeError, match=r"params\[1\]"):
        wgc.run(src, outputs=out, params=[1, "two"])
    with pytest.raises(ValueError, match="32 bits"):
        wgc.run(src, outputs=out, params=[2**33])
    with pytest.raises(ValueError, match="both an input and an output"):
        wgc.run(src, inputs={"v": np.zeros(4, np.float32)}, outputs=out)
    with pytest.raises(ValueError, match="nothing to write"):
        wgc.run(src)



def test_buffers_that_do_not_match_the_declarations_are_errors_not_crashes():
    src = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) /* the output */ @binding(1) var<storage, read_write> v: array<f32>;
// @group(0) @binding(2) var<storage, read> commented_out: array<f32>;
@compute @workgroup_size(1) fn main() { v[0] = a[0]; }
"""
    a, out = {"a": np.ones(4, np.float32)}, {"v": ((4,), np.float32)}
    np.testing.assert_array_equal(wgc.run(src, inputs=a, outputs=out)["v"], [1, 0, 0, 0])
    # Too few: Dawn without validation would crash.
    with pytest.raises(ValueError, match=r"declares @group\(0\) @binding\(1\) \(v\), but only 1"):
        wgc.run(src, outputs=out)
    with pytest.raises(ValueError, match="does not declare"):
        wgc.run(src, inputs={"a": a["a"], "b": a["a"]}, outputs=out)
    with pytest.raises(ValueError, match="var<uniform>"):
        wgc.run(src.replace("var<storage, read> a", "var<uniform> a"), inputs=a, outputs=out)
    with pytest.raises(ValueError, match="no function 'go'"):
        wgc.run(src, inputs=a, outputs=out, entry="go")


def test_a_robust_context_runs_a_kernel_that_writes_out_of_bounds():
    src = """
@group(0) @binding(0) var<storage, read_write> v: array<f32>;
@compute @workgroup_size(1) fn main() { for (var i = 0u; i < 4096u; i++) { v[i] = 1.0; } }
"""
    r = wgc.run(src, outputs={"v": ((4,), np.float32)}, ctx=wgc.Context(robust=True))
    np.testing.assert_array_equal(r["v"], np.ones(4, np.float32))
