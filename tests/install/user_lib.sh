# Sourced by the install tests: they run as a user without root, the way a
# cluster's user installs clairfs. Creates that user (useradd, removed with
# its home on exit), makes /dev/fuse usable by it for the test's length (a
# site's job: docs/install.md) and gives `as_user CMD...`, which runs CMD
# in the user's home with an environment of its own (PATH=/usr/bin:/bin, no
# build tree on it). Needs root to set this up; skips without it, except
# under CI=true, where a skip would hide a test that never ran.
# usage: source user_lib.sh NAME  (sets U, H: the user and its home)
need() {
  if [[ ${CI:-} == true ]]; then
    echo "FAIL: $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
[[ $(id -u) -eq 0 ]] || need "creating a test user needs root"
command -v useradd >/dev/null && command -v runuser >/dev/null || need "useradd or runuser missing"
[[ -c /dev/fuse ]] || need "/dev/fuse missing"
fusermount=$(command -v fusermount3) || need "fusermount3 missing (apt-get install fuse3)"
[[ -u $fusermount ]] || need "$fusermount is not setuid root: an unprivileged user cannot mount"
BUILD=${CLAIRFS_BIN%/bin}

U=clairfs-t$$
H=/home/$U
fuse_mode=$(stat -c %a /dev/fuse)
user_cleanup() {
  # A daemon of the user still running keeps userdel from removing it.
  pkill -KILL -u "$U" 2>/dev/null
  sleep 0.5
  for m in $(awk -v h="$H/" 'index($2, h) == 1 {print $2}' /proc/mounts); do
    fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m"
  done
  chmod "$fuse_mode" /dev/fuse
  rm -f "$BUILD/install_manifest.txt"
  [[ -n ${KEEP:-} ]] || userdel -r "$U" 2>/dev/null
}
trap user_cleanup EXIT
useradd --create-home --home-dir "$H" --shell /bin/bash "$U" || need "useradd $U failed"
# Debian's fuse3 makes /dev/fuse 0666 through udev; a container may not.
chmod 666 /dev/fuse
# `cmake --install` writes its manifest into the build directory, which
# belongs to root: a file of the user's own there takes it.
install -o "$U" -m 644 /dev/null "$BUILD/install_manifest.txt"

as_user() {
  runuser -u "$U" -- env -i HOME="$H" USER="$U" LOGNAME="$U" PATH=/usr/bin:/bin \
    LANG=C.UTF-8 TMPDIR="$H/tmp" bash -c 'mkdir -p "$TMPDIR"; cd "$HOME" && exec "$@"' as_user "$@"
}
for f in "$CLAIRFS_SRC/CMakeLists.txt" "$BUILD/cmake_install.cmake"; do
  as_user test -r "$f" || need "$f is not readable by other users: the test's user cannot install from it"
done
