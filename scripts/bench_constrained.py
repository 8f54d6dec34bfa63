#!/usr/bin/env python3
"""The cost of constrained sampling in `wgc serve` (the Python twin of bench_constrained.mjs, for
machines without Node: the GPU machine). Starts `wgc serve` on a model, then sends the same
completions, `clients` at a time: free (ignore_eos: max_tokens each) and under a json_schema
(bounded strings: a model that knows no JSON still ends); prints aggregate completion tokens/s of
each and the constraint's cost (1 - constrained/free). Standard library only.

  python3 scripts/bench_constrained.py --wgc build/wgc --model M.gguf --clients 64 --requests 128 --max-tokens 64
"""
import argparse
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request

SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["name", "tags", "n"],
    "properties": {
        "name": {"type": "string", "maxLength": 24}, "n": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4},
    },
}


def one(url, i, constrained, max_tokens):
    body = {"prompt": f"Item {i} as JSON:", "max_tokens": max_tokens, "temperature": 0.8, "seed": i}
    if constrained:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "item", "schema": SCHEMA}}
    else:
        body["ignore_eos"] = True
    req = urllib.request.Request(f"{url}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        j = json.loads(r.read())
    if constrained and j["choices"][0]["finish_reason"] == "stop":
        json.loads(j["choices"][0]["text"])  # it must parse
    return j["usage"]["completion_tokens"]


def level(url, constrained, clients, total, max_tokens):
    lock = threading.Lock()
    state = {"next": 0, "tokens": 0, "errors": []}

    def worker():
        while True:
            with lock:
                i = state["next"]
                if i >= total:
                    return
                state["next"] += 1
            try:
                n = one(url, i, constrained, max_tokens)
                with lock:
                    state["tokens"] += n
            except Exception as e:  # noqa: BLE001 (reported)
                with lock:
                    state["errors"].append(str(e))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = time.perf_counter() - t0
    return {"constrained": constrained, "requests": total, "tokens": state["tokens"], "seconds": round(s, 3),
            "tokens_per_s": round(state["tokens"] / s, 1), "errors": state["errors"][:3]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wgc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--requests", type=int, default=0)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--serve-args", default="", help="more wgc serve arguments, space-separated")
    a = ap.parse_args()
    total = a.requests or 2 * a.clients
    cmd = [a.wgc, "serve", "--model", a.model, "--port", "0", "--parallel", str(a.clients), "--ctx", "512",
           *a.serve_args.split()]
    srv = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    log = ""
    url = None
    while url is None:
        line = srv.stderr.readline()
        if not line:
            sys.exit(f"wgc serve ended before listening:\n{log}")
        log += line
        m = re.search(r"listening on (http://[^\s]+)", line)
        if m:
            url = m.group(1)
    threading.Thread(target=lambda: [None for _ in srv.stderr], daemon=True).start()  # keep draining
    try:
        level(url, False, a.clients, min(total, a.clients), 4)  # warm-up (pipelines, pools)
        free = level(url, False, a.clients, total, a.max_tokens)
        constrained = level(url, True, a.clients, total, a.max_tokens)
        print(json.dumps({"engine": log.strip().splitlines()[-2] if len(log.strip().splitlines()) > 1 else "",
                          "clients": a.clients, "free": free, "constrained": constrained,
                          "cost": round(1 - constrained["tokens_per_s"] / free["tokens_per_s"], 3)}, indent=1))
    finally:
        srv.terminate()
        srv.wait(timeout=60)


if __name__ == "__main__":
    main()
