#!/usr/bin/env python3
"""What the Python binding costs: per-call time of small ops from Python against the same library
calls in a C++ loop, and LLM decode tokens/s from wgc.LLM against `wgc generate` on the same model.

    python3 python/bench.py [--cli build/wgc] [--model M.gguf] [--tokens 64] [--json out.json]

Every figure is a median over many calls (ops) or over --repeat runs (generation). docs/python.md
keeps the numbers measured on SwiftShader and the command for a GPU machine.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# This file sits beside the package's sources (python/wgc, without the built extension): import
# the installed or built package instead (pip install ./python, or PYTHONPATH=build/python).
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import numpy as np  # noqa: E402

import wgc  # noqa: E402
from wgc import _wgc  # noqa: E402


def median_us(fn, iters):
    for _ in range(min(iters, 20)):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(times)


def op_overheads(ctx, iters):
    n = 1024
    x = np.full(n, 0.5, np.float32)
    side = 32
    m = np.full((side, side), 0.5, np.float32)
    ta, tb = wgc.Tensor(x, ctx), wgc.Tensor(x, ctx)
    cases = [  # (name, what it does, Python call, bench_cpp op, n)
        ("add-tensor", f"wgc.add on two device tensors of {n} floats (submit + wait)",
         lambda: wgc.add(ta, tb), "add-tensor", n),
        ("sum-host", f"wgc.sum of a NumPy array of {n} floats (the CPU path under the threshold)",
         lambda: wgc.sum(x, ctx=ctx), "sum-host", n),
        ("matmul-host", f"wgc.matmul of {side}x{side} NumPy matrices (the CPU path under the threshold)",
         lambda: wgc.matmul(m, m, ctx=ctx), "matmul-host", side * side),
    ]
    rows = []
    for name, what, py_call, cpp_op, size in cases:
        cpp = _wgc.bench_cpp(ctx, cpp_op, size, iters)
        py = median_us(py_call, iters)
        rows.append({"op": name, "what": what, "cpp_us": cpp, "python_us": py, "overhead_us": py - cpp})
    return rows


def llm_speed(args):
    """Decode and prompt tokens/s of greedy generation. "cold" is what `wgc generate` does once per
    process: a new context and model, then one generation (its first steps compile the kernels);
    "warm" is a second generation on the same model after llm.reset() (kernels compiled)."""
    kw = dict(max_tokens=args.tokens, temperature=0, ignore_eos=True)
    rows = {"python (cold)": [], "python (warm)": []}
    if args.cli:
        rows["CLI"] = []
    path = args.model
    for _ in range(args.repeat):  # interleaved, so that a slow spell of a shared machine hits both
        llm = wgc.LLM(args.model, max_ctx=args.ctx, ctx=wgc.Context(backend=args.backend))
        path = llm.path
        llm.generate(args.prompt, **kw)
        rows["python (cold)"].append(llm.last_result["timings"])
        llm.reset()
        llm.generate(args.prompt, **kw)
        rows["python (warm)"].append(llm.last_result["timings"])
        del llm
        if args.cli:
            out = subprocess.run([args.cli, "generate", "--model", path, "--prompt", args.prompt, "-n",
                                  str(args.tokens), "--temp", "0", "--ignore-eos", "--ctx", str(args.ctx),
                                  "--backend", args.backend, "--json"],
                                 check=True, capture_output=True, text=True).stdout
            rows["CLI"].append(json.loads(out)["timings"])
    med = lambda ts, k: statistics.median(t[k] for t in ts)  # noqa: E731
    return {"model": path, "tokens": args.tokens,
            "runs": {name: {"decode_tps": med(ts, "decode_tokens_per_s"), "prompt_tps": med(ts, "prompt_tokens_per_s")}
                     for name, ts in rows.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", help="the wgc executable, to compare generation speed with `wgc generate`")
    ap.add_argument("--model", help="a model for the generation speed (default: the built-in one)")
    ap.add_argument("--prompt", default="The history of the moon")
    ap.add_argument("--tokens", type=int, default=64, help="tokens generated per run")
    ap.add_argument("--ctx", type=int, default=512, help="context length (KV cache) for both")
    ap.add_argument("--repeat", type=int, default=5, help="generation runs (median)")
    ap.add_argument("--iters", type=int, default=2000, help="calls per op (median)")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    ctx = wgc.Context(backend=args.backend)
    print(f"device: {ctx.device} ({'CPU adapter' if ctx.is_cpu else 'GPU'})")
    ops = op_overheads(ctx, args.iters)
    print(f"\nper-call time, median of {args.iters} calls (microseconds)")
    print(f"{'op':<12} {'C++':>9} {'Python':>9} {'overhead':>9}  what")
    for r in ops:
        print(f"{r['op']:<12} {r['cpp_us']:9.1f} {r['python_us']:9.1f} {r['overhead_us']:9.1f}  {r['what']}")
    gen = llm_speed(args)
    print(f"\ngeneration: {gen['model']}, {gen['tokens']} tokens, greedy, median of {args.repeat} runs (tokens/s)")
    print(f"{'':<14} {'decode':>9} {'prompt':>9}")
    for name, r in gen["runs"].items():
        print(f"{name:<14} {r['decode_tps']:9.2f} {r['prompt_tps']:9.2f}")
    if "CLI" in gen["runs"]:
        ratio = gen["runs"]["python (cold)"]["decode_tps"] / gen["runs"]["CLI"]["decode_tps"]
        print(f"Python (cold) / CLI decode: {ratio:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": ctx.info(), "ops": ops, "generation": gen}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
