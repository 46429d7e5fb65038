"""clairfs order reporter: tells the node's clairfsd the order a job's data loaders draw.

Loaded into every Python process of a job by scripts/report/sitecustomize.py. Importing this
package does nothing but define the import hook; install() puts it on sys.meta_path and
replaces builtins.open with clairfs_report.spare.open (no isatty round trip on the mounts). Only
when the job itself imports torch.utils.data.dataloader are the rest of the package imported
and torch's loader patched (clairfs_report.torch_hooks). It never imports torch itself.
Contract and limits: docs/report.md. Off with CLAIRFS_REPORT=0.
"""
import os
import sys

_TARGET = "torch.utils.data.dataloader"


class _PatchingLoader:
    """Runs the real loader of the target module, then patches the module."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        # Later readers (inspect, reload) see the real loader.
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        _patch(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _Finder:
    """A sys.meta_path finder that answers only for torch.utils.data.dataloader."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _TARGET:
            return None
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                        spec.loader = _PatchingLoader(spec.loader)
                    return spec
        except Exception:
            pass
        return None


def _patch(module):
    try:
        from . import torch_hooks
        torch_hooks.patch(module)
    except Exception as e:
        try:
            from . import guard
            guard.fail("patching torch: %s: %s" % (type(e).__name__, e))
        except Exception:
            pass


def install():
    """Installs the import hook once; patches at once if the loader is already imported."""
    if os.environ.get("CLAIRFS_REPORT", "1") == "0":
        return
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    try:
        from . import spare  # open() without the isatty round trip on the mounts
        spare.install()
    except Exception:
        pass
    module = sys.modules.get(_TARGET)
    if module is not None:
        _patch(module)
        return
    sys.meta_path.insert(0, _Finder())
