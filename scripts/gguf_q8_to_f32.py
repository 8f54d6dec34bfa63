#!/usr/bin/env python3
"""A GGUF's Q8_0 tensors dequantized to F32, everything else copied (metadata byte for byte).

Used to measure loading on a larger model of the same shapes (docs/web.md, "Size and speed": the
built-in model's F32 copy is 4x its size, large enough that wasm memory must grow to hold a copy of
it). Plain Python (no numpy, no gguf package): GGUF v2/v3, little-endian, F32 and Q8_0 tensors only.
  python3 scripts/gguf_q8_to_f32.py models/wgc-tiny-dict-q8_0.gguf build/web/local/models/wgc-tiny-dict-f32.gguf
"""
import math
import struct
import sys

SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # GGUF value type -> bytes
F32, Q8_0 = 0, 8


def main(src, dst):
    b = open(src, 'rb').read()
    pos = 0

    def rd(fmt):
        nonlocal pos
        v = struct.unpack_from('<' + fmt, b, pos)[0]
        pos += struct.calcsize('<' + fmt)
        return v

    def skip_value(t):
        nonlocal pos
        if t == 8:
            n = rd('Q')  # (before the +=, which would read pos first)
            pos += n
        elif t == 9:
            et, n = rd('I'), rd('Q')
            for _ in range(n):
                skip_value(et)
        else:
            pos += SCALAR[t]

    if b[:4] != b'GGUF':
        sys.exit(f'{src}: not a GGUF file')
    pos = 4
    version, n_tensors, n_kv = rd('I'), rd('Q'), rd('Q')
    kv_start, align = pos, 32
    for _ in range(n_kv):
        key = b[pos + 8:pos + 8 + rd('Q')]
        pos += len(key)
        t = rd('I')
        if key == b'general.alignment':
            align = struct.unpack_from('<I', b, pos)[0]
        skip_value(t)
    kv = b[kv_start:pos]
    infos = []
    for _ in range(n_tensors):
        name = b[pos + 8:pos + 8 + rd('Q')]
        pos += len(name)
        ne = [rd('Q') for _ in range(rd('I'))]
        infos.append((name, ne, rd('I'), rd('Q')))
    data = (pos + align - 1) // align * align

    table, body, off = bytearray(), bytearray(), 0
    for name, ne, t, o in infos:
        n, p = math.prod(ne), data + o
        if t == Q8_0:  # blocks of an f16 scale and 32 int8 values
            out = bytearray()
            for _ in range(n // 32):
                d = struct.unpack_from('<e', b, p)[0]
                out += struct.pack('<32f', *[q * d for q in struct.unpack_from('32b', b, p + 2)])
                p += 34
        elif t == F32:
            out = b[p:p + 4 * n]
        else:
            sys.exit(f'{src}: tensor {name.decode()} has type {t} (only F32 and Q8_0 here)')
        table += struct.pack('<Q', len(name)) + name + struct.pack('<I', len(ne))
        table += b''.join(struct.pack('<Q', x) for x in ne) + struct.pack('<IQ', F32, off)
        body += out + b'\0' * ((len(out) + align - 1) // align * align - len(out))
        off = len(body)
    head = b'GGUF' + struct.pack('<IQQ', version, n_tensors, n_kv) + kv + bytes(table)
    head += b'\0' * ((len(head) + align - 1) // align * align - len(head))
    with open(dst, 'xb') as f:  # never over an existing file
        f.write(head + bytes(body))
    print(f'{dst}: {len(head) + len(body)} bytes')


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
