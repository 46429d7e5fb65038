#!/usr/bin/env bash
# The order reporter's Keras side against the real Keras of both lines (tf.keras 2 in the
# tf-keras2 venv, Keras 3 in tf-current) and a fake daemon (keras_test.py; a Sequence of the
# job's own: keras_custom_test.py). The harness runs
# under Debian's python3 (PIL makes the images); the jobs under each venv's python.
# A missing venv skips (77), or fails when CI=true (venvs_lib.sh).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../tf/venvs_lib.sh" tf-keras2 tf-current
PY=/usr/bin/python3
$PY -c "import PIL" 2>/dev/null || { echo "FAIL: python3-pil not importable by $PY"; exit 1; }
cd "$CLAIRFS_SRC" || exit 1
export CLAIRFS_ORDER=${CLAIRFS_ORDER:-${CLAIRFS_BIN:+$CLAIRFS_BIN/clairfs-order}}
pythons=("$VENVS/tf-keras2/bin/python" "$VENVS/tf-current/bin/python")
$PY "$HERE/keras_test.py" -v "${pythons[@]}" || fail=1
$PY "$HERE/keras_custom_test.py" -v "${pythons[@]}" || fail=1
exit ${fail:-0}
