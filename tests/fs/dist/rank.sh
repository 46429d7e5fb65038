#!/bin/bash
# Runs one clairfsd rank under MPICH's launcher (hydra) so that a peer killed
# by a signal does not take this rank down with it. Hydra 4.0.2 kills every
# rank of a job when one dies by a signal, even with -disable-auto-cleanup,
# but not when a rank exits with a status: this shell turns the daemon's fate
# into an exit status, ignores the SIGUSR1 failure notice hydra sends, and
# passes SIGTERM/SIGINT on. (Under srun --kill-on-bad-exit=0 none of this is
# needed.)
trap '' USR1
"$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
wait "$child"
rc=$?
while kill -0 "$child" 2>/dev/null; do
  wait "$child"
  rc=$?
done
exit "$rc"
