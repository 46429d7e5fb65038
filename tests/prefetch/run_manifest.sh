# Sourced by the script tests: runs every case of a manifest written by
# reference_orders.py through clairfs-order and compares line for line.
# Usage: run_manifest MANIFEST LABEL; returns non-zero when a case differs.
run_manifest() {
  local manifest=$1 label=$2 failed=0 count=0 line expected
  local -a fields
  while IFS= read -r line; do
    IFS=$'\t' read -r -a fields <<<"$line"
    expected=${fields[0]}
    count=$((count + 1))
    if ! "$CLAIRFS_BIN/clairfs-order" "${fields[@]:1}" >"$WORK/actual.txt" 2>"$WORK/stderr.txt"; then
      echo "FAIL [$label] clairfs-order exited non-zero: ${fields[*]:1}"
      cat "$WORK/stderr.txt"
      failed=$((failed + 1))
      continue
    fi
    if ! cmp -s "$expected" "$WORK/actual.txt"; then
      echo "FAIL [$label] differs from the reference: ${fields[*]:1}"
      diff "$expected" "$WORK/actual.txt" | head -10
      failed=$((failed + 1))
    fi
  done <"$manifest"
  echo "$label: $count cases, $failed failed"
  [ "$count" -gt 0 ] && [ "$failed" -eq 0 ]
}
