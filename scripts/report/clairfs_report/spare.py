"""Python's open() without its isatty round trip, for files on a clairfs mount.

With buffering left at -1, CPython's open() asks the new file isatty() (an
ioctl, which FUSE sends to the daemon: one round trip per file) to choose line
buffering, and then takes the file's st_blksize as the buffer size. A regular
file is never a terminal, and clairfs gives every file the same st_blksize, so
for a path on a clairfs mount this open() passes that buffer size itself: the
file object is the same one CPython would build (same class, same buffer, no
line buffering), and the ioctl is not made. Anything else goes to io.open as
it is; an error of io.open is the caller's as always.

install() replaces builtins.open (io.open stays as it is). Thread-safe: the
mount list is read once; a race reads it twice.
"""
import builtins
import functools
import io
import os

_real = io.open
_roots = None  # ((root + "/", buffer size), ...)


def _mounts():
    global _roots
    if _roots is None:
        from . import channel  # channel.mounts() reads mountinfo with io.open
        found = []
        for root in channel.mounts():
            try:
                size = os.stat(root).st_blksize
            except OSError:
                continue
            found.append((root.rstrip("/") + "/", size if size > 1 else io.DEFAULT_BUFFER_SIZE))
        _roots = tuple(found)
    return _roots


def _buffer_for(file):
    """The buffer size CPython would choose for `file` on a clairfs mount, else -1."""
    if isinstance(file, int):
        return -1
    path = os.fspath(file)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path.startswith("/") or "/.." in path:
        path = os.path.abspath(path)
    for prefix, size in _mounts():
        if path.startswith(prefix):
            return size
    return -1


@functools.wraps(_real)
def open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True,
         opener=None):
    if buffering == -1:
        try:
            size = _buffer_for(file)
        except Exception:  # a path io.open will judge; the choice stays CPython's
            size = -1
        if size > 0:
            buffering = size
    return _real(file, mode, buffering, encoding, errors, newline, closefd, opener)


def install():
    if builtins.open is _real:
        builtins.open = open
