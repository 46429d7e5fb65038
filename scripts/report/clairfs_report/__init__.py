"""clairfs order reporter: tells the node's clairfsd the order a job's data loaders draw.

Loaded into every Python process of a job by scripts/report/sitecustomize.py. Importing this
package does nothing but define the import hook; install() puts it on sys.meta_path and
replaces builtins.open with clairfs_report.spare.open (no isatty round trip on the mounts). Only
when the job itself imports one of the _TARGETS modules (torch's DataLoader, Keras's adapters
of a Sequence / PyDataset, Keras's image_dataset_from_directory, tf.data's dataset_ops for
list_files) are the rest of the package imported and that module patched after it ran
(clairfs_report.torch_hooks, .keras_hooks, .idfd_hooks, .lf_hooks). It never imports torch, keras or tensorflow itself.
Contract and limits: docs/report.md. Off with CLAIRFS_REPORT=0.
"""
import os
import sys

# module -> (hooks module, what the failure line names)
_TARGETS = {
    "torch.utils.data.dataloader": ("torch_hooks", "torch"),
    # tf.keras 2: keras 2.13-2.15, keras <= 2.12, tf_keras (Keras 2 beside TF >= 2.16)
    "keras.src.engine.data_adapter": ("keras_hooks", "keras"),
    "keras.engine.data_adapter": ("keras_hooks", "keras"),
    "tf_keras.src.engine.data_adapter": ("keras_hooks", "keras"),
    # Keras 3
    "keras.src.trainers.data_adapters.py_dataset_adapter": ("keras_hooks", "keras"),
    "keras.src.trainers.epoch_iterator": ("keras_hooks", "keras"),
    # image_dataset_from_directory: tf.keras 2.13-2.15, keras <= 2.12, tf_keras, Keras 3
    "keras.src.utils.image_dataset": ("idfd_hooks", "keras"),
    "keras.utils.image_dataset": ("idfd_hooks", "keras"),
    "tf_keras.src.utils.image_dataset": ("idfd_hooks", "keras"),
    "keras.src.utils.image_dataset_utils": ("idfd_hooks", "keras"),
    # tf.data.Dataset.list_files
    "tensorflow.python.data.ops.dataset_ops": ("lf_hooks", "tensorflow"),
}


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
    """A sys.meta_path finder that answers only for the _TARGETS modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _TARGETS:
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
    hooks, what = _TARGETS[module.__name__]
    try:
        if hooks == "torch_hooks":
            from . import torch_hooks
            torch_hooks.patch(module)
        elif hooks == "idfd_hooks":
            from . import idfd_hooks
            idfd_hooks.patch(module)
        elif hooks == "lf_hooks":
            from . import lf_hooks
            lf_hooks.patch(module)
        else:
            from . import keras_hooks
            keras_hooks.patch(module)
            if module.__name__.endswith(("engine.data_adapter", "epoch_iterator")):
                # fit's readers: an image_dataset_from_directory iteration is reported when
                # fit starts reading its iterator
                from . import idfd_hooks
                idfd_hooks.patch_reader(module)
    except Exception as e:
        try:
            from . import guard
            guard.fail("patching %s: %s: %s" % (what, type(e).__name__, e))
        except Exception:
            pass


def install():
    """Installs the import hook once; patches at once the targets already imported."""
    if os.environ.get("CLAIRFS_REPORT", "1") == "0":
        return
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    try:
        from . import spare  # open() without the isatty round trip on the mounts
        spare.install()
    except Exception:
        pass
    for name in _TARGETS:
        module = sys.modules.get(name)
        if module is not None:
            _patch(module)
    sys.meta_path.insert(0, _Finder())
