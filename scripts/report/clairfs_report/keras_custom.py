"""A Keras Sequence (Keras 3: PyDataset) of the user's own: which files each batch opens.

Such a Sequence's __getitem__ is the user's code, so what batch b reads is known only by reading
it. Its table (tables.LEARNED, keyed by a fingerprint of the Sequence) is indexed by batch; each
batch's files are the opens under a mount that learn.watch() collects in the thread reading it
(fit's generator, or an enqueuer pool's get_index), learned and sent (TABLE_FILES) the first
time, compared after. clairfs_report.keras_hooks reports the epochs; this module only learns.
"""
import functools
import os
import threading

from . import channel, guard, learn, tables

_ATTR = "_clairfs_custom"  # Sequence attribute: its Custom


class Custom:
    """The learned table of one Sequence. `stale` once a batch opens other files than it did
    before (a Sequence that reshuffles its samples in on_epoch_end, or picks them at random) or
    a pass opened nothing under a mount (in-memory data, or opens that are not audit events):
    from then on it is not reported. `rooted` once a file was seen: its table's root is that
    file's mount. Thread-safe: pool threads learn while fit's thread reports."""

    def __init__(self, table):
        self.table = table
        self.stale = False
        self.rooted = False
        self.pid = os.getpid()  # learned in this process's threads only
        self._learned = {}  # batch -> frozenset of (root, rel)
        self._lock = threading.Lock()

    def learn(self, b, cur):
        """After batch b was read (record `cur` of learn.watch)."""
        files = list(dict.fromkeys(cur[2]))  # (root, rel) in first-open order
        with self._lock:
            if self.stale:
                return
            known = self._learned.get(b)
            if known is None:
                self._learned[b] = frozenset(files)
                if files:
                    if not self.rooted:  # its orders go where its files are read
                        self.table.roots, self.rooted = [files[0][0]], True
                    learn.send(self.table.key, [[None, b, files]])
            elif known != frozenset(files):
                self.stale = True

    def check(self):
        """At an epoch's draw: False when it is not to be reported (stale, or the batches read
        so far opened nothing on a mount: it becomes stale), else whether any batch is known
        (the first epoch, which learns, is not reported)."""
        with self._lock:
            if self._learned and not any(self._learned.values()):
                self.stale = True
            return not self.stale and bool(self._learned)

    def files_per_batch(self):
        """The batch size for its LOADER frame: the most files a batch opened (the daemon's
        read window counts files)."""
        with self._lock:
            return max(1, max((len(v) for v in self._learned.values()), default=1))


def of(seq):
    """The Custom of a Sequence fit reads, made on first use; None if it cannot be one (no
    length, no mount, its files elsewhere)."""
    c = getattr(seq, "__dict__", {}).get(_ATTR)
    if c is not None:
        return c
    if not channel.mounts():
        return None
    try:
        n = len(seq)
    except Exception:
        return None
    if not isinstance(n, int) or n <= 0 or n >= 1 << 32:
        return None
    table = tables.table_for(seq, lambda _: None)
    if table is None:
        return None
    for root in table.roots:
        channel.socket_name(root)  # read now, not from inside the audit hook
    c = seq.__dict__[_ATTR] = Custom(table)
    return c


def learning(c):
    """learn.watch() if batches of `c` (a Custom or None) are still learned here, else None."""
    if c is None or c.stale or c.pid != os.getpid():
        return None
    return guard.call(learn.watch)


_by_uid = {}  # an enqueuer's uid -> the Custom its pool reads
_uid_lock = threading.Lock()


def enqueued(uid, c):
    """Enqueuer `uid`'s pool reads Sequence `c`'s batches (get_index(uid, b) is batch b)."""
    with _uid_lock:
        for u in [u for u, x in _by_uid.items() if x is c]:
            del _by_uid[u]  # an earlier enqueuer of the same Sequence
        _by_uid[uid] = c


def wrap_get_index(module):
    """The enqueuers' get_index(uid, i) (seq[i] in a pool thread), learning batch i's files
    (threads only: a pool process learns nothing)."""
    orig = getattr(module, "get_index", None)
    if orig is None or getattr(orig, "_clairfs", False):
        return

    @functools.wraps(orig)
    def get_index(uid, i):
        c = _by_uid.get(uid)
        cur = learning(c) if not guard.off else None
        try:
            out = orig(uid, i)
        finally:
            if cur is not None:
                learn.unwatch()
        if cur is not None:
            guard.call(c.learn, i, cur)
        return out

    get_index._clairfs = True
    module.get_index = get_index
