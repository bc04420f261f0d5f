#!/bin/sh
# fs_recreate.sh -- a name removed and made again is a new inode: several
# processes at once create, write, unlink, re-create and read the same few
# cells, and make and remove (rm -r) the same few rows, with the daemon
# multithreaded and then single-threaded (-s).  Losing a race gives ENOENT
# or EEXIST, as it would on any filesystem; never EIO, which is what the
# kernel answers once it has marked an inode it still holds as bad (the
# daemon handed out its number again with another generation).
#
# Each round runs for SMOLFS_STRESS_SECONDS (default 6) and stops early on
# the first EIO.  The assertions do not depend on how many operations a
# loaded machine manages in that time.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 11

SECONDS_PER_ROUND=${SMOLFS_STRESS_SECONDS:-6}
WORKERS=4

# worker N: loops until $T/stop exists; every failed command's message goes
# to $T/w.N.err (the messages name the errno)
worker() {
	_w=$1
	_i=0
	while [ ! -e "$T/stop" ]; do
		_i=$((_i + 1))
		_c=c$((_i % 3))
		_r=r$((_i % 2))
		{
			echo "w$_w.$_i" > "$MNT/t/row/f/$_c"
			cat "$MNT/t/row/f/$_c" >/dev/null
			rm -f "$MNT/t/row/f/$_c"
			echo "again$_w.$_i" > "$MNT/t/row/f/$_c"
			cat "$MNT/t/row/f/$_c" >/dev/null
			stat "$MNT/t/row/f/$_c" >/dev/null
			mkdir -p "$MNT/t/$_r/f"
			echo "x$_w" > "$MNT/t/$_r/f/q"
			cat "$MNT/t/$_r/f/q" >/dev/null
			ls -l "$MNT/t/$_r/f" >/dev/null
			rm -rf "$MNT/t/$_r"
		} 2>>"$T/w.$_w.err"
		if grep -q 'Input/output error' "$T/w.$_w.err"; then
			: > "$T/stop"
		fi
	done
	echo "$_i" > "$T/w.$_w.rounds"
}

# round LABEL SMOLFS-ARGS...: mount, stress, check, unmount (4 assertions)
round() {
	_label=$1
	shift
	rm -f "$T"/w.* "$T/stop"
	rm -rf "$DATADIR"
	fs_mount "$@"
	sh_run "mkdir -p '$MNT/t/.families/f' '$MNT/t/row/f'"
	_pids=
	_n=1
	while [ "$_n" -le "$WORKERS" ]; do
		worker "$_n" &
		_pids="$_pids $!"
		_n=$((_n + 1))
	done
	# the workers stop at the deadline, or at once on an EIO
	_t=0
	while [ "$_t" -lt $((SECONDS_PER_ROUND * 10)) ] && [ ! -e "$T/stop" ]; do
		sleep 0.1
		_t=$((_t + 1))
	done
	: > "$T/stop"
	for _p in $_pids; do
		wait "$_p"
	done
	_total=0
	for _f in "$T"/w.*.rounds; do
		_total=$((_total + $(cat "$_f")))
	done
	diag "$_label: $WORKERS workers, $_total rounds in all"
	cat "$T"/w.*.err > "$T/all.err"
	if grep -q 'Input/output error' "$T/all.err"; then
		not_ok "$_label: no operation on a removed and re-created name gives EIO"
		grep 'Input/output error' "$T/all.err" | sort | uniq -c | head -n 10 | sed 's/^/# /'
	else
		ok "$_label: no operation on a removed and re-created name gives EIO"
	fi
	# every message is a lost race: ENOENT (the shell's "Directory
	# nonexistent": a row goes with its last cell), EEXIST, ENOTEMPTY for
	# rm -r, and EISDIR for an rm -rf whose lstat found no row and whose
	# unlink then met one made again meanwhile (as on any filesystem)
	if grep -v -e 'No such file or directory' -e 'Directory nonexistent' \
	   -e 'File exists' -e 'Directory not empty' \
	   -e "^rm: cannot remove '[^']*/t/r[01]': Is a directory" \
	   "$T/all.err" >"$T/other.err"; then
		not_ok "$_label: the only errors are lost races"
		sort "$T/other.err" | uniq -c | head -n 10 | sed 's/^/# /'
	else
		ok "$_label: the only errors are lost races"
	fi
	# quiet again: every name works as a fresh one
	sh_run "rm -rf '$MNT/t/r0' '$MNT/t/r1' && rm -f '$MNT/t/row/f/c0' &&
		echo last > '$MNT/t/row/f/c0' && cat '$MNT/t/row/f/c0' &&
		mkdir -p '$MNT/t/r0/f' && echo q > '$MNT/t/r0/f/q' && cat '$MNT/t/r0/f/q'"
	out_is "$_label: afterwards a removed cell and a removed row are made and read again" <<'OUT'
last
q
OUT
	fs_unmount "$_label: unmount, the daemon exits 0 with no sanitizer report"
}

round "multithreaded"
round "single-threaded (-s)" -s
run "$SMOLCTL" -d "$DATADIR" check
check "$status" "smolctl check finds the data directory of the last round sound"
# each row's cell is made once and read back
fs_mount
sh_run "for i in 1 2 3 4 5 6 7 8; do mkdir '$MNT/t/r' && mkdir '$MNT/t/r/f' &&
	echo \$i > '$MNT/t/r/f/q' && cat '$MNT/t/r/f/q' && rm -r '$MNT/t/r' || exit 1; done |
	tr '\n' ' '; echo"
out_is "a row made and removed eight times in one process reads its own cell each time" <<'OUT'
1 2 3 4 5 6 7 8 
OUT
fs_unmount
done_testing
