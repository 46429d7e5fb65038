"""What the order reporter costs a training process: a DataLoader whose samples
cost nothing (the index is the sample), so the loader's own overhead is all
there is, timed with the reporter off (CLAIRFS_REPORT=0) and on, alternately,
in fresh processes; the reporter talks to a sink that reads and discards.

  /usr/bin/python3 scripts/bench/report_cost.py [--files N] [--epochs E] [--rounds R]

Prints the median seconds per epoch of each and the difference per epoch and
per sample (docs/benchmarks.md keeps the results).
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = r"""
import os, sys, time, json
import torch
from torch.utils.data import DataLoader, RandomSampler

class Folder(torch.utils.data.Dataset):
    def __init__(self, root, n):
        self.samples = [(os.path.join(root, "c", "%d.jpg" % i), 0) for i in range(n)]
    def __len__(self):
        return len(self.samples)
    def __getitem__(self, i):
        return i

root, n, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
loader = DataLoader(Folder(root, n), batch_size=32, sampler=RandomSampler(range(n)))
times = []
for _ in range(epochs):
    t = time.perf_counter()
    for _ in loader:
        pass
    times.append(time.perf_counter() - t)
print(json.dumps(times))
"""


def sink(listener):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=lambda c=conn: [None for _ in iter(lambda: c.recv(1 << 20), b"")],
                         daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100000)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    name = "clairfs-report-bench.%d" % os.getpid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + name)
    listener.listen(16)
    threading.Thread(target=sink, args=(listener,), daemon=True).start()
    root = tempfile.mkdtemp(prefix="clairfs-report-bench.")
    os.makedirs(os.path.join(root, "c"))
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "scripts", "report"),
               CLAIRFS_REPORT_SOCKET="@" + name, CLAIRFS_REPORT_ROOT=root)
    got = {"off": [], "on": []}
    for r in range(a.rounds):
        for mode in ("off", "on"):
            e = dict(env, CLAIRFS_REPORT="0" if mode == "off" else "1")
            out = subprocess.run([sys.executable, "-c", CHILD, root, str(a.files), str(a.epochs)],
                                 env=e, check=True, capture_output=True, text=True)
            if "clairfs-report" in out.stderr:
                sys.exit("the reporter failed: " + out.stderr)
            got[mode] += eval(out.stdout)
    off, on = statistics.median(got["off"]), statistics.median(got["on"])
    print("DataLoader over %d samples costing nothing, batch 32, RandomSampler, 0 workers; "
          "%d rounds x %d epochs each, alternated, median per epoch:" % (a.files, a.rounds, a.epochs))
    print("  reporter off: %.4f s   on: %.4f s   cost: %.2f ms per epoch, %.2f us per sample"
          % (off, on, (on - off) * 1e3, (on - off) / a.files * 1e6))
    listener.close()


if __name__ == "__main__":
    main()
