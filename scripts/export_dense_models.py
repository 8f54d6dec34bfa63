#!/usr/bin/env python3
"""Exports segmentation, detection, upsampling and transformer-encoder models to ONNX with seeded
random weights, plus PyTorch's float64 reference outputs, for wgc's end-to-end tests
(tests/test_dense_models.cpp: the CI-sized variants live in tests/data/dense; WGC_DENSE_MODELS=DIR
checks a folder of full-size ones) and benchmarks.

Runs where torch, torchvision, onnx (and optionally onnxruntime, transformers) are installed: the
GPU machine (torch 2.11, torchvision 0.26). No downloads: random-init weights, BatchNorm statistics
calibrated on random batches (train mode, cumulative averages) so activations keep unit scale and
outputs depend on the input (../shared/fixtures/README.md).

For each model NAME it writes into --out:
  NAME.onnx            torch.onnx.export (TorchScript exporter, dynamo=False, opset 17)
  NAME.in0.npy ...     the inputs (float32 images N(0,1), or int64 ids / masks)
  NAME.out0.npy ...    the outputs computed by PyTorch in float64 (stored as float32; integer
                       outputs as int64)
  NAME.json            how it was made, the ops in the graph, input_sensitivity (how much of the
                       output differs between image 0 and image 1) and ONNX Runtime's error
                       against the float64 outputs
Sizes: --size ci (reduced widths and inputs: a few MB, for the repository's test data) or full
(the torchvision / BERT-base shapes, for device-only checks and speed).

  python3 scripts/export_dense_models.py --out /tmp/dense --size ci
  python3 scripts/export_dense_models.py --out /tmp/dense_full --size full --models vit_b_16,deeplabv3
"""
import argparse
import collections
import json
import os
import sys
import time
import traceback

import numpy as np
import torch
import torchvision
from torch import nn
import torch.nn.functional as F

OPSET = 17


def calibrate_batchnorm(model, run, batches=6):
    """BatchNorm running statistics from random inputs: run(model) feeds one random batch."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            run(model)
    model.eval()


def images(shape, seed=99):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class OutOnly(nn.Module):
    """torchvision segmentation models return {'out': ..., 'aux': ...}: the map alone."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


# --- segmentation ------------------------------------------------------------------------------

def seg_calibrated(model, h, w):
    g = torch.Generator().manual_seed(7)
    calibrate_batchnorm(model, lambda m: m(torch.randn(4, 3, h, w, generator=g)))
    return OutOnly(model)


def small_mobilenet_v3_large():
    """mobilenet_v3_large(dilated=True) at width 0.5 (the segmentation backbones, a quarter of the weights)."""
    from torchvision.models import mobilenetv3
    try:
        setting, last = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_large", width_mult=0.5, dilated=True)
    except TypeError:  # older torchvision: a dict of private keys
        setting, last = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_large", {"_width_mult": 0.5, "_dilated": True})
    return mobilenetv3.MobileNetV3(setting, last)


def make_lraspp(size):
    from torchvision.models.segmentation import lraspp
    if size == "full":
        return seg_calibrated(torchvision.models.segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None), 224, 224), (2, 3, 224, 224)
    backbone = small_mobilenet_v3_large()
    model = lraspp._lraspp_mobilenetv3(backbone, 21)
    return seg_calibrated(model, 96, 128), (2, 3, 96, 128)


def make_deeplabv3(size):
    from torchvision.models.segmentation import deeplabv3
    if size == "full":
        return seg_calibrated(torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None), 224, 224), (2, 3, 224, 224)
    backbone = small_mobilenet_v3_large().features
    stage = [0] + [i for i, b in enumerate(backbone) if getattr(b, "_is_cn", False)] + [len(backbone) - 1]
    out_pos = stage[-1]
    out_ch = backbone[out_pos].out_channels
    from torchvision.models._utils import IntermediateLayerGetter
    body = IntermediateLayerGetter(backbone, return_layers={str(out_pos): "out"})
    # DeepLabHead's structure with 32 channels instead of 256 (a few MB in all).
    head = nn.Sequential(deeplabv3.ASPP(out_ch, [12, 24, 36], 32), nn.Conv2d(32, 32, 3, padding=1, bias=False),
                         nn.BatchNorm2d(32), nn.ReLU(), nn.Conv2d(32, 21, 1))
    model = deeplabv3.DeepLabV3(body, head, None)
    return seg_calibrated(model, 96, 128), (2, 3, 96, 128)


def make_fcn(size):
    if size != "full":
        return None  # its ops are the DeepLabV3 ones; 35M parameters: device-only
    return seg_calibrated(torchvision.models.segmentation.fcn_resnet50(weights=None, weights_backbone=None,
                                                                      aux_loss=False), 224, 224), (2, 3, 224, 224)


# --- upsampling ---------------------------------------------------------------------------------

class ESPCN(nn.Module):
    """Shi et al. 2016: features at low resolution, PixelShuffle (ONNX DepthToSpace, CRD) at the end."""

    def __init__(self, r=3, c=1):
        super().__init__()
        self.c1 = nn.Conv2d(c, 64, 5, padding=2)
        self.c2 = nn.Conv2d(64, 32, 3, padding=1)
        self.c3 = nn.Conv2d(32, c * r * r, 3, padding=1)
        self.ps = nn.PixelShuffle(r)

    def forward(self, x):
        return self.ps(self.c3(torch.tanh(self.c2(torch.tanh(self.c1(x))))))


class UNet(nn.Module):
    """A small U-Net: GroupNorm + SiLU blocks, a bilinear Resize and a ConvTranspose on the way up,
    nearest Resize and InstanceNorm on a skip, PReLU at the end: the decoder ops of real U-Nets."""

    def __init__(self, c=3, w=16, classes=4):
        super().__init__()

        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.GroupNorm(4, o), nn.SiLU(),
                                 nn.Conv2d(o, o, 3, padding=1), nn.GroupNorm(4, o), nn.SiLU())

        self.e1, self.e2, self.e3 = block(c, w), block(w, 2 * w), block(2 * w, 4 * w)
        self.up2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2)
        self.d2 = block(4 * w, 2 * w)
        self.d1 = block(3 * w, w)
        self.skip_norm = nn.InstanceNorm2d(w, affine=True)
        self.head = nn.Conv2d(w, classes, 1)
        self.coarse = nn.Conv2d(4 * w, classes, 1)
        self.act = nn.PReLU(classes)

    def forward(self, x):
        e1 = self.e1(x)
        e2 = self.e2(F.max_pool2d(e1, 2))
        e3 = self.e3(F.max_pool2d(e2, 2))
        d2 = self.d2(torch.cat([self.up2(e3), e2], 1))
        up1 = F.interpolate(d2, size=e1.shape[-2:], mode="bilinear", align_corners=False)
        d1 = self.d1(torch.cat([up1, self.skip_norm(e1)], 1))
        y = self.act(self.head(d1))
        return y + F.interpolate(self.coarse(e3), scale_factor=4.0, mode="nearest")


def randomize_norms(model, seed=5):
    """Norm scales and shifts away from 1 and 0, so a wrong affine shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.GroupNorm, nn.InstanceNorm2d, nn.LayerNorm)) and m.weight is not None:
                m.weight.copy_(1 + 0.3 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.3 * torch.randn(m.bias.shape, generator=g))
            if isinstance(m, nn.PReLU):
                m.weight.copy_(0.25 + 0.2 * torch.randn(m.weight.shape, generator=g))


def make_espcn(size):
    m = ESPCN(r=3).eval()
    return m, (2, 1, 24, 20) if size == "ci" else (2, 1, 224, 224)


def make_unet(size):
    m = UNet(w=16 if size == "ci" else 64)
    randomize_norms(m)
    return m.eval(), (2, 3, 36, 52) if size == "ci" else (2, 3, 256, 256)  # sides multiples of 4


# --- transformers --------------------------------------------------------------------------------

def make_vit(size):
    if size == "full":
        m = torchvision.models.vit_b_16(weights=None)
        shape = (2, 3, 224, 224)
    else:
        m = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=3,
                                                 hidden_dim=48, mlp_dim=96, num_classes=10)
        shape = (2, 3, 32, 32)
    # torchvision zero-initialises the classifier head: random values so the logits depend on x.
    with torch.no_grad():
        for p in m.heads.parameters():
            p.copy_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(3)))
    randomize_norms(m)
    return m.eval(), shape


class BertLike(nn.Module):
    """A BERT-shaped encoder written out (embeddings, post-LayerNorm blocks, erf GELU, a padding mask
    through Equal / Where): the fallback when transformers' BertModel does not export plainly."""

    def __init__(self, vocab, hidden, layers, heads, inter, max_pos):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.type = nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.heads = heads
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict(dict(q=nn.Linear(hidden, hidden), k=nn.Linear(hidden, hidden),
                                                  v=nn.Linear(hidden, hidden), o=nn.Linear(hidden, hidden),
                                                  ln1=nn.LayerNorm(hidden, eps=1e-12), f1=nn.Linear(hidden, inter),
                                                  f2=nn.Linear(inter, hidden), ln2=nn.LayerNorm(hidden, eps=1e-12))))

    def forward(self, ids, mask, types):
        n, t = ids.shape
        pos = torch.arange(t, device=ids.device).unsqueeze(0)
        x = self.ln(self.word(ids) + self.pos(pos) + self.type(types))
        h = self.heads
        d = x.shape[-1] // h
        masked = (mask == 0)[:, None, None, :]
        for b in self.blocks:
            q = b["q"](x).view(n, t, h, d).transpose(1, 2)
            k = b["k"](x).view(n, t, h, d).transpose(1, 2)
            v = b["v"](x).view(n, t, h, d).transpose(1, 2)
            s = torch.matmul(q, k.transpose(-1, -2)) / (d ** 0.5)
            s = torch.where(masked, torch.full_like(s, -1e4), s)
            a = torch.matmul(torch.softmax(s, -1), v).transpose(1, 2).reshape(n, t, h * d)
            x = b["ln1"](x + b["o"](a))
            x = b["ln2"](x + b["f2"](F.gelu(b["f1"](x))))
        return x


def bert_inputs(vocab, t):
    g = torch.Generator().manual_seed(11)
    ids = torch.randint(0, vocab, (2, t), generator=g)
    mask = torch.ones(2, t, dtype=torch.int64)
    mask[1, t - 4:] = 0  # the second sequence padded
    types = torch.zeros(2, t, dtype=torch.int64)
    types[:, t // 2:] = 1
    return ids, mask, types


def make_bert(size, prefer_transformers=True):
    if size == "full":
        cfg = dict(vocab=30522, hidden=768, layers=12, heads=12, inter=3072, max_pos=512, t=128)
    else:
        cfg = dict(vocab=500, hidden=64, layers=2, heads=4, inter=128, max_pos=64, t=11)
    ins = bert_inputs(cfg["vocab"], cfg["t"])
    try:
        if not prefer_transformers:
            raise RuntimeError("the written-out encoder asked for")
        import transformers
        conf = transformers.BertConfig(vocab_size=cfg["vocab"], hidden_size=cfg["hidden"],
                                       num_hidden_layers=cfg["layers"], num_attention_heads=cfg["heads"],
                                       intermediate_size=cfg["inter"], max_position_embeddings=cfg["max_pos"],
                                       attn_implementation="eager")
        torch.manual_seed(21)
        bert = transformers.BertModel(conf, add_pooling_layer=False).eval()
        randomize_norms(bert)

        class Wrap(nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, ids, mask, types):
                return self.m(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state

        return Wrap(bert), ins, "transformers.BertModel " + transformers.__version__
    except Exception as e:  # noqa: BLE001 (recorded, then the written-out encoder)
        print("transformers BertModel unavailable:", repr(e))
    torch.manual_seed(21)
    m = BertLike(cfg["vocab"], cfg["hidden"], cfg["layers"], cfg["heads"], cfg["inter"], cfg["max_pos"])
    randomize_norms(m)
    return m.eval(), ins, "BertLike (written out)"


# --- detection -----------------------------------------------------------------------------------

class DetectOne(nn.Module):
    """torchvision detectors take a list of images and give a list of dicts: one image, a tuple."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        r = self.m([x[0]])[0]
        return r["boxes"], r["scores"], r["labels"]


class SSDHead(nn.Module):
    """The SSD network without its post-processing: backbone and head (box regression, class
    logits per anchor); the anchors are saved beside it (decoding and NMS then run in wgc detect)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        f = list(self.m.backbone(x).values())
        h = self.m.head(f)
        return h["bbox_regression"], h["cls_logits"]


def calibrate_detector(m, h, w):
    g = torch.Generator().manual_seed(7)

    def run(model):
        x = torch.randn(4, 3, h, w, generator=g)
        f = model.backbone(x)
        feats = list(f.values()) if isinstance(f, dict) else [f]
        if hasattr(model, "head"):
            model.head(feats)

    calibrate_batchnorm(m, run)


def make_ssdlite(size):
    classes = 91 if size == "full" else 11
    m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                   num_classes=classes)
    calibrate_detector(m, 320, 320)
    return m.eval()


def make_fasterrcnn(size):
    m = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None,
                                                                           num_classes=91 if size == "full" else 11)
    m.eval()
    return m


# --- export and references -------------------------------------------------------------------------

def op_histogram(path):
    try:
        import onnx
        g = onnx.load(path, load_external_data=False).graph
        return dict(sorted(collections.Counter(n.op_type for n in g.node).items()))
    except Exception as e:  # noqa: BLE001
        return {"error": repr(e)}


def to_np(t):
    t = t.detach().cpu()
    return t.numpy().astype(np.float32) if t.is_floating_point() else t.numpy().astype(np.int64)


def reference(model, ins):
    """float64 outputs (integer inputs unchanged), on the GPU when there is one."""
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    m = model.eval().double().to(dev)  # torch.onnx.export restores the wrapper's (training) mode
    with torch.no_grad():
        outs = m(*[x.double().to(dev) if x.is_floating_point() else x.to(dev) for x in ins])
    m.float().cpu()
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    return [o.double().cpu() if o.is_floating_point() else o.cpu() for o in outs]


def save(out, name, model, ins, in_names, out_names, info, dynamic=None):
    path = os.path.join(out, name + ".onnx")
    model.eval()
    t0 = time.time()
    torch.onnx.export(model, tuple(ins), path, input_names=in_names, output_names=out_names, opset_version=OPSET,
                      dynamic_axes=dynamic, do_constant_folding=True, dynamo=False)
    info["export_s"] = round(time.time() - t0, 1)
    info["onnx_bytes"] = os.path.getsize(path)
    info["ops"] = op_histogram(path)
    info["opset"] = OPSET
    info["torch"], info["torchvision"] = torch.__version__, torchvision.__version__
    refs = reference(model, ins)
    for k, x in enumerate(ins):
        np.save(os.path.join(out, f"{name}.in{k}.npy"), to_np(x))
        info.setdefault("inputs", []).append(f"{in_names[k]} {to_np(x).dtype} {list(x.shape)}")
    info["outputs"] = []
    for k, r in enumerate(refs):
        np.save(os.path.join(out, f"{name}.out{k}.npy"), to_np(r))
        info["outputs"].append(f"{out_names[k]} {list(r.shape)}")
    r0 = refs[0]
    if r0.is_floating_point() and r0.shape[0] == 2 and r0.numel() > 0:
        scale = float(r0.abs().max())
        info["input_sensitivity"] = float((r0[0] - r0[1]).abs().max()) / scale
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = sess.run(None, {n: to_np(x) for n, x in zip(in_names, ins)})
        errs = []
        for g, r in zip(got, refs):
            r = r.numpy()
            if g.shape != r.shape:
                errs.append(f"shape {list(g.shape)} vs {list(r.shape)}")
            elif r.dtype.kind == "f" and r.size:
                errs.append(float(np.abs(g - r).max() / max(np.abs(r).max(), 1e-30)))
            else:
                errs.append("equal" if np.array_equal(g, r) else "differ")
        info["onnxruntime_vs_float64"] = errs
    except Exception as e:  # noqa: BLE001
        info["onnxruntime_vs_float64"] = repr(e)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(info, f, indent=1)
    print(f"{name}: {info['onnx_bytes'] / 1e6:.1f} MB, {sum(v for v in info['ops'].values() if isinstance(v, int))} "
          f"nodes, sensitivity {info.get('input_sensitivity', float('nan')):.3f}, ORT {info['onnxruntime_vs_float64']}",
          flush=True)


def export_image_model(out, name, make, size, seed):
    torch.manual_seed(seed)
    made = make(size)
    if made is None:
        return
    model, shape = made
    x = images(shape)
    info = {"model": f"{name} ({size}), seed {seed}", "input": f"float32 {list(shape)} N(0,1), seed 99"}
    save(out, name, model, [x], ["input"], ["output"], info,
         dynamic={"input": {0: "N", 2: "H", 3: "W"}, "output": {0: "N"}})


def export_bert(out, size, seed):
    dyn = {"input_ids": {0: "N", 1: "T"}, "attention_mask": {0: "N", 1: "T"}, "token_type_ids": {0: "N", 1: "T"},
           "output": {0: "N", 1: "T"}}
    for prefer in (True, False):
        model, ins, what = make_bert(size, prefer)
        info = {"model": what + f" ({size})", "seed": seed}
        try:
            save(out, "bert", model, list(ins), ["input_ids", "attention_mask", "token_type_ids"], ["output"], info,
                 dyn)
            return
        except Exception as e:  # noqa: BLE001
            if not prefer:
                raise
            print(what, "did not export:", repr(e)[:500])


def export_detector(out, name, make, size, seed):
    torch.manual_seed(seed)
    m = make(size)
    x = images((1, 3, 320, 320)) * 0.25 + 0.5  # an image in [0, 1]-ish, as detectors expect
    info = {"model": f"{name} ({size}), seed {seed}", "input": "float32 [1,3,320,320] 0.5 + 0.25 N(0,1)"}
    save(out, name, DetectOne(m), [x], ["image"], ["boxes", "scores", "labels"], info)
    if name.startswith("ssdlite"):
        # The network alone (the transform's normalisation done by the caller), its anchors, and the
        # settings of torchvision's post-processing.
        norm = (x - torch.tensor(m.transform.image_mean).view(1, 3, 1, 1)) / torch.tensor(
            m.transform.image_std).view(1, 3, 1, 1)
        hinfo = {"model": f"{name} backbone + head ({size}), seed {seed}", "input": "the normalised 320x320 image",
                 "score_thresh": m.score_thresh, "nms_thresh": m.nms_thresh,
                 "detections_per_img": m.detections_per_img, "topk_candidates": m.topk_candidates,
                 "box_coder_weights": list(m.box_coder.weights), "image_mean": m.transform.image_mean,
                 "image_std": m.transform.image_std}
        with torch.no_grad():
            feats = list(m.backbone(norm).values())
            from torchvision.models.detection.image_list import ImageList
            anchors = m.anchor_generator(ImageList(norm, [(320, 320)]), feats)[0]
        np.save(os.path.join(out, f"{name}_head.anchors.npy"), anchors.numpy().astype(np.float32))
        save(out, name + "_head", SSDHead(m), [norm], ["input"], ["bbox_regression", "cls_logits"], hinfo,
             dynamic={"input": {0: "N"}, "bbox_regression": {0: "N"}, "cls_logits": {0: "N"}})


MODELS = {
    "lraspp": lambda o, s, seed: export_image_model(o, "lraspp_mobilenet_v3_large", make_lraspp, s, seed),
    "deeplabv3": lambda o, s, seed: export_image_model(o, "deeplabv3_mobilenet_v3_large", make_deeplabv3, s, seed),
    "fcn": lambda o, s, seed: export_image_model(o, "fcn_resnet50", make_fcn, s, seed),
    "espcn": lambda o, s, seed: export_image_model(o, "espcn", make_espcn, s, seed),
    "unet": lambda o, s, seed: export_image_model(o, "unet", make_unet, s, seed),
    "vit": lambda o, s, seed: export_image_model(o, "vit_b_16" if s == "full" else "vit_tiny", make_vit, s, seed),
    "bert": lambda o, s, seed: export_bert(o, s, seed),
    "ssdlite": lambda o, s, seed: export_detector(o, "ssdlite320_mobilenet_v3_large", make_ssdlite, s, seed),
    "fasterrcnn": lambda o, s, seed: export_detector(o, "fasterrcnn_mobilenet_v3_large_320_fpn", make_fasterrcnn, s,
                                                     seed),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the files (created)")
    ap.add_argument("--size", choices=["ci", "full"], default="ci")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated: " + ", ".join(MODELS))
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    failed = {}
    for name in a.models.split(","):
        if name not in MODELS:
            sys.exit(f"unknown model '{name}' ({', '.join(MODELS)})")
        t0 = time.time()
        try:
            MODELS[name](a.out, a.size, a.seed)
        except Exception as e:  # noqa: BLE001 (one model's failure is a finding, not the end)
            failed[name] = repr(e)[:2000]
            traceback.print_exc()
        print(f"[{name}: {time.time() - t0:.1f} s]", flush=True)
    with open(os.path.join(a.out, "failed.json"), "w") as f:
        json.dump(failed, f, indent=1)
    print("failed:", failed or "none")


if __name__ == "__main__":
    main()
