#!/usr/bin/env bash
# On the GPU machine (the `dense` step of scripts/device_run.sh, or by hand after it unpacked the
# bundle): exports full-size models with random weights (scripts/export_dense_models.py --size full:
# LRASPP / DeepLabV3 on MobileNetV3-Large, FCN-ResNet50, ViT-B/16, a BERT-base encoder), checks
# wgc's outputs against PyTorch's float64 ones (wgc infer on the GPU path), then in the same session
#   wgc bench-cnn: segmentation at 520x520 (torchvision's preset size) at batch 1 and 16, ViT-B/16
#   at batch 1 and 64 (one submit per inference, upload and readback included),
#   PyTorch CUDA eager, FP32 with TF32 off (input already on the GPU),
#   ONNX Runtime on the CPU (batch 1 only: the large batches take minutes there),
# and prints images/s side by side (issue 37's goal: ahead of PyTorch eager at batch 1, >= 0.8x at
# the large batch).
#   WGC=/tmp/wgc/bin/wgc RES=/tmp/res scripts/bench_dense_device.sh [MODELS]
# MODELS: comma-separated of lraspp, deeplabv3, fcn, vit (default: all four); WGC_DENSE_RUNS (30)
# runs per batch size; WGC_DENSE_PEERS=0 leaves PyTorch and ORT out.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
wgc=${WGC:-/tmp/wgc/bin/wgc}
res=${RES:-/tmp/res}
models=${1:-lraspp,deeplabv3,fcn,vit}
runs=${WGC_DENSE_RUNS:-30}
dir="$res/dense_models"
mkdir -p "$dir"

python3 "$repo/scripts/export_dense_models.py" --out "$dir" --size full --models "$models,bert" |
  grep -v Warning | tee "$res/dense-export.txt"

# name in the export, bench-cnn's --hw (segmentation: open spatial dims), batch sizes
declare -A name=([lraspp]=lraspp_mobilenet_v3_large [deeplabv3]=deeplabv3_mobilenet_v3_large
                 [fcn]=fcn_resnet50 [vit]=vit_b_16)
rm -f "$res/dense-check.txt"
IFS=, read -ra list <<<"$models"
for key in "${list[@]}" bert; do
  m=${name[$key]:-$key}
  [ -f "$dir/$m.onnx" ] || continue
  # Correctness first: the GPU path against PyTorch's float64 outputs (the export's batch of 2).
  ins=()
  for f in "$dir/$m".in*.npy; do ins+=(--input "$f"); done
  if [ "$m" = bert ]; then
    ins=(--input "input_ids=$dir/bert.in0.npy" --input "attention_mask=$dir/bert.in1.npy"
         --input "token_type_ids=$dir/bert.in2.npy")
  fi
  "$wgc" infer --model "$dir/$m.onnx" "${ins[@]}" --out "$res/$m.wgc.npy" --force --device gpu
  python3 - "$dir/$m.out0.npy" "$res/$m.wgc.npy" "$m" <<'PY' | tee -a "$res/dense-check.txt"
import sys, numpy as np
ref, got = np.load(sys.argv[1]), np.load(sys.argv[2])
rel = np.abs(got - ref).max() / np.abs(ref).max()
d_ref, d_got = ref[0] - ref[1], got[0] - got[1]
drel = np.abs(d_got - d_ref).max() / np.abs(d_ref).max()
print(f"{sys.argv[3]}: wgc (GPU) vs PyTorch float64: max rel error {rel:.2e}, item 0 - item 1 {drel:.2e}")
PY
done

for key in "${list[@]}"; do
  m=${name[$key]}
  [ -f "$dir/$m.onnx" ] || continue
  if [ "$key" = vit ]; then batches=1,64; hw=(); else batches=1,16; hw=(--hw 520,520); fi
  "$wgc" bench-cnn --model "$dir/$m.onnx" --batch "$batches" "${hw[@]}" -r "$runs" --json "$res/bench-$m.json" \
    --force | tee "$res/bench-$m.txt"
done

if [ "${WGC_DENSE_PEERS:-1}" != 0 ]; then
python3 - "$dir" "$models" "$runs" "$res/peers-dense.json" <<'PY' | tee "$res/peers-dense.txt"
import json, sys, time
import numpy as np
import torch, torchvision
d, models, runs, out = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4]
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
seg = torchvision.models.segmentation
make = {"lraspp": (lambda: seg.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None), 520, (1, 16)),
        "deeplabv3": (lambda: seg.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None), 520, (1, 16)),
        "fcn": (lambda: seg.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False), 520, (1, 16)),
        "vit": (lambda: torchvision.models.vit_b_16(weights=None), 224, (1, 64))}
files = {"lraspp": "lraspp_mobilenet_v3_large", "deeplabv3": "deeplabv3_mobilenet_v3_large",
         "fcn": "fcn_resnet50", "vit": "vit_b_16"}
def median(f, n=None):
    for _ in range(2 if n else 5): f()
    t = []
    for _ in range(n or runs):
        t0 = time.perf_counter(); f(); t.append(time.perf_counter() - t0)
    return sorted(t)[len(t) // 2]
res = {}
for key in models:
    ctor, side, batches = make[key]
    model = ctor().cuda().eval()
    with torch.no_grad():
        for b in batches:
            xg = torch.randn(b, 3, side, side, device="cuda")
            def resident():
                y = model(xg)
                torch.cuda.synchronize()
            res[f"{key}_torch_b{b}"] = b / median(resident)
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(f"{d}/{files[key]}.onnx", providers=["CPUExecutionProvider"])
        x = np.random.randn(1, 3, side, side).astype(np.float32)  # batch 1 only: the large batches take minutes
        res[f"{key}_ort_cpu_b1"] = 1 / median(lambda: sess.run(None, {"input": x}), 5)
    except ImportError:
        pass
    print(key, {k: round(v, 1) for k, v in res.items() if k.startswith(key)}, flush=True)
json.dump(res, open(out, "w"), indent=1)
PY
else echo '{}' >"$res/peers-dense.json"; fi

python3 - "$res" "$models" <<'PY' | tee "$res/dense.txt"
import json, os, sys
res, models = sys.argv[1], sys.argv[2].split(",")
files = {"lraspp": "lraspp_mobilenet_v3_large", "deeplabv3": "deeplabv3_mobilenet_v3_large",
         "fcn": "fcn_resnet50", "vit": "vit_b_16"}
p = json.load(open(os.path.join(res, "peers-dense.json")))
print("\nimages/s (median of runs); segmentation at 520x520, ViT-B/16 at 224x224")
print("  wgc e2e: upload + one submit + readback; GPU-only: input on the device; PyTorch CUDA eager FP32,")
print("  TF32 off, input on the GPU + synchronize; ORT: CPU")
print(f"{'model':<30} {'batch':>5} {'wgc e2e':>9} {'pipelined':>10} {'GPU-only':>9} {'PyTorch':>9} {'ORT CPU':>9}")
for key in models:
    path = os.path.join(res, f"bench-{files[key]}.json")
    if not os.path.exists(path):
        continue
    w = {r["batch"]: r for r in json.load(open(path))["results"]}
    for b, r in sorted(w.items()):
        fmt = lambda v: f"{v:,.1f}" if isinstance(v, (int, float)) else "-"
        print(f"{files[key]:<30} {b:>5} {fmt(r.get('images_per_s')):>9} {fmt(r.get('images_per_s_pipelined')):>10} "
              f"{fmt(r.get('images_per_s_gpu_only')):>9} {fmt(p.get(f'{key}_torch_b{b}')):>9} "
              f"{fmt(p.get(f'{key}_ort_cpu_b{b}')):>9}")
check = os.path.join(res, "dense-check.txt")
if os.path.exists(check):
    print(open(check).read().rstrip())
PY
