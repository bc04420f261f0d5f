#!/bin/sh
# fs_lifecycle.sh -- what a mount's life must keep: unmount and remount lose
# nothing (and forget empty rows), a second daemon or smolctl on a mounted
# data directory is refused, and mount(8) works: `mount -t fuse
# SMOLFS#DATADIR` (the fstab form) and `mount -t fuse.smolfs` through
# mount.fuse3, -o ro, umount.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 23

# export DATADIR FILE: every table of DATADIR as JSON lines (unmounted)
export_all() {
	for _t in aircraft webtable; do
		"$SMOLCTL" -d "$1" export --table "$_t" || return 1
	done >"$2" 2>"$T/export.err"
}

run "$SMOLCTL" -d "$DATADIR" import --create "$S/examples/aircraft.jsonl"
check "$status" "import the aircraft seed"
run "$SMOLCTL" -d "$DATADIR" import --create "$S/examples/webtable.jsonl"
check "$status" "import the webtable seed"
fs_mount
sh_run "echo A320 > '$MNT/aircraft/plane#TF-FIR/meta/model@1600000000000000'"
succeeds "an older version written by name"
fs_unmount

# ---------------------------------------------------------------- remount
fs_mount
sh_run "mkdir -p '$MNT/aircraft/plane#EMPTY/meta' &&
	echo 'after remount' > '$MNT/aircraft/plane#TF-FIR/meta/note' && cat '$MNT/aircraft/plane#TF-FIR/meta/note'"
out_is "a cell written before an unmount" <<'EOF'
after remount
EOF
fs_unmount
export_all "$DATADIR" "$T/before.jsonl"
fs_mount
file_is "$MNT/aircraft/plane#TF-FIR/meta/note" "reads back after a remount" <<'EOF'
after remount
EOF
run ls "$MNT/aircraft/plane#TF-FIR/meta"
out_is "and the row lists every qualifier and version" <<'EOF'
airline
miles
model
model@1600000000000000
note
EOF
run ls "$MNT/aircraft/.prefix/plane#"
out_is "an empty row does not outlive its mount" <<'EOF'
plane#TF-FIR
EOF
fs_unmount
export_all "$DATADIR" "$T/after.jsonl"
same_files "$T/before.jsonl" "$T/after.jsonl" "a mount that only reads changes nothing in the export"

# ---------------------------------------------------------------- one owner
fs_mount
M2=$T/mnt2
mkdir "$M2"
fs_extra_mounts=$M2
"$SMOLFS" -f "$DATADIR" "$M2" >"$T/out" 2>"$T/err" &
p2=$!
fs_extra_pids=$p2
fs_wait_exit "$p2"
status=$fs_status
if [ "$status" -ne 0 ] && [ "$status" -ne 124 ] && [ -s "$T/err" ] && ! fs_is_mounted "$M2"; then
	ok "a second smolfs on the mounted data directory is refused"
	diag "it says: $(head -n 1 "$T/err")"
else
	not_ok "a second smolfs on the mounted data directory is refused"
	_show_run
fi
run "$SMOLCTL" -d "$DATADIR" list-tables
fails "smolctl on the mounted data directory is refused"
fs_unmount

# ---------------------------------------------------------------- mount(8)
# wait_released: the detached daemon is done once smolctl may open the data
# directory again (its lock is released)
wait_released() {
	_n=0
	while ! "$SMOLCTL" -d "$DATADIR" list-tables >"$T/out" 2>"$T/err"; do
		[ "$_n" -ge $((FS_TIMEOUT * 10)) ] && break
		sleep 0.1
		_n=$((_n + 1))
	done
}

if [ "$(id -u)" -ne 0 ]; then
	for _d in "mount -t fuse SMOLFS#DATADIR MNT (the fstab form)" "the mounted tables are there" \
		"umount unmounts" "and the daemon ends, releasing the data directory" \
		"-o ro through mount: cells are 0444" "-o ro: writes fail" "-o ro: umount" \
		"mount -t fuse.smolfs DATADIR MNT, smolfs found on mount(8)'s PATH"; do
		skip "mount(8) needs root" "$_d"
	done
else
	# mount(8) runs mount.fuse3 with a PATH of its own, so that
	# `-t fuse.smolfs` finds only an installed smolfs; the type "fuse" with
	# "PROGRAM#SOURCE" runs the built one through the same helper
	fs_mounted=$MNT
	run mount -t fuse "$SMOLFS#$DATADIR" "$MNT"
	succeeds "mount -t fuse SMOLFS#DATADIR MNT (the fstab form)"
	fs_wait_mounted "$MNT"
	run ls "$MNT"
	out_is "the mounted tables are there" <<'EOF'
aircraft
webtable
EOF
	run umount "$MNT"
	succeeds "umount unmounts"
	wait_released
	run "$SMOLCTL" -d "$DATADIR" list-tables
	out_is "and the daemon ends, releasing the data directory" <<'EOF'
aircraft
webtable
EOF
	run mount -t fuse -o ro "$SMOLFS#$DATADIR" "$MNT"
	fs_wait_mounted "$MNT"
	run stat -c %a "$MNT/aircraft/plane#TF-FIR/meta/model"
	out_is "-o ro through mount: cells are 0444" <<'EOF'
444
EOF
	sh_run "echo x > '$MNT/aircraft/plane#TF-FIR/meta/model'"
	fails "-o ro: writes fail"
	run umount "$MNT"
	succeeds "-o ro: umount"
	wait_released
	fs_mounted=
	# -t fuse.smolfs, with the built smolfs on mount(8)'s PATH: only in a
	# mount namespace of its own, where a bind mount puts it in /usr/local/sbin
	if command -v unshare >/dev/null 2>&1 && [ -d /usr/local/sbin ]; then
		mkdir "$T/sbin" && ln -s "$SMOLFS" "$T/sbin/smolfs"
		run unshare -m --propagation private sh -c '
			mount --bind "$1" /usr/local/sbin || exit 10
			mount -t fuse.smolfs "$2" "$3" || exit 11
			ls "$3" || exit 12
			umount "$3" || exit 13' sh "$T/sbin" "$DATADIR" "$MNT"
		out_is "mount -t fuse.smolfs DATADIR MNT, smolfs found on mount(8)'s PATH" <<'EOF'
aircraft
webtable
EOF
		wait_released
	else
		skip "no unshare(1) or /usr/local/sbin" \
			"mount -t fuse.smolfs DATADIR MNT, smolfs found on mount(8)'s PATH"
	fi
fi
run "$SMOLCTL" -d "$DATADIR" check
succeeds "smolctl check of the data directory after all of it"

done_testing
