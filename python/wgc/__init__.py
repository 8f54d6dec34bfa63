"""wgc: WebGPU compute from Python.

Portable WGSL compute kernels, ops on NumPy arrays and GPU tensors, and Llama-family language
models, on Google's Dawn (WebGPU) over Vulkan: a GPU when there is one, SwiftShader on the CPU
otherwise.

    import numpy as np, wgc
    print(wgc.info()["device"])
    c = wgc.matmul(np.ones((64, 32), np.float32), np.ones((32, 16), np.float32))
    t = wgc.Tensor(np.arange(8, dtype=np.float32))     # on the GPU
    print(wgc.map("x * x", t).numpy())                 # stays there until .numpy()
    print(wgc.LLM().generate("The moon", max_tokens=16))
    logits = wgc.cnn.Model("mobilenet_v2.onnx")(x)    # an ONNX image model on float32 NCHW
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from . import _wgc, cnn
from ._ops import add, blur, conv2d, map, matmul, max, mean, min, mul, sobel, sum
from ._run import run
from ._wgc import (Context, DeviceError, DeviceLost, Error, GpuError, LimitError, ShaderError, TextStream, Tensor,
                   default_context)
from .llm import LLM

__version__ = "0.1.0"

__all__ = [
    "Context", "Tensor", "LLM", "cnn", "TextStream", "info", "default_context", "run",
    "matmul", "add", "mul", "map", "sum", "max", "min", "mean", "sobel", "blur", "conv2d",
    "Error", "DeviceError", "DeviceLost", "GpuError", "LimitError", "ShaderError",
]


def info(ctx: Optional[Context] = None) -> Dict[str, Any]:
    """The adapter, backend, features and limits (what `wgc info --json` prints), as a dict."""
    return (ctx or default_context()).info()
