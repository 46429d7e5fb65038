#!/usr/bin/python3
"""Prints where a file's payload lives in a clairfs pack: PACK OFFSET STORED CODEC.

usage: locate_payload.py OUT RELPATH
Reads OUT/manifest with the byte layout of partitioner/format/layout.hpp (a test
helper: no checksum checks, no validation).
"""
import os
import struct
import sys

out, rel = sys.argv[1], sys.argv[2]
data = open(os.path.join(out, "manifest"), "rb").read()
node_count, _files, parts = struct.unpack_from("<III", data, 24)
string_bytes = struct.unpack_from("<Q", data, 48)[0]
nodes_at = 128 + (parts + 1) * 32
strings_at = nodes_at + node_count * 64
assert strings_at + string_bytes == len(data), "unexpected manifest size"
nodes = []
for i in range(node_count):
    (size, offset, stored, _sum, _mtime, parent, name_off, partition, _mode,
     name_len, kind, codec, _flags) = struct.unpack_from("<QQQQqIIIIHBBB", data, nodes_at + 64 * i)
    name = data[strings_at + name_off:strings_at + name_off + name_len].decode()
    nodes.append((parent, name, offset, stored, partition, kind, codec))

def path(i):
    parts_ = []
    while i != 0:
        parts_.append(nodes[i][1])
        i = nodes[i][0]
    return "/".join(reversed(parts_))

for i, n in enumerate(nodes):
    if n[5] == 2 and path(i) == rel:
        pack = "part-bcast" if n[4] == parts else "part-%05d" % n[4]
        print(pack, n[2], n[3], ["raw", "zstd", "framed"][n[6]])
        sys.exit(0)
sys.exit("not found: " + rel)
