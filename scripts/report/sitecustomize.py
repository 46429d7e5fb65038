"""clairfs: loads the order reporter (clairfs_report) into every Python process of a job.

clairfs-run puts this directory on PYTHONPATH. Importing it only installs a lazy import hook;
see docs/report.md, "What the reporter observes". Then it runs the sitecustomize this one
shadows (the next one on sys.path, e.g. Debian's), so a site's own customisation still runs.
Nothing here may raise: a failing reporter must never stop a job from starting.
"""


def _install_reporter():
    try:
        import clairfs_report
        clairfs_report.install()
    except Exception:
        pass


def _chain():
    """Executes the next sitecustomize on sys.path after our own directory, if any."""
    import importlib.machinery
    import importlib.util
    import os
    import sys
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    entries = []
    seen_ours = False
    for entry in sys.path:
        if not isinstance(entry, str):
            continue
        try:
            real = os.path.realpath(entry or os.getcwd())
        except OSError:
            continue
        if real == here:
            seen_ours = True
            continue
        if seen_ours:
            entries.append(entry)
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", entries)
    if spec is None or spec.loader is None or not spec.origin:
        return
    # Under its own name the module would replace ours in sys.modules; run it as a sibling.
    spec = importlib.util.spec_from_file_location("_clairfs_chained_sitecustomize", spec.origin)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)


_install_reporter()
try:
    _chain()
except Exception as e:  # the chained file's own error: report it as site.py would
    import sys
    sys.stderr.write("Error in sitecustomize (chained by clairfs); set PYTHONVERBOSE for "
                     "traceback:\n%s: %s\n" % (type(e).__name__, e))
