"""Where the daemons are (clairfs mounts and their control files) and the connections to them.

mounts(): the clairfs mounts of this process, from /proc/self/mountinfo (type fuse.clairfs),
or the one stand-in CLAIRFS_REPORT_ROOT + CLAIRFS_REPORT_SOCKET for tests. locate(path) puts
a file under its mount. send(root, frames) writes to that mount's daemon over one connection
per process and daemon, opened lazily (HELLO first) and reopened in a forked child. A failed
connect or send turns the reporter off for good (guard.fail). Single-thread use.
"""
import io
import os
import socket
import sys

from . import guard, wire

SEND_TIMEOUT = 1.0  # seconds; a stuck daemon costs the job at most this, once

_mounts = None      # [root, ...] (real paths, longest first)
_sockets = {}       # root -> abstract socket name or None
_dirs = {}          # real directory -> (root, relative directory) or None
_conns = {}         # socket name -> socket (of _conn_pid)
_conn_pid = None
hello_context = {}  # rank/world_size from a DistributedSampler (torch_hooks); framework


def _unescape(field):
    # mountinfo escapes space, tab, newline and backslash as \ooo
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and len(field[i + 1:i + 4]) == 3 and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text):
    """Mount points of type fuse.clairfs in mountinfo text."""
    roots = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            sep = fields.index("-")
        except ValueError:
            continue
        if len(fields) > sep + 1 and fields[sep + 1] == "fuse.clairfs" and len(fields) > 4:
            roots.append(_unescape(fields[4]))
    return roots


def mounts():
    global _mounts
    if _mounts is None:
        root = os.environ.get("CLAIRFS_REPORT_ROOT")
        name = os.environ.get("CLAIRFS_REPORT_SOCKET")
        if root and name:
            roots = [os.path.realpath(root)]
            _sockets[roots[0]] = name
        else:
            try:
                with io.open("/proc/self/mountinfo", errors="surrogateescape") as f:
                    roots = parse_mountinfo(f.read())
            except OSError:
                roots = []
        _mounts = sorted(set(roots), key=len, reverse=True)
    return _mounts


def _in_root(real):
    for root in _mounts:
        if real == root:
            return root, ""
        if real.startswith(root) and (root == "/" or real[len(root)] == "/"):
            return root, real[len(root):].lstrip("/")
    return None


def locate(path):
    """(mount root, path relative to it) for a file, or None if it is under no clairfs mount.

    Directories are resolved (realpath) once and cached, the file name is taken as is.
    """
    if not mounts():
        return None
    path = os.path.abspath(os.fspath(path))
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    d, base = os.path.split(path)
    where = _dirs.get(d, False)
    if where is False:
        where = _dirs[d] = _in_root(os.path.realpath(d))
    if where is None:
        return None
    return where[0], (where[1] + "/" + base if where[1] else base)


def locate_dir(path):
    """(mount root, directory relative to it, '' for the root itself) or None: not on a mount."""
    if not mounts():
        return None
    path = os.path.abspath(os.fspath(path))
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    return _in_root(os.path.realpath(path))


def socket_name(root):
    """The daemon's socket for a mount, from MOUNT/.clairfs/report (read once), or None."""
    if root not in _sockets:
        name = None
        try:
            with open(os.path.join(root, ".clairfs", "report")) as f:
                lines = f.read().splitlines()
            if len(lines) >= 2 and lines[0].split() == ["clairfs-report", "1"] \
                    and lines[1].startswith("socket "):
                name = lines[1][len("socket "):].strip()
        except OSError:
            pass
        _sockets[root] = name
    return _sockets[root]


def _first_env(*names):
    for n in names:
        v = os.environ.get(n)
        if v not in (None, "") and v.lstrip("-").isdigit():
            return int(v)
    return None


def _slurm_tasks_on_node():
    spec, node = os.environ.get("SLURM_TASKS_PER_NODE"), _first_env("SLURM_NODEID")
    if not spec or node is None:
        return None
    counts = []
    for part in spec.split(","):  # "4(x2),3" -> [4, 4, 3]
        if "(x" in part:
            n, rep = part.rstrip(")").split("(x")
            counts += [int(n)] * int(rep)
        else:
            counts.append(int(part))
    return counts[node] if node < len(counts) else None


def hello_fields(role):
    fields = {"version": 1, "role": role, "pid": os.getpid()}
    rank, world = hello_context.get("rank"), hello_context.get("world_size")
    if rank is None:
        dist = sys.modules.get("torch.distributed")
        try:
            if dist is not None and dist.is_available() and dist.is_initialized():
                rank, world = dist.get_rank(), dist.get_world_size()
        except Exception:
            pass
    if rank is None:
        rank = _first_env("RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID")
        world = _first_env("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS")
    local = _first_env("LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                       "SLURM_LOCALID")
    local_size = _first_env("LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")
    if local_size is None and os.environ.get("SLURM_LOCALID"):
        local_size = _slurm_tasks_on_node()
    for k, v in (("rank", rank), ("world_size", world), ("local_rank", local),
                 ("local_size", local_size)):
        if v is not None:
            fields[k] = v
    fields["framework"] = hello_context.get("framework", "torch")
    return fields


def _role():
    w = sys.modules.get("torch.utils.data._utils.worker")
    info = getattr(w, "_worker_info", None) if w is not None else None
    return "worker" if info is not None else "main"


def _connect(name):
    addr = "\0" + name[1:] if name.startswith("@") else name
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(SEND_TIMEOUT)
        s.connect(addr)
        s.sendall(wire.hello(hello_fields(_role())), socket.MSG_NOSIGNAL)
    except Exception:
        s.close()
        raise
    return s


def send(root, frames):
    """Writes frames to the daemon of mount `root`. False if there is none to write to."""
    global _conn_pid
    if guard.off:
        return False
    name = socket_name(root)
    if name is None:
        return False
    pid = os.getpid()
    if _conn_pid != pid:  # forked: the parent's connections are the parent's
        for s in _conns.values():
            try:
                s.close()  # the child's copy of the descriptor only
            except Exception:
                pass
        _conns.clear()
        _conn_pid = pid
    try:
        s = _conns.get(name)
        if s is None:
            s = _conns[name] = _connect(name)
        for f in frames:
            s.sendall(f, socket.MSG_NOSIGNAL)
    except Exception as e:
        guard.fail("daemon %s: %s" % (name, e.strerror if isinstance(e, OSError) and e.strerror
                                       else type(e).__name__))
        return False
    return True
