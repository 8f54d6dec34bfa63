#!/usr/bin/env python3
"""Compares two WGC_DUMP_KERNELS files (LlmOps' compiled pipelines) from runs of the same tests
before and after a change to the LLM kernels' host code.

Prints the kernels of AFTER that are not byte-identical to any kernel of BEFORE (source, entry
point and override constants), and the kernels BEFORE compiled under the default tuning that
AFTER lacks. Exit status 1 when there are any. Usage: kernel_dump_diff.py BEFORE AFTER
"""
import hashlib
import sys


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
                in_wgsl = False
            elif line.startswith("@@@ wgsl"):
                in_wgsl = True
            elif in_wgsl:
                body.append(line)
            elif line.startswith("@@@ "):
                head.append(line.rstrip("\n"))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = read(sys.argv[1]), read(sys.argv[2])
    new = sorted((k, h) for h, (k, _) in after.items() if h not in before)
    gone = sorted((k, h) for h, (k, d) in before.items() if d and h not in after)
    for k, h in new:
        print(f"changed or new: {k} ({h})")
    for k, h in gone:
        print(f"default kernel gone: {k} ({h})")
    dflt = sum(1 for _, d in after.values() if d)
    print(f"{len(before)} kernels before, {len(after)} after ({dflt} default); "
          f"{len(new)} changed or new, {len(gone)} default kernels gone")
    sys.exit(1 if new or gone else 0)


if __name__ == "__main__":
    main()
