#!/bin/bash
# clairfs-order against the real torchvision ImageFolder and torch samplers
# (DistributedSampler for many N, R, seed, epoch, drop_last; RandomSampler with
# a generator, alone and through DataLoader(generator=g)) on generated trees,
# line for line. Skips (77) only when /usr/bin/python3 cannot import torch.
set -u
PY=${CLAIRFS_PYTHON:-/usr/bin/python3}
HERE="$CLAIRFS_SRC/tests/prefetch"
if ! "$PY" -c 'import torch, torchvision' 2>/dev/null; then
  echo "SKIP: $PY cannot import torch and torchvision (Debian: python3-torch python3-torchvision)"
  exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-order-torch.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
. "$HERE/run_manifest.sh"
"$PY" "$HERE/reference_orders.py" trees "$WORK" || exit 1
"$PY" "$HERE/reference_orders.py" torch "$WORK" || exit 1
run_manifest "$WORK/torch.manifest" torch
