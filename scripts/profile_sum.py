#!/usr/bin/env python3
"""Sums the WGC_PROFILE=1 output (stderr) of one wgc run.

Batches are grouped by their kinds of work (the set of kernel labels, and the dispatch count), so
that a serving engine's prefill chunks and decode steps, which dispatch as often, stay apart.
Prints the groups (how many batches, dispatches, median GPU ms), then the GPU time per kernel
label per batch for each group above 8 dispatches (decode steps, prefill chunks), the most
frequent first. Usage: WGC_PROFILE=1 wgc ... 2>prof.txt; scripts/profile_sum.py prof.txt
"""
import re
import statistics
import sys
from collections import defaultdict

batches = []  # (dispatch count, total ms, {label: [ms, calls]})
head = re.compile(r"^\[wgc profile\] batch of (\d+) dispatches, ([0-9.]+) ms")
line = re.compile(r"^ +([0-9.]+) ms  (.*)$")
for text in open(sys.argv[1], errors="replace"):
    if m := head.match(text):
        batches.append((int(m[1]), float(m[2]), defaultdict(lambda: [0.0, 0])))
    elif (m := line.match(text)) and batches:
        entry = batches[-1][2][m[2]]
        entry[0] += float(m[1])
        entry[1] += 1

by_count = defaultdict(list)  # by (dispatch count, kernel labels)
for b in batches:
    by_count[(b[0], tuple(sorted(b[2])))].append(b)
names = {k: chr(ord("A") + i) if i < 26 else str(i) for i, k in enumerate(sorted(by_count))}
print(f"{'group':>5} {'dispatches':>10} {'batches':>8} {'median_ms':>10}")
for k in sorted(by_count):
    print(f"{names[k]:>5} {k[0]:>10} {len(by_count[k]):>8} {statistics.median(b[1] for b in by_count[k]):>10.3f}")


def show(k, title):
    group = by_count[k]
    total = defaultdict(lambda: [0.0, 0])
    for b in group:
        for label, (ms, calls) in b[2].items():
            total[label][0] += ms / len(group)
            total[label][1] += calls / len(group)
    step = sum(v[0] for v in total.values()) or 1.0
    print(f"\n{title} (group {names[k]}, {k[0]} dispatches), per batch, mean of {len(group)}: {step:.3f} ms")
    print(f"{'ms':>9} {'calls':>6} {'share':>6}  kernel")
    for label, (ms, calls) in sorted(total.items(), key=lambda kv: -kv[1][0]):
        print(f"{ms:>9.3f} {calls:>6.0f} {100 * ms / step:>5.1f}%  {label}")


# Every group above 8 dispatches (decode steps, prefill chunks, ...), the most frequent first.
frequent = sorted((k for k in by_count if k[0] > 8), key=lambda k: (-len(by_count[k]), -k[0]))
for k in frequent[:6]:
    show(k, "batches")
