#!/usr/bin/env bash
# Runs one of the reporter's unittest files (report_test.py unless named) with Debian's
# python3 (the one with torch).
set -uo pipefail
PY=/usr/bin/python3
$PY -c "import torch, torchvision, PIL" 2>/dev/null ||
  { echo "FAIL: python3-torch/torchvision/pil not importable by $PY (setup installs them)"; exit 1; }
cd "$CLAIRFS_SRC" || exit 1
exec $PY "$CLAIRFS_SRC/tests/report/${1:-report_test.py}" -v
