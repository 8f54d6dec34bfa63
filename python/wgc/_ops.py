"""Compute ops on NumPy arrays and wgc.Tensor objects.

Every op takes float32 data. Given NumPy arrays it returns a NumPy array and follows the C++
library's rules for small problems: below each op's threshold (src/ops/thresholds.h; on a CPU
adapter such as SwiftShader, always) the CPU reference runs instead of a device round trip.
``device="gpu"`` or ``device="cpu"`` overrides that choice. Given wgc.Tensor objects it runs on
the device and returns a Tensor (reductions return a float), so a chain of ops never copies
through the host; a NumPy operand next to a Tensor is uploaded first.
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import numpy as np

from . import _wgc
from ._wgc import Context, Tensor

ArrayOrTensor = Union[np.ndarray, Tensor]

_DEVICES = ("auto", "gpu", "cpu")


def _ctx(ctx: Optional[Context], *operands) -> Context:
    """The context to run on: the one given, else a Tensor operand's, else the default one."""
    if ctx is not None:
        if not isinstance(ctx, Context):
            raise TypeError(f"ctx must be a wgc.Context, got {type(ctx).__name__}")
        return ctx
    for x in operands:
        if isinstance(x, Tensor):
            return x.context
    return _wgc.default_context()


def _as_tensor(x, ctx: Context, what: str) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{what} must be a NumPy array or a wgc.Tensor, got {type(x).__name__}")
    if x.dtype != np.float32:
        raise TypeError(f"{what} must be float32, got {x.dtype}")
    return Tensor(x, ctx)


def _check_device(device: str, fn: str) -> None:
    if device not in _DEVICES:
        raise ValueError(f"{fn}: device must be 'auto', 'gpu' or 'cpu', got {device!r}")


def _any_tensor(*xs) -> bool:
    return any(isinstance(x, Tensor) for x in xs)


def matmul(a: ArrayOrTensor, b: ArrayOrTensor, *, trans_b: bool = False, device: str = "auto",
           ctx: Optional[Context] = None) -> ArrayOrTensor:
    """C = A @ B for float32 matrices A [M, K] and B [K, N] (or B [N, K] with trans_b=True).

    NumPy operands: the CPU below the op's FLOP threshold (always on SwiftShader), else the GPU;
    device="gpu"/"cpu" forces one. Tensor operands: the GPU's register-tiled SGEMM ladder.
    """
    _check_device(device, "wgc.matmul")
    c = _ctx(ctx, a, b)
    if _any_tensor(a, b):
        return _wgc.matmul_tensor(_as_tensor(a, c, "wgc.matmul: a"), _as_tensor(b, c, "wgc.matmul: b"),
                                  bool(trans_b))
    return _wgc.matmul_host(c, a, b, bool(trans_b), device)


def add(a: ArrayOrTensor, b: ArrayOrTensor, *, device: str = "auto",
        ctx: Optional[Context] = None) -> ArrayOrTensor:
    """a + b, elementwise, for float32 operands of the same shape."""
    _check_device(device, "wgc.add")
    c = _ctx(ctx, a, b)
    if _any_tensor(a, b):
        return _wgc.add_tensor(_as_tensor(a, c, "wgc.add: a"), _as_tensor(b, c, "wgc.add: b"))
    return _wgc.add_host(c, a, b, device)


def map(expr: str, x: ArrayOrTensor, y: Optional[ArrayOrTensor] = None, *, device: str = "auto",
        ctx: Optional[Context] = None) -> ArrayOrTensor:
    """A WGSL f32 expression in ``x`` (and ``y``) applied elementwise, e.g. ``map("exp(x) * 0.5", a)``
    or ``map("x * y + 1.0", a, b)``.

    The expression may use any WGSL built-in; it must not contain ';', '{' or '}' (ValueError).
    WGSL that does not compile raises wgc.ShaderError with the line and column. On the CPU path
    expressions outside the CPU evaluator's subset run on the device.
    """
    if not isinstance(expr, str):
        raise TypeError(f"wgc.map: expr must be a str, got {type(expr).__name__}")
    _check_device(device, "wgc.map")
    c = _ctx(ctx, x, y)
    if _any_tensor(x, y):
        return _wgc.map_tensor(expr, _as_tensor(x, c, "wgc.map: x"),
                               None if y is None else _as_tensor(y, c, "wgc.map: y"))
    return _wgc.map_host(c, expr, x, y, device)


def mul(a: ArrayOrTensor, b: ArrayOrTensor, *, device: str = "auto",
        ctx: Optional[Context] = None) -> ArrayOrTensor:
    """a * b, elementwise, for float32 operands of the same shape (the binary map "x * y")."""
    return map("x * y", a, b, device=device, ctx=ctx)


def _reduce(op: str, x: ArrayOrTensor, device: str, ctx: Optional[Context]) -> float:
    _check_device(device, "wgc." + op)
    c = _ctx(ctx, x)
    if isinstance(x, Tensor):
        return _wgc.reduce_tensor(op, x)
    return _wgc.reduce_host(c, op, x, device)


def sum(x: ArrayOrTensor, *, device: str = "auto", ctx: Optional[Context] = None) -> float:
    """The sum of all elements (0.0 for an empty array)."""
    return _reduce("sum", x, device, ctx)


def max(x: ArrayOrTensor, *, device: str = "auto", ctx: Optional[Context] = None) -> float:
    """The largest element (ValueError for an empty array)."""
    return _reduce("max", x, device, ctx)


def min(x: ArrayOrTensor, *, device: str = "auto", ctx: Optional[Context] = None) -> float:
    """The smallest element (ValueError for an empty array)."""
    return _reduce("min", x, device, ctx)


def mean(x: ArrayOrTensor, *, device: str = "auto", ctx: Optional[Context] = None) -> float:
    """The mean of all elements (ValueError for an empty array)."""
    return _reduce("mean", x, device, ctx)


def sobel(image: ArrayOrTensor, *, device: str = "auto", ctx: Optional[Context] = None) -> ArrayOrTensor:
    """Sobel edge magnitude sqrt(gx^2 + gy^2) per channel, borders clamped to the edge.

    image: float32 (height, width) or (height, width, channels) with 1..4 interleaved channels;
    the result has its shape.
    """
    _check_device(device, "wgc.sobel")
    c = _ctx(ctx, image)
    if isinstance(image, Tensor):
        return _wgc.stencil_tensor("sobel", image, 0.0)
    return _wgc.stencil_host(c, "sobel", image, 0.0, device)


def blur(image: ArrayOrTensor, sigma: float, *, device: str = "auto",
         ctx: Optional[Context] = None) -> ArrayOrTensor:
    """Separable Gaussian blur of every channel (radius ceil(3 sigma), weights summing to 1, borders
    clamped to the edge). image: as for sobel; sigma >= 0 (0: a copy)."""
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float, np.floating, np.integer)):
        raise TypeError(f"wgc.blur: sigma must be a number, got {type(sigma).__name__}")
    _check_device(device, "wgc.blur")
    c = _ctx(ctx, image)
    if isinstance(image, Tensor):
        return _wgc.stencil_tensor("blur", image, float(sigma))
    return _wgc.stencil_host(c, "blur", image, float(sigma), device)


def _pair(v, name: str) -> Tuple[int, int]:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v), int(v)
    if isinstance(v, Sequence) and len(v) == 2 and all(isinstance(i, (int, np.integer)) for i in v):
        return int(v[0]), int(v[1])
    raise TypeError(f"wgc.conv2d: {name} must be an int or a pair of ints, got {v!r}")


def _padding(v) -> Tuple[int, int, int, int]:
    if isinstance(v, Sequence) and len(v) == 4 and all(isinstance(i, (int, np.integer)) for i in v):
        return int(v[0]), int(v[1]), int(v[2]), int(v[3])
    try:
        h, w = _pair(v, "padding")
    except TypeError:
        raise TypeError("wgc.conv2d: padding must be an int, (h, w) or (top, left, bottom, right), "
                        f"got {v!r}") from None
    return h, w, h, w


def conv2d(x: ArrayOrTensor, w: ArrayOrTensor, bias: Optional[ArrayOrTensor] = None, *,
           stride: Union[int, Tuple[int, int]] = 1,
           padding: Union[int, Tuple[int, int], Tuple[int, int, int, int]] = 0,
           dilation: Union[int, Tuple[int, int]] = 1, groups: int = 1,
           residual: Optional[ArrayOrTensor] = None, activation: Optional[str] = None,
           clip_min: float = 0.0, clip_max: float = 6.0, device: str = "auto",
           ctx: Optional[Context] = None) -> ArrayOrTensor:
    """2-D convolution of float32 NCHW data, as ONNX Conv and torch.nn.functional.conv2d define it,
    with a fused epilogue: y = act(conv(x, w) + bias + residual).

    x [n, c_in, h, w]; w [c_out, c_in / groups, kh, kw]; bias [c_out]; residual like y
    [n, c_out, out_h, out_w]. padding: an int, (h, w) or (top, left, bottom, right).
    activation: None, "relu", "relu6" or "clip" (to [clip_min, clip_max]). NumPy operands: the CPU
    reference below the op's FLOP threshold, else the GPU (Auto picks the kernel by shape).
    """
    _check_device(device, "wgc.conv2d")
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)):
        raise TypeError(f"wgc.conv2d: groups must be an int, got {groups!r}")
    if activation is not None and not isinstance(activation, str):
        raise TypeError(f"wgc.conv2d: activation must be None or a str, got {activation!r}")
    args = (_pair(stride, "stride"), _padding(padding), _pair(dilation, "dilation"), int(groups),
            activation or "none", float(clip_min), float(clip_max))
    c = _ctx(ctx, x, w, bias, residual)
    if _any_tensor(x, w, bias, residual):
        t = lambda v, what: None if v is None else _as_tensor(v, c, "wgc.conv2d: " + what)  # noqa: E731
        return _wgc.conv2d_tensor(t(x, "x"), t(w, "w"), t(bias, "bias"), t(residual, "residual"), *args)
    return _wgc.conv2d_host(c, x, w, bias, residual, *args, device)
