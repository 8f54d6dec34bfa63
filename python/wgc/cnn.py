"""wgc.cnn: ONNX image models (MobileNet, ResNet, SqueezeNet, ShuffleNet, EfficientNet-style graphs)
on float32 NCHW NumPy arrays."""

from __future__ import annotations

import os
from typing import List, Optional, Tuple, Union

import numpy as np

from . import _wgc
from ._wgc import Context

__all__ = ["Model", "imagenet_input", "imagenet_classes", "top_k"]


class Model:
    """An ONNX model loaded once and run on NumPy arrays.

    Model(path, *, device="auto", ctx=None)

    At load the graph is read and rewritten (BatchNorm folded, residual Add and Relu/Clip fused
    into the convolutions); per input shape a plan is made once and kept. Each call uploads the
    inputs, records the whole network into one submit and reads the outputs back. device: "auto"
    (the GPU, except on a CPU adapter such as SwiftShader and for tiny plans, where the CPU
    references are faster), "gpu" or "cpu".

        m = wgc.cnn.Model("mobilenet_v2.onnx")
        logits = m(x)                      # x: float32 [n, 3, 224, 224] -> [n, 1000]
    """

    def __init__(self, path: Union[str, os.PathLike], *, device: str = "auto",
                 ctx: Optional[Context] = None) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"wgc.cnn.Model: path must be a path, got {type(path).__name__}")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"wgc.cnn.Model: no model file {os.fspath(path)!r}")
        if not isinstance(device, str):
            raise TypeError(f"wgc.cnn.Model: device must be a str, got {type(device).__name__}")
        if ctx is not None and not isinstance(ctx, Context):
            raise TypeError(f"wgc.cnn.Model: ctx must be a wgc.Context, got {type(ctx).__name__}")
        self.path = os.fspath(path)
        self._m = _wgc.CnnModel(ctx or _wgc.default_context(), self.path, device)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The model's first output for its only input."""
        if len(self.inputs) != 1:
            raise ValueError(f"wgc.cnn.Model: the model takes {len(self.inputs)} inputs: use run()")
        return self.run(x)[0]

    def run(self, *inputs: np.ndarray) -> List[np.ndarray]:
        """Every output for one array per input (float32; int64 for integer inputs), in the
        graph's order."""
        return self._m.run(list(inputs))

    def on_gpu(self, *inputs: np.ndarray) -> bool:
        """Whether a run with these inputs goes to the GPU."""
        return self._m.on_gpu(list(inputs))

    @property
    def inputs(self) -> List[Tuple[str, str, Optional[Tuple[Optional[int], ...]]]]:
        """(name, element type, shape) of each input; None marks a dimension the file leaves open."""
        return self._m.inputs

    @property
    def outputs(self) -> List[Tuple[str, str, Optional[Tuple[Optional[int], ...]]]]:
        return self._m.outputs

    def __repr__(self) -> str:
        return f"wgc.cnn.Model({self.path!r})"


def imagenet_input(image: Union[str, os.PathLike, np.ndarray]) -> np.ndarray:
    """torchvision's ImageNet preprocessing (Resize 256, CenterCrop 224, Normalize) of an image
    file (PNG, JPEG) or a uint8 array (height, width[, channels]): float32 [1, 3, 224, 224]."""
    return _wgc.imagenet_input(image)


def imagenet_classes() -> List[str]:
    """The 1000 ILSVRC-2012 class names in the usual order (empty when this build has none)."""
    return _wgc.imagenet_classes()


def top_k(logits: np.ndarray, k: int = 5) -> List[Tuple[int, float, str]]:
    """The k best classes of one row of float32 logits: (index, softmax probability, label)."""
    return _wgc.top_k(np.asarray(logits).reshape(-1), int(k))
