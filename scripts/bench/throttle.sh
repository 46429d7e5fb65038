# Sourced by the benchmarks: an honest stand-in for a shared parallel file
# system on one machine (REFERENCE.md section 5): a file system on its own
# loop device, read-throttled for every process by a cgroup-v1 blkio rule.
#
#   pfs_setup DIR SIZE_GIB MBPS IOPS   mounts DIR/pfs, sets PFS_MNT, PFS_CGROUP
#   pfs_throttle_writes                throttles writes to it too (same MBPS and IOPS)
#   pfs_enter                          moves this shell (and children) into the throttle
#   pfs_teardown                       unmounts and removes everything
#   drop_caches                        sync + drop the page cache
#   bench_workspace NAME GIB MBPS IOPS  a work directory $W holding the stand-in, removed on
#                                      exit with any daemons started as $launcher (stop_ranks)
# pfs_setup returns 77 with a reason when root, loop devices or blkio are missing.

pfs_setup() {
  local dir=$1 gib=$2 mbps=$3 iops=$4
  [[ $(id -u) -eq 0 ]] || { echo "throttle: needs root"; return 77; }
  [[ -d /sys/fs/cgroup/blkio ]] || { echo "throttle: no cgroup-v1 blkio controller"; return 77; }
  command -v losetup >/dev/null || { echo "throttle: no losetup"; return 77; }
  mkdir -p "$dir/pfs"
  truncate -s "${gib}G" "$dir/pfs.img"
  mkfs.ext4 -q -F "$dir/pfs.img" || return 1
  PFS_LOOP=$(losetup -f --show "$dir/pfs.img") || { echo "throttle: no free loop device"; return 77; }
  mount "$PFS_LOOP" "$dir/pfs" || return 1
  PFS_MNT=$dir/pfs
  local majmin
  majmin=$(lsblk -dno MAJ:MIN "$PFS_LOOP" | tr -d ' ')
  PFS_CGROUP=/sys/fs/cgroup/blkio/clairfs-pfs-$$
  mkdir -p "$PFS_CGROUP"
  echo "$majmin $((mbps * 1000000))" >"$PFS_CGROUP/blkio.throttle.read_bps_device"
  echo "$majmin $iops" >"$PFS_CGROUP/blkio.throttle.read_iops_device"
  PFS_DESC="ext4 on $PFS_LOOP, reads throttled to $mbps MB/s and $iops IOPS (cgroup v1 blkio)"
  PFS_MBPS=$mbps PFS_IOPS=$iops
}

# cgroup v1 throttles the writes a process of the cgroup issues itself: its
# fsync (and O_DIRECT) writes, not the kernel's background writeback of dirty
# pages, so a buffered write lands in the page cache at memory speed and pays
# the throttle when it is fsynced.
pfs_throttle_writes() {
  local majmin
  majmin=$(lsblk -dno MAJ:MIN "$PFS_LOOP" | tr -d ' ')
  echo "$majmin $((PFS_MBPS * 1000000))" >"$PFS_CGROUP/blkio.throttle.write_bps_device"
  echo "$majmin $PFS_IOPS" >"$PFS_CGROUP/blkio.throttle.write_iops_device"
  PFS_DESC="ext4 on $PFS_LOOP, reads and fsynced writes throttled to $PFS_MBPS MB/s and $PFS_IOPS IOPS (cgroup v1 blkio)"
}

pfs_enter() { echo $$ >"$PFS_CGROUP/cgroup.procs"; }

pfs_teardown() {
  if [[ -n ${PFS_CGROUP:-} ]]; then
    echo $$ >/sys/fs/cgroup/blkio/cgroup.procs
    rmdir "$PFS_CGROUP" 2>/dev/null || true
  fi
  # A process still inside it (a daemon being stopped) makes the unmount lazy.
  if [[ -n ${PFS_MNT:-} ]]; then umount "$PFS_MNT" 2>/dev/null || umount -l "$PFS_MNT" 2>/dev/null || true; fi
  if [[ -n ${PFS_LOOP:-} ]]; then losetup -d "$PFS_LOOP" 2>/dev/null || true; fi
  PFS_CGROUP="" PFS_MNT="" PFS_LOOP=""
}

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

bench_workspace() {
  W=$(mktemp -d "${TMPDIR:-/tmp}/clairfs-bench-$1.XXXXXX")
  MPIEXEC=$(command -v mpiexec.mpich || command -v mpiexec)
  launcher=""
  trap bench_cleanup EXIT
  pfs_setup "$W" "$2" "$3" "$4" || {
    local rc=$?
    [[ $rc == 77 ]] && echo "SKIP: throttled source unavailable"
    exit "$rc"
  }
}

# Stops the daemons started in the background as $launcher (an mpiexec).
stop_ranks() {
  [[ -n ${launcher:-} ]] || return 0
  kill -TERM "$launcher" 2>/dev/null
  wait "$launcher" 2>/dev/null || true
  launcher=""
}

bench_cleanup() {
  stop_ranks
  for m in "$W"/mnt*; do fusermount3 -u -z "$m" 2>/dev/null || true; done
  pfs_teardown
  rm -rf "$W"
}
