#!/usr/bin/env python3
"""Writes a few small valid GGUF files (every value type, several tensor types) into a folder,
as libFuzzer seeds that are cheap to mutate. Usage: make_seeds.py <out_dir>"""
import os
import struct
import sys


def s(x):
    b = x.encode()
    return struct.pack('<Q', len(b)) + b


def kv(key, type_id, payload):
    return s(key) + struct.pack('<I', type_id) + payload


def gguf(version, kvs, tensors, alignment=32):
    out = b'GGUF' + struct.pack('<IQQ', version, len(tensors), len(kvs)) + b''.join(kvs)
    offset, data = 0, b''
    for name, dims, type_id, raw in tensors:
        out += s(name) + struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', d) for d in dims)
        out += struct.pack('<IQ', type_id, offset)
        padded = raw + b'\0' * (-len(raw) % alignment)
        data += padded
        offset += len(padded)
    return out + b'\0' * (-len(out) % alignment) + data


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    scalars = [
        kv('general.architecture', 8, s('llama')),
        kv('k.u8', 0, b'\x07'), kv('k.i8', 1, b'\xff'), kv('k.u16', 2, b'\x01\x02'),
        kv('k.i16', 3, b'\xfe\xff'), kv('k.u32', 4, struct.pack('<I', 64)),
        kv('k.i32', 5, struct.pack('<i', -5)), kv('k.f32', 6, struct.pack('<f', 1e-5)),
        kv('k.bool', 7, b'\x01'), kv('k.u64', 10, struct.pack('<Q', 2**63)),
        kv('k.i64', 11, struct.pack('<q', -2)), kv('k.f64', 12, struct.pack('<d', 0.5)),
        kv('k.ints', 9, struct.pack('<IQ', 5, 3) + struct.pack('<3i', 1, 2, 3)),
        kv('k.floats', 9, struct.pack('<IQ', 6, 2) + struct.pack('<2f', 0.5, -1)),
        kv('k.strs', 9, struct.pack('<IQ', 8, 3) + s('<s>') + s('') + s('\u2581a')),
    ]
    tensors = [
        ('t.f32', [4, 2], 0, bytes(range(32))),
        ('t.f16', [8], 1, bytes(16)),
        ('t.q4_0', [32, 2], 2, bytes(36)),
        ('t.q8_0', [32], 8, bytes(34)),
        ('t.q4_k', [256], 12, bytes(144)),
    ]
    seeds = {
        'all_types_v3.gguf': gguf(3, scalars, tensors),
        'all_types_v2.gguf': gguf(2, scalars, tensors),
        'aligned_64.gguf': gguf(3, [kv('general.alignment', 4, struct.pack('<I', 64))] + scalars[:2],
                                tensors[:2], alignment=64),
        'no_tensors.gguf': gguf(3, scalars, [])[:sum(len(k) for k in scalars) + 24],
    }
    for name, data in seeds.items():
        with open(os.path.join(out_dir, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()
