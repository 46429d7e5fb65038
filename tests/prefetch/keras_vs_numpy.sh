#!/bin/bash
# clairfs-order --sampler keras against a Python re-implementation of Keras'
# index_directory that shuffles with the real numpy RandomState (tensorflow and
# keras are not installable here). Several seeds, versions 2.13/2.15/3.0/3.3,
# validation splits, labels=None, shuffle off. Skips (77) without numpy.
set -u
PY=${CLAIRFS_PYTHON:-/usr/bin/python3}
HERE="$CLAIRFS_SRC/tests/prefetch"
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  echo "SKIP: $PY cannot import numpy (Debian: python3-numpy)"
  exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-order-keras.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
. "$HERE/run_manifest.sh"
"$PY" "$HERE/reference_orders.py" trees "$WORK" || exit 1
"$PY" "$HERE/reference_orders.py" keras "$WORK" || exit 1
run_manifest "$WORK/keras.manifest" keras
