#!/bin/sh
# fs_sigterm.sh -- SIGTERM to the daemon unmounts cleanly: it exits 0, the
# mount is gone, every acknowledged write is in the database and the lock is
# released.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 5

run "$SMOLCTL" -d "$DATADIR" import --create "$S/examples/aircraft.jsonl"
check "$status" "import the aircraft seed"
fs_mount
# ---------------------------------------------------------------- SIGTERM
sh_run "echo 'written before SIGTERM' > '$MNT/aircraft/plane#TF-FIR/meta/term'"
succeeds "a cell written just before SIGTERM"
kill -TERM "$fs_pid"
fs_wait_exit "$fs_pid"
_pid=$fs_pid
fs_pid=
if [ "$fs_status" -eq 0 ] && fs_log_clean; then
	ok "SIGTERM: the daemon exits 0"
else
	not_ok "SIGTERM: the daemon exits 0 (status $fs_status)"
	diag_file "$T/daemon.$fs_nlog.log"
fi
if ! fs_is_mounted "$MNT"; then
	ok "SIGTERM: the mount is gone"
else
	not_ok "SIGTERM: the mount is gone"
	fusermount3 -u "$MNT" 2>/dev/null
fi
fs_mounted=
run "$SMOLCTL" -d "$DATADIR" get aircraft 'plane#TF-FIR'
out_has "written before SIGTERM" "SIGTERM: the write is in the database, and the lock is released"

done_testing
