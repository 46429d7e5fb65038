#!/bin/bash
# scripts/clairfs_order_file.py writes order files from real torch samplers
# (CLI: DistributedSampler over ImageFolder, paths and indices; module API:
# DataLoader(shuffle=True, generator=g) with a BatchSampler); clairfs-order
# --sampler order-file must print exactly what the real samplers yield.
# Skips (77) only when /usr/bin/python3 cannot import torch.
set -u
PY=${CLAIRFS_PYTHON:-/usr/bin/python3}
export PYTHONDONTWRITEBYTECODE=1  # keep the source tree clean
HERE="$CLAIRFS_SRC/tests/prefetch"
HELPER="$CLAIRFS_SRC/scripts/clairfs_order_file.py"
ORDER="$CLAIRFS_BIN/clairfs-order"
if ! "$PY" -c 'import torch, torchvision' 2>/dev/null; then
  echo "SKIP: $PY cannot import torch and torchvision (Debian: python3-torch python3-torchvision)"
  exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-order-file.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
"$PY" "$HERE/reference_orders.py" trees "$WORK" || exit 1
failed=0
check() {  # check NAME EXPECTED ACTUAL
  if cmp -s "$2" "$3"; then
    echo "ok   $1"
  else
    echo "FAIL $1"
    diff "$2" "$3" | head -10
    failed=$((failed + 1))
  fi
}

COMBOS=("small 3 5 0 2 0" "small 4 4294967299 1 3 1" "medium 2 0 0 1 1" "medium 5 7 3 2 0")

# Expected per combo and rank straight from torch, independent of the helper,
# all in one interpreter: expected.C.R = epochs start..start+E-1 of rank R.
"$PY" - "$WORK" "${COMBOS[@]}" <<'PYEOF' || exit 1
import os, sys
import torchvision
from torch.utils.data import DistributedSampler
work = sys.argv[1]
for c, combo in enumerate(sys.argv[2:]):
    tree, world, seed, start, epochs, drop = combo.split()
    root = os.path.join(work, tree)
    ds = torchvision.datasets.ImageFolder(root)
    paths = [os.path.relpath(p, root) for p, _ in ds.samples]
    for r in range(int(world)):
        s = DistributedSampler(ds, num_replicas=int(world), rank=r, seed=int(seed),
                               drop_last=drop == "1")
        with open(os.path.join(work, "expected.%d.%d" % (c, r)), "w") as f:
            for e in range(int(start), int(start) + int(epochs)):
                s.set_epoch(e)
                f.write("".join(paths[i] + "\n" for i in s))
PYEOF

for c in "${!COMBOS[@]}"; do
  read -r tree world seed start epochs drop <<<"${COMBOS[$c]}"
  root="$WORK/$tree"
  flags=(--root "$root" --sampler distributed --world-size "$world" --seed "$seed"
         --start-epoch "$start" --epochs "$epochs")
  [ "$drop" = 1 ] && flags+=(--drop-last)
  "$PY" "$HELPER" "${flags[@]}" -o "$WORK/order.paths" || exit 1
  with_indices=0
  if [ "$c" -lt 2 ]; then
    "$PY" "$HELPER" "${flags[@]}" --indices -o "$WORK/order.idx" || exit 1
    with_indices=1
  fi
  for ((r = 0; r < world; r++)); do
    exp="$WORK/expected.$c.$r"
    name="$tree world=$world seed=$seed start=$start epochs=$epochs drop_last=$drop rank=$r"
    "$ORDER" --sampler order-file --order-file "$WORK/order.paths" --rank $r >"$WORK/a" || exit 1
    check "paths     $name" "$exp" "$WORK/a"
    "$ORDER" --sampler order-file --order-file "$WORK/order.paths" --root "$root" --rank $r >"$WORK/a" || exit 1
    check "checked   $name" "$exp" "$WORK/a"
    if [ "$with_indices" = 1 ]; then
      "$ORDER" --sampler order-file --order-file "$WORK/order.idx" --root "$root" --rank $r >"$WORK/a" || exit 1
      check "indices   $name" "$exp" "$WORK/a"
    fi
    dflags=(--root "$root" --seed "$seed" --world-size "$world" --rank $r)
    [ "$drop" = 1 ] && dflags+=(--drop-last)
    : >"$WORK/a"
    for ((e = start; e < start + epochs; e++)); do "$ORDER" "${dflags[@]}" --epoch $e >>"$WORK/a"; done
    check "generated $name" "$exp" "$WORK/a"
  done
done

# Module API: a DataLoader with its own generator and a batch size, three epochs.
"$PY" - "$WORK/medium" "$WORK" "$CLAIRFS_SRC/scripts" <<'PYEOF' || exit 1
import os, sys
sys.path.insert(0, sys.argv[3])
import torch, torchvision
from torch.utils.data import DataLoader
import clairfs_order_file as cof
root, work = sys.argv[1], sys.argv[2]
ds = torchvision.datasets.ImageFolder(root)
paths = cof.dataset_paths(ds)
n = len(ds)
g = torch.Generator(); g.manual_seed(31)
loader = DataLoader(range(n), batch_size=7, shuffle=True, generator=g)
cof.write_order_file(os.path.join(work, "order.loader"), cof.sections_from_loader(loader, range(3), paths))
# The truth: iterate a twin loader for real (indices only; the dataset is range(n)).
g2 = torch.Generator(); g2.manual_seed(31)
twin = DataLoader(range(n), batch_size=7, shuffle=True, generator=g2)
with open(os.path.join(work, "expected.loader"), "w") as f:
    for e in range(3):
        f.write("".join(paths[int(i)] + "\n" for b in twin for i in b))
PYEOF
"$ORDER" --sampler order-file --order-file "$WORK/order.loader" >"$WORK/a" || exit 1
check "module API DataLoader(generator) 3 epochs" "$WORK/expected.loader" "$WORK/a"
"$ORDER" --root "$WORK/medium" --sampler torch-random --generator-seed 31 --loader-generator every-epoch --epochs 3 >"$WORK/a" || exit 1
check "torch-random --loader-generator every-epoch vs DataLoader" "$WORK/expected.loader" "$WORK/a"

# --factory builds each rank's sampler through user code; unrepresentable paths are refused.
cat >"$WORK/myfactory.py" <<'PYEOF'
from torch.utils.data import DistributedSampler
def make(dataset, rank, world_size):
    return DistributedSampler(dataset, num_replicas=world_size, rank=rank, seed=5)
PYEOF
PYTHONPATH="$WORK" "$PY" "$HELPER" --root "$WORK/small" --factory myfactory:make --world-size 3 \
  --epochs 2 -o "$WORK/order.factory" || exit 1
"$ORDER" --sampler order-file --order-file "$WORK/order.factory" --rank 1 >"$WORK/a" || exit 1
"$ORDER" --root "$WORK/small" --seed 5 --world-size 3 --rank 1 --epochs 2 >"$WORK/b" || exit 1
check "helper --factory vs generated" "$WORK/b" "$WORK/a"
if "$PY" - "$CLAIRFS_SRC/scripts" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
import clairfs_order_file as cof
for bad in ("#x.jpg", "a\nb.jpg", ""):
    try:
        cof.format_order_file({(0, 0): [bad]})
    except ValueError:
        continue
    sys.exit(1)
PYEOF
then echo "ok   helper refuses unrepresentable paths"; else echo "FAIL helper wrote an unrepresentable path"; failed=$((failed + 1)); fi

echo "order-file round trip: $failed failed"
[ "$failed" -eq 0 ]
