#!/usr/bin/env bash
# On the GPU machine (the `cnn` step of scripts/device_run.sh, or by hand after it unpacked the
# bundle): exports torchvision MobileNetV2 1.0 with random weights (scripts/export_cnn_models.py),
# checks wgc's logits against PyTorch's float64 ones, then runs in the same session
#   wgc bench-cnn at batch 1 and 64 (one submit per inference, upload and readback included),
#   PyTorch CUDA eager, FP32 with TF32 off (input already on the GPU, and with the copies),
#   ONNX Runtime on the CPU,
# and prints images/s side by side. Targets: wgc >= 1,000 img/s at batch 1, >= 10,000 at batch 64
# (PyTorch on the H200: 309 and 10,641, ../shared/notes/PLATFORM.md).
#   WGC=/tmp/wgc/bin/wgc RES=/tmp/res scripts/bench_cnn_device.sh [MODEL]
# WGC_CNN_PEERS=0 leaves PyTorch and ORT out (a quick look at wgc alone); WGC_CNN_RUNS (50) runs.
# WGC_CNN_TUNINGS="KNOBS;KNOBS;...": wgc bench-cnn again under each WGC_CONV_TUNING set (e.g.
# dwr_rows=4: depthwise-reg blocks of 4 x 4), WGC_CNN_TUNING_RUNS (20) runs, one row each.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
wgc=${WGC:-/tmp/wgc/bin/wgc}
res=${RES:-/tmp/res}
model=${1:-mobilenet_v2}
runs=${WGC_CNN_RUNS:-50}
mkdir -p "$res/cnn_models"
m="$res/cnn_models/$model"

python3 "$repo/scripts/export_cnn_models.py" --out "$res/cnn_models" --models "$model" | tee "$res/cnn-export.txt"

# Correctness before speed: the GPU path against PyTorch's float64 logits (and under each
# WGC_CNN_TUNINGS set below).
check() {  # check TAG [WGC_CONV_TUNING]
  WGC_CONV_TUNING=${2:-} "$wgc" infer --model "$m.onnx" --input "$m.input.npy" --out "$res/$model.$1.npy" --force \
    --device gpu
  python3 - "$m.logits.npy" "$res/$model.$1.npy" "${2:-defaults}" <<'PY' | tee -a "$res/cnn-check.txt"
import sys, numpy as np
ref, got = np.load(sys.argv[1]), np.load(sys.argv[2])
rel = np.abs(got - ref).max() / np.abs(ref).max()
d_ref, d_got = ref[0] - ref[1], got[0] - got[1]
drel = np.abs(d_got - d_ref).max() / np.abs(d_ref).max()
print(f"wgc ({sys.argv[3]}) vs PyTorch float64: max rel error {rel:.2e} on the logits, {drel:.2e} on image 0 - image 1")
PY
}
rm -f "$res/cnn-check.txt"
check wgc

"$wgc" bench-cnn --model "$m.onnx" --batch 1,64 -r "$runs" --profile --json "$res/bench-cnn.json" \
  --png "$res/bench-cnn.png" | tee "$res/bench-cnn.txt"

IFS=';' read -ra tunings <<<"${WGC_CNN_TUNINGS:-}"
for t in "${tunings[@]}"; do
  [ -n "$t" ] || continue
  tag=$(echo "$t" | tr -c 'a-zA-Z0-9\n' '_')
  check "wgc-$tag" "$t" || true
  WGC_CONV_TUNING=$t "$wgc" bench-cnn --model "$m.onnx" --batch 1,64 -r "${WGC_CNN_TUNING_RUNS:-20}" \
    --json "$res/bench-cnn-tuned-$tag.json" | tee "$res/bench-cnn-tuned-$tag.txt" || true
done

if [ "${WGC_CNN_PEERS:-1}" = 0 ]; then echo '{}' >"$res/peers-cnn.json"; else
python3 - "$m.onnx" "$model" "$runs" "$res/peers-cnn.json" <<'PY' | tee "$res/peers-cnn.txt"
import json, sys, time
import numpy as np
import torch, torchvision
path, name, runs, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
make = {"mobilenet_v2": torchvision.models.mobilenet_v2, "resnet18": torchvision.models.resnet18,
        "resnet50": torchvision.models.resnet50, "squeezenet1_1": torchvision.models.squeezenet1_1,
        "shufflenet_v2_x0_5": torchvision.models.shufflenet_v2_x0_5,
        "mobilenet_v3_small": torchvision.models.mobilenet_v3_small,
        "efficientnet_b0": torchvision.models.efficientnet_b0}[name]
model = make(weights=None).cuda().eval()
res = {}
def median(f):
    for _ in range(10): f()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter(); f(); t.append(time.perf_counter() - t0)
    return sorted(t)[len(t) // 2]
with torch.no_grad():
    for b in (1, 64):
        xg = torch.randn(b, 3, 224, 224, device="cuda")
        xc = torch.randn(b, 3, 224, 224).pin_memory()
        def resident():
            model(xg); torch.cuda.synchronize()
        def copies():
            model(xc.cuda(non_blocking=True)).cpu()
        res[f"torch_b{b}"] = b / median(resident)
        res[f"torch_copies_b{b}"] = b / median(copies)
try:
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for b in (1, 64):
        x = np.random.randn(b, 3, 224, 224).astype(np.float32)
        res[f"ort_cpu_b{b}"] = b / median(lambda: sess.run(None, {"input": x}))
except ImportError:
    pass
json.dump(res, open(out, "w"), indent=1)
print(json.dumps(res, indent=1))
PY
fi

python3 - "$res/bench-cnn.json" "$res/peers-cnn.json" "$model" <<'PY' | tee "$res/cnn.txt"
import glob, json, os, sys
w = {r["batch"]: r for r in json.load(open(sys.argv[1]))["results"]}
p = json.load(open(sys.argv[2]))
print(f"\n{sys.argv[3]} 224x224, images/s (median of runs)")
print("  wgc e2e: one run at a time, input upload + one submit + readback; pipelined: the same with the next")
print("  batch's upload overlapping this one's work; GPU-only: input already on the device, one submit + wait")
print("  (PyTorch CUDA: input on the GPU + synchronize; +copies: pinned host input, output to the host)")
print(f"{'batch':>6} {'wgc e2e':>9} {'pipelined':>10} {'GPU-only':>9} {'PyTorch CUDA':>13} {'+copies':>9} "
      f"{'ORT CPU':>9} {'GPU us/run':>11} {'sum of dispatches us':>21}")
for b in (1, 64):
    r = w.get(b, {})
    fmt = lambda v: f"{v:,.0f}" if isinstance(v, (int, float)) else "-"
    gpu_us = r["ms_gpu_only"] * 1e3 if "ms_gpu_only" in r else None
    print(f"{b:>6} {fmt(r.get('images_per_s')):>9} {fmt(r.get('images_per_s_pipelined')):>10} "
          f"{fmt(r.get('images_per_s_gpu_only')):>9} {fmt(p.get(f'torch_b{b}')):>13} "
          f"{fmt(p.get(f'torch_copies_b{b}')):>9} {fmt(p.get(f'ort_cpu_b{b}')):>9} {fmt(gpu_us):>11} "
          f"{fmt(r.get('gpu_us_total')):>21}")
print("targets: wgc >= 1,000 img/s at batch 1 (one submit per image), >= 10,000 at batch 64")
check = os.path.join(os.path.dirname(sys.argv[1]), "cnn-check.txt")
if os.path.exists(check):
    print(open(check).read().rstrip())
print("\nwgc's time per run (ms, medians): input = copy into the staging buffer, submit = submit of the run")
print("encoded ahead, wait = until the logits are on the host; GPU e2e / net = the GPU's time for a run (copies")
print("included) / for the network (timestamps around the batch); e2e under the default waits (auto: poll up to 3 ms,")
print("then sleep); spin / block = the same with the waits always polling / always sleeping")
print("(in place: the input already in wgc's mapped staging buffers, as PyTorch's +copies reads pinned memory)")
print(f"{'batch':>6} {'e2e ms':>8} {'GPU e2e':>8} {'GPU net':>8} {'input':>8} {'submit':>8} {'wait':>8} "
      f"{'spin e2e img/s':>15} {'block e2e img/s':>16} {'in place img/s':>15}")
for b in (1, 64):
    r = w.get(b, {})
    f3 = lambda k: f"{r[k]:.3f}" if k in r else "-"
    fi = lambda k: f"{r[k]:,.0f}" if k in r else "-"
    print(f"{b:>6} {f3('ms_median'):>8} {f3('gpu_ms_e2e'):>8} {f3('gpu_ms_network'):>8} {f3('host_input_ms'):>8} "
          f"{f3('host_submit_ms'):>8} {f3('wait_ms'):>8} {fi('images_per_s_spin_wait'):>15} "
          f"{fi('images_per_s_block_wait'):>16} {fi('images_per_s_in_place'):>15}")
tuned = sorted(glob.glob(os.path.join(os.path.dirname(sys.argv[1]), "bench-cnn-tuned-*.json")))
if tuned:
    print("\nWGC_CONV_TUNING sets (WGC_CNN_TUNINGS), img/s: e2e / spin e2e / GPU-only at batch 1 and 64")
    for path in tuned:
        t = {r["batch"]: r for r in json.load(open(path))["results"]}
        cells = []
        for b in (1, 64):
            r = t.get(b, {})
            cells.append(" / ".join(f"{r[k]:,.0f}" if k in r else "-" for k in
                                    ("images_per_s", "images_per_s_spin_wait", "images_per_s_gpu_only")))
        name = os.path.basename(path)[len("bench-cnn-tuned-"):-len(".json")]
        print(f"  {name:<40} b1 {cells[0]:<24} b64 {cells[1]}")
PY
