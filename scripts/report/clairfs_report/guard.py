"""The reporter's one failure rule: the first failure turns it off, with one line on stderr.

Every hook body runs inside call(); after fail() every hook passes everything through.
Single-thread use is the norm (loader hooks run in the thread that iterates); a race can at
worst print the line twice. State is inherited by forked children.
"""
import sys

off = False


def fail(reason):
    global off
    if off:
        return
    off = True
    try:
        sys.stderr.write("clairfs-report: disabled: %s\n" % reason)
        sys.stderr.flush()
    except Exception:
        pass


def call(fn, *args):
    """fn(*args), or None when off or when fn raises (which turns the reporter off)."""
    if off:
        return None
    try:
        return fn(*args)
    except Exception as e:
        fail("%s: %s: %s" % (getattr(fn, "__name__", "hook"), type(e).__name__, e))
        return None
