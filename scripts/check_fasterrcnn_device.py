#!/usr/bin/env python3
"""Faster R-CNN (torchvision fasterrcnn_mobilenet_v3_large_320_fpn, weights=None, seeded random
weights, BatchNorm calibrated on random batches) exported to ONNX (opset 17, its If / RoiAlign /
NonZero / NonMaxSuppression / ScatterElements as PyTorch writes them), run by `wgc infer` on the GPU
path (a graph run in stages: docs/cnn.md), and its boxes, scores and labels compared with PyTorch
float64's; PyTorch float32 and ONNX Runtime (CPU) beside it against the same reference, so that a
difference that float32 itself makes (a proposal swapped at the top-k or NMS boundary) is told
apart from a wgc error. Run on the GPU machine (torch, torchvision, onnx, onnxruntime there; no
network): scripts/check_fasterrcnn_device.sh, within 120 s.

  python3 scripts/check_fasterrcnn_device.py --wgc /tmp/wgc/bin/wgc --out /tmp/out/fasterrcnn
  (--model ssdlite: torchvision's SSDLite320 with its post-processing, the same way)
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_dense_models as edm  # noqa: E402


def make(name, classes, seed):
    torch.manual_seed(seed)
    if name == "ssdlite":  # the whole SSD export, its post-processing included (If, NonZero, GatherND, TopK)
        m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                       num_classes=classes)
        edm.calibrate_detector(m, 320, 320)
        return m.eval()
    m = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None,
                                                                           num_classes=classes)
    edm.calibrate_detector(m, 320, 320)
    with torch.no_grad():  # class logits spread wide enough that some boxes pass the 0.05 score threshold
        m.roi_heads.box_predictor.cls_score.weight.mul_(8)
    return m.eval()


def run_torch(model, x, double):
    m = edm.DetectOne(model).eval()
    m = m.double() if double else m.float()
    with torch.no_grad():
        out = m(x.double() if double else x)
    model.float()
    return [o.detach().numpy() for o in out]


def iou(a, b):
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def compare(got, ref):
    """How detections got = (boxes, scores, labels) agree with ref."""
    gb, gs, gl = [np.asarray(v, dtype=np.float64) for v in got]
    rb, rs, rl = [np.asarray(v, dtype=np.float64) for v in ref]
    r = {"count": int(len(gs)), "ref_count": int(len(rs))}
    if len(gs) == len(rs):
        r["labels_equal"] = bool(np.array_equal(gl, rl))
        if len(rs):
            r["box_rel_err"] = float(np.abs(gb - rb).max() / max(np.abs(rb).max(), 1e-30))
            r["score_abs_err"] = float(np.abs(gs - rs).max())
    used, matched = set(), 0
    for i in range(len(rs)):  # each reference detection: one of got's with its label, IoU > 0.99, score within 1e-3
        for j in range(len(gs)):
            if j not in used and gl[j] == rl[i] and abs(gs[j] - rs[i]) < 1e-3 and iou(gb[j], rb[i]) > 0.99:
                used.add(j)
                matched += 1
                break
    r["matched"] = matched
    r["equal"] = bool(r.get("labels_equal") and r.get("box_rel_err", 0) <= 1e-3 and r.get("score_abs_err", 0) <= 1e-4)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wgc", default="/tmp/wgc/bin/wgc")
    ap.add_argument("--out", default="/tmp/out/fasterrcnn")
    ap.add_argument("--model", choices=["fasterrcnn", "ssdlite"], default="fasterrcnn")
    ap.add_argument("--classes", type=int, default=91)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--device", default="gpu", help="wgc's --device (gpu, cpu, auto)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    model = make(a.model, a.classes, a.seed)
    x = edm.images((1, 3, 320, 320)) * 0.25 + 0.5
    path = os.path.join(a.out, a.model + ".onnx")
    torch.onnx.export(edm.DetectOne(model), (x,), path, input_names=["image"], output_names=["boxes", "scores", "labels"],
                      opset_version=edm.OPSET, do_constant_folding=True, dynamo=False)
    np.save(os.path.join(a.out, "image.npy"), x.numpy().astype(np.float32))
    full = {"fasterrcnn": "fasterrcnn_mobilenet_v3_large_320_fpn", "ssdlite": "ssdlite320_mobilenet_v3_large"}
    report = {"model": f"{full[a.model]}, {a.classes} classes, seed {a.seed}",
              "torch": torch.__version__, "torchvision": torchvision.__version__, "opset": edm.OPSET,
              "ops": edm.op_histogram(path), "export_s": round(time.time() - t0, 1)}
    ref = run_torch(model, x, True)
    peers = {"pytorch_float32": run_torch(model, x, False)}
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        peers["onnxruntime"] = sess.run(None, {"image": x.numpy().astype(np.float32)})
    except Exception as e:  # noqa: BLE001
        report["onnxruntime_error"] = repr(e)[:500]
    got = []
    t1 = time.time()
    for name in ("boxes", "scores", "labels"):
        f = os.path.join(a.out, f"wgc_{name}.npy")
        p = subprocess.run([a.wgc, "infer", "--model", path, "--input", os.path.join(a.out, "image.npy"), "--out", f,
                            "--output", name, "--force", "--device", a.device], capture_output=True, text=True)
        if p.returncode != 0:
            report["wgc_error"] = (p.stderr or p.stdout)[-2000:]
            break
        got.append(np.load(f))
    report["wgc_infer_s"] = round(time.time() - t1, 1)
    report["reference_detections"] = int(len(ref[1]))
    report["vs_float64"] = {k: compare(v, ref) for k, v in peers.items()}
    if len(got) == 3:
        report["vs_float64"]["wgc"] = compare(got, ref)
        report["wgc_vs_onnxruntime"] = compare(got, peers["onnxruntime"]) if "onnxruntime" in peers else None
    w = report["vs_float64"].get("wgc")
    # wgc passes when it equals float64 (counts, labels, boxes 1e-3, scores 1e-4), or agrees with it
    # at least as well as PyTorch's own float32 run does (float32 moving a proposal across a boundary).
    p32 = report["vs_float64"]["pytorch_float32"]
    report["pass"] = bool(w and (w["equal"] or (w["matched"] >= p32["matched"] and w["count"] == p32["count"])))
    with open(os.path.join(a.out, a.model + ".json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "ops"}, indent=1))
    print("ops:", dict(collections.OrderedDict(sorted(report["ops"].items()))) if isinstance(report["ops"], dict) else "")
    print(f"{a.model}:", "PASS" if report["pass"] else "FAIL", f"({time.time() - t0:.0f} s)")
    sys.exit(0 if report["pass"] else 1)


if __name__ == "__main__":
    main()
