#!/usr/bin/env python3
"""The PyTorch side of the embedding benchmark (issue 34): a bge-base-sized BertModel (hidden 768, 12
layers, 12 heads, ffn 3072, vocab 30522; random weights: speed does not depend on them) on the GPU,
CLS pooling and L2 normalisation as bge does, sequences of --seq tokens at each --batch size:
sequences per second (torch.cuda.synchronize around --repeat timed calls after a warm-up), in
float32 (TF32 off, as wgc computes) and float16. The wgc side, on the same machine:

    wgc synth-model --shape bge-base --type f32 --out /tmp/bge-f32.gguf
    wgc embed --model /tmp/bge-f32.gguf --bench 512 --batch 1,64 --repeat 5

Runs in well under 120 s on an H200. Usage: python3 scripts/bench_embed_torch.py [--seq 512] [--batch 1,64]
"""
import argparse
import json
import time

import torch
from transformers import BertConfig, BertModel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", default="1,64")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cfg = BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                     intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2,
                     layer_norm_eps=1e-12, hidden_act="gelu")
    torch.manual_seed(0)
    results = []
    for dtype in (torch.float32, torch.float16):
        model = BertModel(cfg, add_pooling_layer=False).to("cuda", dtype).eval()
        for b in [int(x) for x in a.batch.split(",")]:
            ids = torch.randint(0, cfg.vocab_size, (b, a.seq), device="cuda")
            with torch.no_grad():
                def run():
                    h = model(input_ids=ids).last_hidden_state[:, 0]
                    return torch.nn.functional.normalize(h.float(), dim=-1)
                run()
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(a.repeat):
                    run()
                torch.cuda.synchronize()
                s = (time.perf_counter() - t0) / a.repeat
            r = {"dtype": str(dtype).replace("torch.", ""), "batch": b, "tokens": a.seq, "ms_per_call": s * 1e3,
                 "sequences_per_s": b / s}
            results.append(r)
            print(f"{r['dtype']:8s} batch {b:4d} x {a.seq} tokens: {s * 1e3:9.2f} ms/call {b / s:10.1f} seq/s")
        del model
        torch.cuda.empty_cache()
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "results": results}))


if __name__ == "__main__":
    main()
