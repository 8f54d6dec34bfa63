"""The ops against NumPy references written here, on random data at awkward sizes, on every path:
NumPy operands with the threshold's choice ("auto"), forced onto the device ("gpu") or the CPU
("cpu"), and wgc.Tensor operands (always the device)."""

import numpy as np
import pytest

import wgc
from conftest import rel_error

PATHS = ["auto", "gpu", "cpu", "tensor"]


def call(fn, path, *arrays, **kw):
    """fn on NumPy arrays with device=path, or on Tensors of them (the result read back)."""
    if path == "tensor":
        r = fn(*[None if a is None else wgc.Tensor(a) for a in arrays], **kw)
        return r.numpy() if isinstance(r, wgc.Tensor) else r
    return fn(*arrays, device=path, **kw)


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- matmul and elementwise ------------------------------------------------------------------

@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (37, 29, 43), (64, 130, 5)])
def test_matmul(path, m, k, n, rng):
    a, b = randn(rng, m, k), randn(rng, k, n)
    want = a.astype(np.float64) @ b
    assert rel_error(call(wgc.matmul, path, a, b), want) < 1e-5
    assert rel_error(call(wgc.matmul, path, a, np.ascontiguousarray(b.T), trans_b=True), want) < 1e-5


def test_matmul_bad_arguments(rng):
    a = randn(rng, 4, 3)
    with pytest.raises(ValueError, match="do not chain"):
        wgc.matmul(a, a)
    with pytest.raises(ValueError, match="2-D"):
        wgc.matmul(a, np.ones(3, np.float32))
    with pytest.raises(TypeError, match="float32, got float64"):
        wgc.matmul(a, np.ones((3, 2)))
    with pytest.raises(TypeError, match="NumPy array"):
        wgc.matmul(a, [[1.0], [2.0], [3.0]])
    with pytest.raises(TypeError, match="float32, got int32"):
        wgc.matmul(wgc.Tensor(a), wgc.Tensor(np.ones((3, 2), np.int32)))
    with pytest.raises(ValueError, match="device must be"):
        wgc.matmul(a, a.T.copy(), device="tpu")


@pytest.mark.parametrize("path", PATHS)
def test_add_mul_map(path, rng):
    a, b = randn(rng, 7, 131), randn(rng, 7, 131)  # 917 elements: not a multiple of 4 or a workgroup
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert rel_error(call(wgc.add, path, a, b), a64 + b64) < 1e-6
    assert rel_error(call(wgc.mul, path, a, b), a64 * b64) < 1e-6
    got = call(lambda x, **kw: wgc.map("exp(x) * 0.5 - abs(x)", x, **kw), path, a)
    assert got.shape == a.shape
    assert rel_error(got, np.exp(a64) * 0.5 - np.abs(a64)) < 1e-5
    got = call(lambda x, y, **kw: wgc.map("max(x, y) * y + 1.0", x, y, **kw), path, a, b)
    assert rel_error(got, np.maximum(a64, b64) * b64 + 1.0) < 1e-5


def test_elementwise_bad_arguments(rng):
    a = randn(rng, 10)
    with pytest.raises(ValueError, match=r"shapes differ: \(10,\) and \(2, 5\)"):
        wgc.add(a, a.reshape(2, 5))
    with pytest.raises(ValueError, match="shapes differ"):
        wgc.mul(wgc.Tensor(a), wgc.Tensor(a[:9].copy()))
    with pytest.raises(ValueError, match="wgc.map: map expression 'x; y' contains ';'"):
        wgc.map("x; y", a)
    with pytest.raises(wgc.ShaderError) as e:
        wgc.map("x + nonsense(x)", a, device="gpu")
    assert e.value.line is not None and e.value.column is not None
    with pytest.raises(TypeError, match="expr must be a str"):
        wgc.map(a, a)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n", [1, 1000, 70001])
def test_reductions(path, n, rng):
    x = randn(rng, n) + 0.25
    x64 = x.astype(np.float64)
    assert abs(call(wgc.sum, path, x) - x64.sum()) <= 1e-5 * np.abs(x64).sum()
    assert abs(call(wgc.mean, path, x) - x64.mean()) <= 1e-5 * np.abs(x64).mean()
    assert call(wgc.max, path, x) == x.max()
    assert call(wgc.min, path, x) == x.min()


def test_reductions_of_empty_arrays():
    e = np.zeros(0, np.float32)
    assert wgc.sum(e) == 0.0
    with pytest.raises(ValueError, match="empty"):
        wgc.max(e)


def test_a_chain_stays_on_the_device(rng, ctx):
    a, b = randn(rng, 33, 65), randn(rng, 65, 17)
    ta, tb = wgc.Tensor(a), wgc.Tensor(b)
    h = wgc.map("max(x, 0.0)", wgc.matmul(ta, tb))  # relu(a @ b): Tensor in, Tensor out
    h = wgc.add(h, h)
    assert isinstance(h, wgc.Tensor) and h.shape == (33, 17)
    want = 2 * np.maximum(a.astype(np.float64) @ b, 0)
    assert rel_error(h.numpy(), want) < 1e-5
    assert abs(wgc.sum(h) - want.sum()) < 1e-4 * np.abs(want).sum()
    # A NumPy operand beside a Tensor is uploaded; the result stays a Tensor.
    assert isinstance(wgc.add(h, np.ones((33, 17), np.float32)), wgc.Tensor)


# ---- stencils ---------------------------------------------------------------------------------

def sobel_ref(img):
    img = img.astype(np.float64)
    if img.ndim == 2:
        img = img[:, :, None]
    p = np.pad(img, ((1, 1), (1, 1), (0, 0)), mode="edge")
    h, w = img.shape[:2]
    s = lambda dy, dx: p[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]  # noqa: E731
    gx = (s(-1, 1) + 2 * s(0, 1) + s(1, 1)) - (s(-1, -1) + 2 * s(0, -1) + s(1, -1))
    gy = (s(1, -1) + 2 * s(1, 0) + s(1, 1)) - (s(-1, -1) + 2 * s(-1, 0) + s(-1, 1))
    return np.sqrt(gx * gx + gy * gy)


def blur_ref(img, sigma):
    img = img.astype(np.float64)
    if img.ndim == 2:
        img = img[:, :, None]
    r = int(np.ceil(3 * sigma))
    k = np.exp(-np.arange(-r, r + 1) ** 2 / (2 * sigma * sigma))
    k /= k.sum()
    h, w = img.shape[:2]
    p = np.pad(img, ((0, 0), (r, r), (0, 0)), mode="edge")
    img = sum(k[i] * p[:, i:i + w] for i in range(2 * r + 1))
    p = np.pad(img, ((r, r), (0, 0), (0, 0)), mode="edge")
    return sum(k[i] * p[i:i + h] for i in range(2 * r + 1))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("shape", [(1, 1), (13, 37), (21, 30, 3), (9, 70, 4)])
def test_sobel_and_blur(path, shape, rng):
    img = rng.random(shape, dtype=np.float32)
    got = call(wgc.sobel, path, img)
    assert got.shape == img.shape
    assert rel_error(got, sobel_ref(img).reshape(img.shape)) < 1e-5
    got = call(wgc.blur, path, img, sigma=1.7)
    assert got.shape == img.shape
    assert rel_error(got, blur_ref(img, 1.7).reshape(img.shape)) < 1e-5


def test_stencil_bad_arguments(rng):
    with pytest.raises(ValueError, match="height, width"):
        wgc.sobel(np.zeros(5, np.float32))
    with pytest.raises(ValueError, match="1..4 channels"):
        wgc.sobel(np.zeros((4, 4, 5), np.float32))
    with pytest.raises(ValueError, match="sigma"):
        wgc.blur(np.zeros((4, 4), np.float32), -1.0)
    with pytest.raises(TypeError, match="sigma must be a number"):
        wgc.blur(np.zeros((4, 4), np.float32), "2")


# ---- convolution ------------------------------------------------------------------------------

def conv_ref(x, w, bias, residual, stride, pad, dil, groups, act, clip=(0.0, 6.0)):
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c_in, h, wd = x.shape
    c_out, cpg, kh, kw = w.shape
    top, left, bottom, right = pad
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh = (h + top + bottom - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + left + right - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((n, c_out, oh, ow))
    opg = c_out // groups
    for g in range(groups):
        xs = xp[:, g * cpg:(g + 1) * cpg]
        for r in range(kh):
            for s in range(kw):
                patch = xs[:, :, r * dil[0]:r * dil[0] + stride[0] * (oh - 1) + 1:stride[0],
                           s * dil[1]:s * dil[1] + stride[1] * (ow - 1) + 1:stride[1]]
                y[:, g * opg:(g + 1) * opg] += np.einsum("nchw,oc->nohw", patch, w[g * opg:(g + 1) * opg, :, r, s])
    if bias is not None:
        y += bias.astype(np.float64)[None, :, None, None]
    if residual is not None:
        y += residual
    if act == "relu":
        y = np.maximum(y, 0)
    elif act == "relu6":
        y = np.clip(y, 0, 6)
    elif act == "clip":
        y = np.clip(y, *clip)
    return y


CONVS = [  # (n, c_in, h, w, c_out, kh, kw, stride, padding (t, l, b, r), dilation, groups, bias, residual, act)
    (1, 3, 17, 13, 8, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, True, False, None),
    (2, 4, 11, 19, 6, 3, 2, (2, 1), (0, 1, 2, 0), (2, 1), 2, True, True, "relu6"),
    (1, 6, 15, 15, 6, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 6, False, False, "relu"),  # depthwise
    (2, 5, 9, 7, 7, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, True, True, "clip"),  # pointwise
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", range(len(CONVS)))
def test_conv2d(path, case, rng):
    n, c_in, h, w, c_out, kh, kw, stride, pad, dil, groups, has_bias, has_res, act = CONVS[case]
    x, wt = randn(rng, n, c_in, h, w), randn(rng, c_out, c_in // groups, kh, kw)
    bias = randn(rng, c_out) if has_bias else None
    want_no_res = conv_ref(x, wt, bias, None, stride, pad, dil, groups, None)
    res = randn(rng, *want_no_res.shape) if has_res else None
    want = conv_ref(x, wt, bias, res, stride, pad, dil, groups, act, (-0.5, 0.75))
    kw_args = dict(stride=stride, padding=pad, dilation=dil, groups=groups, activation=act, clip_min=-0.5,
                   clip_max=0.75)
    if path == "tensor":
        t = lambda a: None if a is None else wgc.Tensor(a)  # noqa: E731
        got = wgc.conv2d(t(x), t(wt), t(bias), residual=t(res), **kw_args).numpy()
    else:
        got = wgc.conv2d(x, wt, bias, residual=res, device=path, **kw_args)
    assert got.shape == want.shape
    assert rel_error(got, want) < 1e-5


def test_conv2d_padding_forms(rng):
    x, w = randn(rng, 1, 2, 6, 5), randn(rng, 3, 2, 3, 3)
    want = conv_ref(x, w, None, None, (1, 1), (1, 2, 1, 2), (1, 1), 1, None)
    assert rel_error(wgc.conv2d(x, w, padding=(1, 2)), want) < 1e-5


def test_conv2d_bad_arguments(rng):
    x, w = randn(rng, 1, 4, 8, 8), randn(rng, 6, 4, 3, 3)
    with pytest.raises(ValueError, match=r"x must be \[n, c_in, h, w\]"):
        wgc.conv2d(x[0], w)
    with pytest.raises(ValueError, match="c_in / groups"):
        wgc.conv2d(x, w, groups=2)
    with pytest.raises(ValueError, match=r"bias must have shape \(6,\)"):
        wgc.conv2d(x, w, np.zeros(5, np.float32))
    with pytest.raises(ValueError, match="residual must have the output's shape"):
        wgc.conv2d(x, w, residual=np.zeros((1, 6, 8, 8), np.float32))
    with pytest.raises(ValueError, match="activation"):
        wgc.conv2d(x, w, activation="gelu")
    with pytest.raises(ValueError, match="stride"):
        wgc.conv2d(x, w, stride=0)
    with pytest.raises(TypeError, match="padding"):
        wgc.conv2d(x, w, padding="same")
    with pytest.raises(ValueError):  # a kernel larger than the padded input
        wgc.conv2d(randn(rng, 1, 4, 2, 2), w)
    with pytest.raises(TypeError, match="float32, got float64"):
        wgc.conv2d(x.astype(np.float64), w)
