#!/usr/bin/env bash
# Runs the reporter's unittest suite with Debian's python3 (the one with torch).
set -uo pipefail
PY=/usr/bin/python3
$PY -c "import torch, torchvision, PIL" 2>/dev/null ||
  { echo "SKIP: python3-torch/torchvision/pil not importable by $PY"; exit 77; }
cd "$CLAIRFS_SRC" || exit 1
exec env PYTHONPATH="$CLAIRFS_SRC/scripts/report" $PY "$CLAIRFS_SRC/tests/report/report_test.py" -v
