#!/usr/bin/env python3
"""Compares two WGC_DUMP_KERNELS files (LlmOps' compiled pipelines) from runs of the same tests
before and after a change to the LLM kernels' host code.

Prints the kernels of AFTER that are not byte-identical to any kernel of BEFORE (source, entry
point and override constants), and the kernels BEFORE compiled under the default tuning that
AFTER lacks; with --diff, each changed kernel's differences from BEFORE's kernel of the same key.
Exit status 1 when there are any. Usage: kernel_dump_diff.py [--diff] BEFORE AFTER
"""
import difflib
import hashlib
import sys


TEXTS = {}  # (path, key) -> text, for --diff


def read(path):
    """{content hash: (key, default)} of a dump file."""
    out = {}
    with open(path, encoding="utf-8") as f:
        key, default, head, body, in_wgsl = None, 0, [], [], False
        for line in f:
            if line.startswith("@@@ kernel "):
                key, default, head, body, in_wgsl = line[11:].rstrip("\n"), 0, [], [], False
            elif line.startswith("@@@ default "):
                default = int(line.split()[2])
            elif line.startswith("@@@ end"):
                text = "\n".join(head) + "\n" + "".join(body)
                h = hashlib.sha256(text.encode()).hexdigest()[:16]
                prev = out.get(h)
                out[h] = (key, default or (prev[1] if prev else 0))
                TEXTS[(path, key)] = text
                in_wgsl = False
            elif line.startswith("@@@ wgsl"):
                in_wgsl = True
            elif in_wgsl:
                body.append(line)
            elif line.startswith("@@@ "):
                head.append(line.rstrip("\n"))
    return out


def main():
    args = sys.argv[1:]
    show = "--diff" in args
    args = [a for a in args if a != "--diff"]
    if len(args) != 2:
        sys.exit(__doc__)
    before, after = read(args[0]), read(args[1])
    new = sorted((k, h) for h, (k, _) in after.items() if h not in before)
    gone = sorted((k, h) for h, (k, d) in before.items() if d and h not in after)
    before_keys = {k for k, _ in before.values()}
    for k, h in new:
        print(f"{'changed' if k in before_keys else 'new'}: {k} ({h})")
        old = TEXTS.get((args[0], k))
        if show and old is not None:
            lines = difflib.unified_diff(old.splitlines(), TEXTS[(args[1], k)].splitlines(), "before", "after", n=1,
                                         lineterm="")
            print("\n".join(lines))
    for k, h in gone:
        print(f"default kernel gone: {k} ({h})")
    dflt = sum(1 for _, d in after.values() if d)
    changed = sum(1 for k, _ in new if k in before_keys)
    print(f"{len(before)} kernels before, {len(after)} after ({dflt} default); "
          f"{changed} changed, {len(new) - changed} new, {len(gone)} default kernels gone")
    sys.exit(1 if new or gone else 0)


if __name__ == "__main__":
    main()
