#!/bin/sh
# fs_enospc.sh -- a full disk through the mount.  DATADIR is a 12 MiB tmpfs
# mounted by the test, with two ballast files in it; cells of 24 KiB (random
# text, so that compression does not shrink the tables) are written through
# the mount until writes fail.  Then: every failure is ENOSPC at write() or
# close(), never another errno; every cell whose close() returned 0 reads
# back; a create that failed leaves no cell; the daemon stays up and reads
# and listings work.  The first ballast is removed and writes succeed again
# without a remount, until the disk is full once more.  The daemon is
# unmounted and the database mounted again with the disk still full (the
# second ballast in place), then again once that ballast is gone; each time
# every acknowledged cell reads back, and `smolctl check` is clean at the end.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP mounting a tmpfs needs root"
	exit 0
fi
plan 18

mkdir "$DATADIR" || exit 1
run mount -t tmpfs -o size=12m,mode=0700 smolfs-enospc "$DATADIR"
[ "$status" -eq 0 ] && fs_extra_fs=$DATADIR
succeeds "a 12 MiB tmpfs for DATADIR"
fs_mount
K=$MNT/k
sh_run "mkdir '$K' '$K/.families/f' && echo bytes > '$K/.families/f/type' && mkdir -p '$K/r/f' &&
	dd if=/dev/zero of='$DATADIR/ballast1' bs=1M count=1 2>/dev/null &&
	dd if=/dev/zero of='$DATADIR/ballast2' bs=1M count=6 2>/dev/null"
succeeds "a table k of bytes, a row, and 7 MiB of ballast in DATADIR"

# 24 KiB of random text, the body of every cell (a cell qN holds "qN:" and it)
pad=$(head -c 18432 /dev/urandom | base64 | tr -d '\n')
: >"$T/acked"     # the cells whose close returned 0, one name a line
: >"$T/refused"   # "NAME RESULT" for each write that failed

# fill PREFIX: write cells PREFIX1, PREFIX2, ... until a write fails, then
# three more; the acknowledged in $T/acked, the others in $T/refused
fill() {
	_k=0
	_nfail=0
	while [ "$_nfail" -lt 4 ] && [ "$_k" -lt 2000 ]; do
		_k=$((_k + 1))
		_r=$("$FS_OP" write "$K/r/f/$1$_k" "$1$_k:$pad" 2>&1)
		if [ "$_r" = ok ]; then
			echo "$1$_k" >>"$T/acked"
		else
			echo "$1$_k $_r" >>"$T/refused"
			_nfail=$((_nfail + 1))
		fi
	done
}

# refusals_enospc DESCRIPTION: every refused write failed with ENOSPC at
# write() or close()
refusals_enospc() {
	if [ -s "$T/refused" ] && ! grep -v -E '^[^ ]+ (write|close) ENOSPC$' "$T/refused" >"$T/other"; then
		ok "$1"
	else
		not_ok "$1"
		echo "# refused writes (none means the disk never filled):"
		diag_file "$T/refused"
	fi
}

# up DESCRIPTION: the daemon runs, and a listing of the row's family names
# exactly the acknowledged cells
up() {
	ls "$K/r/f" >"$T/ls" 2>"$T/ls.err"
	_st=$?
	sort "$T/acked" >"$T/acked.sorted"
	sort "$T/ls" >"$T/ls.sorted"
	if kill -0 "$fs_pid" 2>/dev/null && [ "$_st" -eq 0 ] && ls "$K" >/dev/null 2>&1 &&
	   cmp -s "$T/acked.sorted" "$T/ls.sorted"; then
		ok "$1"
	else
		not_ok "$1"
		echo "# ls status $_st; the listing against the acknowledged cells:"
		diag_file "$T/ls.err"
		diff "$T/acked.sorted" "$T/ls.sorted" | head -n 10 | sed 's/^/#   /'
	fi
}

# ---------------------------------------------------------------- full
fill q
diag "$(wc -l <"$T/acked") cells of 24 KiB acknowledged before the disk filled"
refusals_enospc "the disk fills: each write refused fails with ENOSPC at write() or close()"
acked_read_back "every cell whose close() returned 0 reads back"
: >"$T/left"
while read -r c r; do
	[ -e "$K/r/f/$c" ] && echo "$c" >>"$T/left"
done <"$T/refused"
if [ ! -s "$T/left" ]; then
	ok "a create that failed leaves no cell"
else
	not_ok "a create that failed leaves no cell"
	diag_file "$T/left"
fi
up "the daemon stays up, and the family lists exactly the acknowledged cells"

# ---------------------------------------------------------------- room again
rm -f "$DATADIR/ballast1"
op_is ok "a MiB freed: a write succeeds again, without a remount" write "$K/r/f/again" "again:$pad"
[ "$status" -eq 0 ] && echo again >>"$T/acked"
: >"$T/refused"
fill z
diag "$(wc -l <"$T/acked") cells acknowledged when the disk filled again"
refusals_enospc "the disk fills again: ENOSPC at write() or close() only"
acked_read_back "every acknowledged cell reads back"
up "the daemon is still up and lists exactly the acknowledged cells"
fs_unmount "unmount with the disk full: the daemon exits 0"

# ---------------------------------------------------------------- remount
if fs_try_mount "the database mounts again with its disk still full"; then
	acked_read_back "after that remount every acknowledged cell reads back"
	fs_unmount
else
	skip "it did not mount" "after that remount every acknowledged cell reads back"
	skip "it did not mount" "unmount"
fi
rm -f "$DATADIR/ballast2"
if fs_try_mount "with the ballast gone, the database mounts"; then
	acked_read_back "after the remount every acknowledged cell reads back"
	fs_unmount
else
	skip "it did not mount" "after the remount every acknowledged cell reads back"
	skip "it did not mount" "unmount"
fi
run "$SMOLCTL" -d "$DATADIR" check
succeeds "smolctl check finds the database clean"

done_testing
