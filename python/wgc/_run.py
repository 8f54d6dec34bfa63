"""wgc.run: one WGSL compute shader, dispatched once."""

from __future__ import annotations

import re
import struct
from typing import Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _wgc
from ._wgc import Context, Tensor

_DTYPES = (np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.uint32))

OutputSpec = Union[Tuple[Union[int, Sequence[int]], object], Tensor]


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# A module-scope variable with its attributes: "@group(0) @binding(1) var<storage, read> x".
_VARIABLE = re.compile(r"((?:@\s*\w+\s*(?:\([^)]*\))?\s*)+)var\s*(?:<\s*(\w+)[^>]*>)?\s*(\w+)")
_ATTRIBUTE = re.compile(r"@\s*(group|binding)\s*\(\s*(\d+)\s*\)")


def _check_interface(wgsl: str, entry: str, names: Sequence[str], has_params: bool) -> None:
    """The buffers given against the shader's @group(0) declarations and its entry point.

    Dawn checks this only on a context with debug=True; elsewhere (validation off, for speed) a
    missing binding would crash the process, so the common mistakes are caught here first.
    """
    src = _COMMENTS.sub(" ", wgsl)
    if not re.search(r"\bfn\s+" + re.escape(entry) + r"\s*\(", src):
        raise ValueError(f"wgc.run: the WGSL has no function {entry!r} (the entry point)")
    declared = {}
    for m in _VARIABLE.finditer(src):
        attrs = dict((k, int(v)) for k, v in _ATTRIBUTE.findall(m.group(1)))
        if attrs.get("group") == 0 and "binding" in attrs:
            declared[attrs["binding"]] = (m.group(2) or "handle", m.group(3))
    wanted = {i: ("storage", n) for i, n in enumerate(names)}
    if has_params:
        wanted[len(names)] = ("uniform", "params")
    for i, (space, name) in sorted(wanted.items()):
        if i not in declared:
            raise ValueError(f"wgc.run: {name!r} binds at @group(0) @binding({i}), which the WGSL does not declare "
                             f"(buffers bind in order: inputs, outputs, then params)")
        if declared[i][0] != space:
            raise ValueError(f"wgc.run: {name!r} binds at @binding({i}) as var<{space}>, but the WGSL declares "
                             f"var<{declared[i][0]}> {declared[i][1]} there")
    for i, (space, var) in sorted(declared.items()):
        if i not in wanted:
            raise ValueError(f"wgc.run: the WGSL declares @group(0) @binding({i}) ({var}), but only {len(wanted)} "
                             f"buffers are given (inputs, outputs, then params)")


def _params_bytes(params) -> bytes:
    """The uniform block: 4-byte words from a NumPy array (float32/int32/uint32), bytes, or a
    sequence of numbers (float -> f32; int -> i32 when negative, else u32)."""
    if params is None:
        return b""
    if isinstance(params, (bytes, bytearray)):
        if len(params) % 4:
            raise ValueError("wgc.run: params bytes must be whole 4-byte words")
        return bytes(params)
    if isinstance(params, np.ndarray):
        if params.dtype not in _DTYPES:
            raise TypeError(f"wgc.run: params must be float32, int32 or uint32, got {params.dtype}")
        return np.ascontiguousarray(params).tobytes()
    if isinstance(params, (int, float)) and not isinstance(params, bool):
        params = [params]
    out = bytearray()
    for i, v in enumerate(params):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"wgc.run: params[{i}] must be a number, got {type(v).__name__}")
        if isinstance(v, (float, np.floating)):
            out += struct.pack("<f", float(v))
        elif -(2**31) <= v < 0:
            out += struct.pack("<i", int(v))
        elif 0 <= v < 2**32:
            out += struct.pack("<I", int(v))
        else:
            raise ValueError(f"wgc.run: params[{i}] = {v} does not fit 32 bits")
    return bytes(out)


def _groups(workgroups) -> Tuple[int, int, int]:
    if isinstance(workgroups, (int, np.integer)) and not isinstance(workgroups, bool):
        workgroups = (int(workgroups),)
    try:
        g = tuple(workgroups)
    except TypeError:
        raise TypeError(f"wgc.run: workgroups must be an int or up to 3 ints, got {workgroups!r}") from None
    if not 1 <= len(g) <= 3 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in g):
        raise TypeError(f"wgc.run: workgroups must be an int or up to 3 ints, got {workgroups!r}")
    return tuple(int(v) for v in g) + (1,) * (3 - len(g))  # type: ignore[return-value]


def run(wgsl: str, inputs: Optional[Mapping[str, Union[np.ndarray, Tensor]]] = None,
        outputs: Optional[Mapping[str, OutputSpec]] = None,
        workgroups: Union[int, Sequence[int]] = 1, params=None, *, entry: str = "main",
        constants: Optional[Mapping[str, float]] = None, label: str = "kernel",
        ctx: Optional[Context] = None) -> Dict[str, Union[np.ndarray, Tensor]]:
    """Compiles a WGSL compute shader (cached per context) and dispatches it once.

    Buffers bind to @group(0) in order: the inputs at @binding(0..), then the outputs, then, when
    params is given, a uniform block at the next binding. inputs: name -> NumPy array (float32,
    int32, uint32; uploaded) or wgc.Tensor (bound as it is). outputs: name -> (shape, dtype), made
    and zero-filled, read back as NumPy arrays; or name -> wgc.Tensor, written in place and
    returned as that Tensor. workgroups: (x, y, z) counts (an int or fewer values: the rest 1).
    params: a NumPy array, bytes, or numbers (float -> f32, int -> u32 or i32 when negative) for
    a `var<uniform>` struct of 4-byte fields. constants: values of WGSL `override` declarations.
    The buffers must match the shader's @group(0) declarations (ValueError otherwise). Kernels
    run as written: one that indexes past a buffer is undefined behaviour (it can crash the
    process) unless the context was made with robust=True; debug=True adds Dawn's validation.

    WGSL that does not compile raises wgc.ShaderError; its .line and .column locate the first
    error (label names the shader in the message).
    """
    if not isinstance(wgsl, str):
        raise TypeError(f"wgc.run: wgsl must be a str, got {type(wgsl).__name__}")
    if ctx is not None and not isinstance(ctx, Context):
        raise TypeError(f"wgc.run: ctx must be a wgc.Context, got {type(ctx).__name__}")
    inputs = dict(inputs or {})
    outputs = dict(outputs or {})
    if not inputs and not outputs:
        raise ValueError("wgc.run: no inputs and no outputs: the shader would have nothing to write")
    clash = set(inputs) & set(outputs)
    if clash:
        raise ValueError(f"wgc.run: {sorted(clash)} named as both an input and an output")
    if ctx is None:
        given = [t for t in list(inputs.values()) + list(outputs.values()) if isinstance(t, Tensor)]
        ctx = given[0].context if given else _wgc.default_context()
    groups = _groups(workgroups)
    words = _params_bytes(params)
    consts = []
    for k, v in (constants or {}).items():
        if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"wgc.run: constants map names to numbers, got {k!r}: {v!r}")
        consts.append((k, float(v)))

    _check_interface(wgsl, entry, list(inputs) + list(outputs), bool(words))
    args = []
    for name, x in inputs.items():
        if isinstance(x, Tensor):
            args.append(x)
        elif isinstance(x, np.ndarray):
            args.append(Tensor(x, ctx))
        else:
            raise TypeError(f"wgc.run: input {name!r} must be a NumPy array or a wgc.Tensor, got {type(x).__name__}")
    made = {}
    for name, spec in outputs.items():
        if isinstance(spec, Tensor):
            args.append(spec)
            continue
        if not (isinstance(spec, tuple) and len(spec) == 2):
            raise TypeError(f"wgc.run: output {name!r} must be (shape, dtype) or a wgc.Tensor, got {spec!r}")
        shape, dtype = spec
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"wgc.run: output {name!r}: {dtype!r} is not a dtype") from None
        if dt not in _DTYPES:
            raise TypeError(f"wgc.run: output {name!r} must be float32, int32 or uint32, got {dt}")
        t = Tensor.zeros(shape, dt, ctx)
        made[name] = t
        args.append(t)

    _wgc.run_kernel(ctx, wgsl, entry, label, consts, args, words, groups)
    return {name: (made[name].numpy() if name in made else spec) for name, spec in outputs.items()}
