"""Frames of wire protocol v1 (docs/report.md): each returns the whole frame, length included.

Pure functions, thread-safe. Indices go out as array('I') bytes, never per-index packing.
"""
import os
import struct
import sys
from array import array

HELLO, TABLE_PATHS, TABLE_FILES, ALIAS, ORDER, LOADER, SETTINGS, EPOCH, GUESS = range(1, 10)
MAX_PAYLOAD = 16 << 20
ORDER_CHUNK = 1 << 20  # indices per ORDER frame (4 MiB of payload)
PATHS_CHUNK = 8 << 20  # bytes of paths per TABLE_PATHS frame

_LEN = struct.Struct("<I")
_SWAP = sys.byteorder != "little"
if array("I").itemsize != 4:  # not on Linux/glibc; refuse rather than send garbage
    raise ImportError("array('I') is not 32-bit here")


def frame(payload):
    if len(payload) > MAX_PAYLOAD:
        raise ValueError("frame of %d bytes" % len(payload))
    return _LEN.pack(len(payload)) + payload


def hello(fields):
    text = "".join("%s=%s\n" % (k, v) for k, v in fields.items())
    return frame(bytes([HELLO]) + text.encode())


def path_bytes(path):
    """A relative path, NUL-terminated; '' stands for no file."""
    b = os.fsencode(path)
    if b"\0" in b:
        raise ValueError("NUL in a path")
    return b + b"\0"


def table_paths(table, paths):
    """TABLE_PATHS frames for entries 0.. of `table`; paths are encoded entries (path_bytes)."""
    frames, first, start, size = [], 0, 0, 0
    for i, p in enumerate(paths):
        if size + len(p) > PATHS_CHUNK and i > start:
            frames.append(_paths_frame(table, start, paths[start:i]))
            start, size = i, 0
        size += len(p)
    if start < len(paths) or not paths:
        frames.append(_paths_frame(table, start, paths[start:]))
    return frames


def _paths_frame(table, first, chunk):
    return frame(struct.pack("<BQI", TABLE_PATHS, table, first) + b"".join(chunk))


def table_files(table, records):
    """records: [(index, [encoded path, ...]), ...] -> one or more TABLE_FILES frames."""
    frames, parts, size = [], [], 9
    for index, paths in records:
        rec = struct.pack("<II", index, len(paths)) + b"".join(paths)
        if parts and size + len(rec) > MAX_PAYLOAD:
            frames.append(frame(struct.pack("<BQ", TABLE_FILES, table) + b"".join(parts)))
            parts, size = [], 9
        parts.append(rec)
        size += len(rec)
    if parts:
        frames.append(frame(struct.pack("<BQ", TABLE_FILES, table) + b"".join(parts)))
    return frames


def alias(key, table):
    return frame(struct.pack("<BQQ", ALIAS, key, table))


def loader(stream, batch_size, num_workers, prefetch_factor):
    """LOADER: the shape of loader `stream` (how far out of order its opens may come)."""
    text = "batch_size=%d\nnum_workers=%d\nprefetch_factor=%d\n" % (
        batch_size, num_workers, prefetch_factor)
    return frame(struct.pack("<BQ", LOADER, stream) + text.encode())


def order(table, stream, epoch, indices, kind=ORDER):
    """indices: an array('I') of the whole epoch -> ORDER frames, last=1 on the final one.
    kind=GUESS: the same as GUESS frames (the epoch's likely order, until its ORDER)."""
    if _SWAP:
        indices = array("I", indices)
        indices.byteswap()
    n = len(indices)
    frames = []
    for start in range(0, max(n, 1), ORDER_CHUNK):
        end = min(n, start + ORDER_CHUNK)
        head = struct.pack("<BQQQB", kind, table, stream, epoch, 1 if end == n else 0)
        frames.append(frame(head + indices[start:end].tobytes()))
    return frames


def settings(stream, fields):
    """SETTINGS: the sampler settings of stream `stream`; fields: [(key, value), ...] in order.

    Values are text (str, surrogate escapes allowed: a path's undecodable bytes go out as is).
    """
    text = "".join("%s=%s\n" % (k, v) for k, v in fields)
    return frame(struct.pack("<BQ", SETTINGS, stream) + text.encode("utf-8", "surrogateescape"))


def epoch(stream, number):
    """EPOCH: the dataset of SETTINGS `stream` starts its iteration number `number` (0 first)."""
    return frame(struct.pack("<BQQ", EPOCH, stream, number))
