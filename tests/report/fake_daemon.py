"""A stand-in for clairfsd's report channel: an abstract Unix socket decoding wire protocol v1
(docs/report.md) strictly. Any malformed frame is recorded in `errors` (tests fail on it).
Thread-safe: one thread per connection, results under `lock`.
"""
import os
import socket
import struct
import threading

MAX_PAYLOAD = 16 << 20
# SETTINGS keys the daemon knows (--sampler keras); any other is an error there.
SETTINGS_KEYS = {"sampler", "root", "rank", "world_size", "seed", "no-shuffle", "global-seed",
                 "keras-version", "batch-size", "validation-split", "subset", "labels",
                 "class-names", "follow-links",
                 # tf-list-files
                 "glob", "shard", "buffer-size", "no-reshuffle", "shard-before-shuffle",
                 "repeat", "repeat-before-shuffle", "no-repeat-fusion"}


class FakeDaemon:
    def __init__(self, close_after_orders=None):
        self.name = "@clairfs-report-test.%d.%s" % (os.getpid(), os.urandom(8).hex())
        self.close_after_orders = close_after_orders
        self.lock = threading.Lock()
        self.errors, self.hellos = [], []
        self.paths = {}     # table -> [path, ...]
        self.files = {}     # table or alias -> {index: [path, ...]}
        self.aliases = {}   # alias -> table
        self.loaders = {}   # (pid, stream) -> {"batch_size": ..., ...} (LOADER)
        self.orders = {}    # (pid, table, stream, epoch) -> [index, ...] (complete segments)
        self.more_segments = 0  # segments that were more of an epoch already complete
        self.guesses = {}   # (pid, table, stream, epoch) -> [index, ...] (the latest GUESS)
        self._guess_partial = {}
        self._more_seen = set()
        self.settings = {}  # (pid, stream) -> {key: value} (SETTINGS)
        self.epochs = {}    # (pid, stream) -> [epoch, ...] (EPOCH, in arrival order)
        self.frames = 0
        self._partial = {}
        self._orders_seen = 0
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind("\0" + self.name[1:])
        self._sock.listen(64)
        self._threads = []
        self._stop = False
        self._sentinel = threading.Event()
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def close(self):
        self._stop = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    def wait_idle(self, timeout=10):
        """After the job exited: serves what is still queued (accept backlog included)."""
        # Accept is FIFO: once our own sentinel connection is accepted, so is the backlog.
        self._sentinel.clear()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect("\0" + self.name[1:])
            self._sentinel.wait(timeout)
        for t in list(self._threads):
            t.join(timeout)

    def _accept(self):
        while not self._stop:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            if struct.unpack("3i", creds)[0] == os.getpid():  # wait_idle's sentinel
                conn.close()
                self._sentinel.set()
                continue
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _error(self, msg):
        with self.lock:
            self.errors.append(msg)

    def _serve(self, conn):
        hello = None
        with conn:
            f = conn.makefile("rb")
            while True:
                head = f.read(4)
                if not head:
                    return
                if len(head) < 4:
                    return self._error("truncated length")
                (n,) = struct.unpack("<I", head)
                if n == 0 or n > MAX_PAYLOAD:
                    return self._error("payload of %d bytes" % n)
                p = f.read(n)
                if len(p) != n:
                    return self._error("truncated payload")
                try:
                    hello = self._frame(p, hello)
                except Exception as e:
                    return self._error("%s: %r" % (type(e).__name__, e))
                with self.lock:
                    self.frames += 1
                    closing = (self.close_after_orders is not None
                               and self._orders_seen >= self.close_after_orders)
                if closing:
                    return

    def _frame(self, p, hello):
        t, body = p[0], p[1:]
        if hello is None:
            if t != 1:
                raise ValueError("first frame of type %d, not HELLO" % t)
            fields = dict(line.split("=", 1) for line in body.decode().splitlines())
            if fields.get("version") != "1":
                raise ValueError("version %r" % fields.get("version"))
            with self.lock:
                self.hellos.append(fields)
            return fields
        pid = int(hello["pid"])
        if t == 1:
            raise ValueError("second HELLO")
        if t == 2:
            table, first = struct.unpack_from("<QI", body)
            paths = _paths(body[12:])
            with self.lock:
                have = self.paths.setdefault(table, [])
                if first != len(have):
                    raise ValueError("TABLE_PATHS first %d after %d" % (first, len(have)))
                have += paths
        elif t == 3:
            (table,) = struct.unpack_from("<Q", body)
            pos, recs = 8, {}
            while pos < len(body):
                if pos + 8 > len(body):
                    raise ValueError("truncated record")
                index, count = struct.unpack_from("<II", body, pos)
                pos += 8
                files = []
                for _ in range(count):
                    end = body.index(b"\0", pos)  # ValueError past the body
                    files.append(body[pos:end].decode())
                    pos = end + 1
                recs[index] = files
            with self.lock:
                self.files.setdefault(table, {}).update(recs)
        elif t == 4:
            if len(body) != 16:
                raise ValueError("ALIAS of %d bytes" % len(body))
            alias, table = struct.unpack("<QQ", body)
            with self.lock:
                self.aliases[alias] = table
        elif t in (5, 9):  # ORDER, GUESS
            if len(body) < 25 or (len(body) - 25) % 4:
                raise ValueError("ORDER of %d bytes" % len(body))
            table, stream, epoch, last = struct.unpack_from("<QQQB", body)
            if last not in (0, 1):
                raise ValueError("last=%d" % last)
            idx = list(struct.unpack_from("<%dI" % ((len(body) - 25) // 4), body, 25))
            key = (pid, table, stream, epoch)
            if t == 9:
                with self.lock:
                    self._guess_partial.setdefault(key, []).extend(idx)
                    if last:
                        self.guesses[key] = self._guess_partial.pop(key)
                return hello
            with self.lock:
                seg = self._partial.setdefault(key, [])
                seg += idx
                if last:
                    # a second segment of an epoch is more of it (docs/report.md)
                    self.orders[key] = self.orders.get(key, []) + self._partial.pop(key)
                    self.more_segments += key in self._more_seen
                    self._more_seen.add(key)
                    self._orders_seen += 1
        elif t == 6:
            if len(body) < 8:
                raise ValueError("LOADER of %d bytes" % len(body))
            (stream,) = struct.unpack_from("<Q", body)
            fields = dict(line.split("=", 1) for line in body[8:].decode().splitlines())
            shape = {k: int(fields[k]) for k in ("batch_size", "num_workers", "prefetch_factor")}
            with self.lock:
                self.loaders[(pid, stream)] = shape
        elif t == 7:
            if len(body) < 8:
                raise ValueError("SETTINGS of %d bytes" % len(body))
            (stream,) = struct.unpack_from("<Q", body)
            fields = {}
            for line in body[8:].decode("utf-8", "surrogateescape").split("\n")[:-1]:
                k, v = line.split("=", 1)
                if k not in SETTINGS_KEYS:
                    raise ValueError("SETTINGS key %r" % k)
                if k in fields:
                    raise ValueError("SETTINGS key %r twice" % k)
                fields[k] = v
            if not body.endswith(b"\n"):
                raise ValueError("SETTINGS text not ending in a newline")
            if fields.get("sampler") not in ("keras", "tf-list-files"):
                raise ValueError("SETTINGS sampler %r" % fields.get("sampler"))
            with self.lock:
                if (pid, stream) in self.settings:
                    raise ValueError("SETTINGS of stream %d twice" % stream)
                self.settings[(pid, stream)] = fields
        elif t == 8:
            if len(body) != 16:
                raise ValueError("EPOCH of %d bytes" % len(body))
            stream, epoch = struct.unpack("<QQ", body)
            with self.lock:
                if (pid, stream) not in self.settings:
                    raise ValueError("EPOCH of stream %d before its SETTINGS" % stream)
                have = self.epochs.setdefault((pid, stream), [])
                if have and epoch <= have[-1]:
                    raise ValueError("EPOCH %d after %d" % (epoch, have[-1]))
                have.append(epoch)
        else:
            raise ValueError("unknown frame type %d" % t)
        return hello


def _paths(data):
    if not data:
        return []
    if not data.endswith(b"\0"):
        raise ValueError("path without NUL")
    return [p.decode() for p in data[:-1].split(b"\0")]
