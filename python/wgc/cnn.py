"""wgc.cnn: ONNX models on NumPy arrays: image classifiers, segmentation (LRASPP, DeepLabV3, FCN),
SSD-style detection, super-resolution (ESPCN), U-Nets, ViT and BERT-style encoders (integer ids and
masks as int64 arrays)."""

from __future__ import annotations

import os
from typing import List, Optional, Tuple, Union

import numpy as np

from . import _wgc
from ._wgc import Context

__all__ = ["Model", "imagenet_input", "imagenet_classes", "top_k", "read_image", "segment", "detect", "upscale",
           "draw_detections", "class_colour"]

Image = Union[str, os.PathLike, np.ndarray]


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
        """Every output for one array per input (float32; any integer or bool array for integer
        inputs such as token ids and masks), in the graph's order."""
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


def read_image(image: Image) -> np.ndarray:
    """An image file (PNG, JPEG) as a uint8 array (height, width, channels); arrays pass through."""
    return _wgc.read_image(image)


def class_colour(c: int) -> Tuple[int, int, int]:
    """The colour segment() paints class c with (the PASCAL VOC palette; class 0 black)."""
    return tuple(_wgc.class_colour(int(c)))


def segment(model: Model, image: Image, *, size: int = 520,
            alpha: float = 0.5) -> Tuple[np.ndarray, np.ndarray]:
    """Semantic segmentation with a model of [1, 3, h, w] -> [1, classes, h, w] logits (torchvision's
    LRASPP, DeepLabV3, FCN): the image's shorter side scaled to `size` with ImageNet statistics, as
    torchvision's preset. Returns the class of each pixel of the model's map (int32 (h, w)) and the
    image with the classes coloured over it (uint8, the image's size; class 0 left as it is)."""
    img = _wgc.read_image(image)
    h, w = img.shape[:2]
    s = size / min(h, w)
    x = _wgc.image_tensor(img, max(1, round(w * s)), max(1, round(h * s)), [0.485, 0.456, 0.406],
                          [0.229, 0.224, 0.225])
    classes = _wgc.class_map(model(x))
    return classes, _wgc.overlay_classes(img, classes, float(alpha))


def detect(model: Model, image: Image, anchors: np.ndarray, *, score: float = 0.3, iou: float = 0.55,
           size: int = 320, mean: float = 0.5, std: float = 0.5, max_detections: int = 100,
           topk_candidates: int = 300) -> List[dict]:
    """Object detection with an SSD-style model (box regressions [1, anchors, 4] and class logits
    [1, anchors, classes]; torchvision's SSD / SSDLite without its post-processing) and its anchors
    ([anchors, 4] corners): the image scaled to size x size, (pixel - mean) / std; torchvision's
    decoding, per-class top-k and NMS. Detections scoring at least `score`, best first, boxes in the
    image's pixels: [{"label", "score", "box": (x1, y1, x2, y2)}]."""
    img = _wgc.read_image(image)
    h, w = img.shape[:2]
    x = _wgc.image_tensor(img, size, size, [mean] * 3, [std] * 3)
    out = model.run(x)
    if len(out) < 2:
        raise ValueError("wgc.cnn.detect: the model gives one output; box regressions and class logits are needed")
    anchors = np.ascontiguousarray(anchors, np.float32)
    # torchvision's settings (score above 0.001 before NMS, 300 per image), then the caller's cut.
    dets = _wgc.ssd_postprocess(out[0], out[1], anchors, 0.001, float(iou), int(topk_candidates),
                                max(300, int(max_detections)), float(size), float(size))
    sx, sy = w / size, h / size
    r = []
    for label, s, (x1, y1, x2, y2) in dets:
        if s >= score and len(r) < max_detections:
            r.append({"label": label, "score": s, "box": (x1 * sx, y1 * sy, x2 * sx, y2 * sy)})
    return r


def draw_detections(image: Image, detections: List[dict]) -> np.ndarray:
    """The image (uint8 RGB) with each detection's box outlined in its class's colour, its class
    number above it."""
    return _wgc.draw_detections(image, [(d["label"], d["score"], tuple(d["box"])) for d in detections])


def upscale(model: Model, image: Image) -> np.ndarray:
    """Super-resolution with a model of [1, c, h, w] in [0, 1] -> [1, c, h r, w r]: c = 1 runs on the
    luma of YCbCr (ESPCN; the chroma scaled bilinearly), c = 3 on RGB. Returns uint8 (h r, w r, 3)."""
    return model._m.upscale(image)
