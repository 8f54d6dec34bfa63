#!/usr/bin/env python3
"""Exports torchvision image classifiers to ONNX with seeded random weights, plus PyTorch's float64
reference logits, for wgc's model tests (tests/test_cnn_model.cpp, WGC_CNN_MODELS) and benchmarks.

Runs where torch, torchvision and onnx are installed (the GPU machine: torch 2.11, torchvision
0.26, onnx, onnxruntime 1.30). For each model NAME it writes into --out:
  NAME.onnx          torch.onnx.export (TorchScript exporter, dynamo=False), input 'input'
                     float32 [N,3,224,224] with a dynamic batch, output 'logits' [N,1000]
  NAME.input.npy     float32 [2,3,224,224], N(0,1) (torch.Generator seed 99)
  NAME.logits.npy    float32 [2,1000], the model run in float64 on that input
  NAME.json          how it was made, input_sensitivity (max |logits[0]-logits[1]| / max |logits|),
                     and ONNX Runtime's error against the float64 logits where onnxruntime exists
Random-init networks give logits that hardly depend on the input; BatchNorm statistics are first
calibrated on random batches (train mode, cumulative averages) so activations keep unit scale, as
for ../shared/fixtures/mobilenet_v2_035.

  python3 scripts/export_cnn_models.py --out /tmp/cnn_models                 # every model
  python3 scripts/export_cnn_models.py --out /tmp/m --models mobilenet_v2     # one
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torchvision

# name -> (constructor, opset). Opset 13 as the fixture; 17 where the model has HardSwish /
# HardSigmoid (exported as such from opset 14) or to cover the newer forms of Split / ReduceMean.
MODELS = {
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), 13),
    "mobilenet_v2_035": (lambda: torchvision.models.mobilenet_v2(weights=None, width_mult=0.35), 13),
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), 13),
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), 17),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(weights=None), 13),
    "shufflenet_v2_x0_5": (lambda: torchvision.models.shufflenet_v2_x0_5(weights=None), 13),
    "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(weights=None), 17),
    "mobilenet_v3_large": (lambda: torchvision.models.mobilenet_v3_large(weights=None), 17),
    "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(weights=None), 17),
}
DEFAULT = ["mobilenet_v2", "resnet18", "squeezenet1_1", "shufflenet_v2_x0_5", "mobilenet_v3_small", "efficientnet_b0"]


def calibrate_batchnorm(model, batches=8, batch=16, seed=7):
    """BatchNorm running statistics from random inputs (cumulative average over the batches)."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch, 3, 224, 224, generator=g))
    model.eval()


def export(name, out, seed):
    make, opset = MODELS[name]
    torch.manual_seed(seed)
    model = make()
    calibrate_batchnorm(model)
    x = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(99))
    path = os.path.join(out, name + ".onnx")
    torch.onnx.export(model, x[:1], path, input_names=["input"], output_names=["logits"], opset_version=opset,
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, do_constant_folding=True, dynamo=False)
    with torch.no_grad():
        ref = model.double()(x.double()).numpy()
        f32 = model.float()(x).numpy()
    np.save(os.path.join(out, name + ".input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(out, name + ".logits.npy"), ref.astype(np.float32))
    scale = np.abs(ref).max()
    info = {
        "model": f"torchvision {name}(weights=None), seed {seed}, BatchNorm calibrated on random batches",
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "opset": opset,
        "input": "float32 [2,3,224,224], N(0,1), torch.Generator seed 99",
        "logits": "float32 [2,1000] computed in float64",
        "input_sensitivity": float(np.abs(ref[0] - ref[1]).max() / scale),
        "float32_vs_float64_max_rel": float(np.abs(f32 - ref).max() / scale),
        "onnx_bytes": os.path.getsize(path),
        "top5": [np.argsort(-r)[:5].tolist() for r in ref],
    }
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = sess.run(None, {"input": x.numpy()})[0]
        info["onnxruntime_vs_float64_max_rel"] = float(np.abs(got - ref).max() / scale)
    except ImportError:
        pass
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(info, f, indent=1)
    print(f"{name}: {info['onnx_bytes'] / 1e6:.1f} MB, opset {opset}, input sensitivity "
          f"{info['input_sensitivity']:.3f}, ORT error {info.get('onnxruntime_vs_float64_max_rel', float('nan')):.2e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the files (created)")
    ap.add_argument("--models", default=",".join(DEFAULT), help="comma-separated: " + ", ".join(MODELS))
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.models.split(","):
        if name not in MODELS:
            sys.exit(f"unknown model '{name}' ({', '.join(MODELS)})")
        export(name, a.out, a.seed)


if __name__ == "__main__":
    main()
