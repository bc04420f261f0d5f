#!/bin/sh
# fs_ioerr.sh -- I/O errors under the daemon.  The mount is served by
# tests/smolfs_fault, the daemon on the engine's fault-injecting environment,
# with a 64 KiB memtable so that a few writes make a flush; the script turns
# faults on and off through its control FIFO while the mount stays up:
#
#   - every append to the log fails: a write through the mount fails with EIO
#     at close(), and leaves no cell, whose name can be created once the
#     fault is gone (the kernel forgot the name it made at the create); the
#     same with ENOSPC;
#   - every fsync of the log fails: fsync(2) fails with EIO;
#   - a flush cannot write its table (an append, then an fsync, of a .sst
#     fails), and a flush cannot record its table (an append to the MANIFEST
#     fails): the writes that meet the failed flush fail with EIO; so does
#     moving an empty family to a new locality group (a new tree: a manifest
#     edit of its own, from the writer's side, which nothing can write), and
#     nothing of the move is applied.  The declaration of a table's first
#     family (mkdir) is a synced schema write into the default tree and no
#     manifest edit: it fails with EIO if it meets the failed flush, but one
#     that comes while the engine retries the flush (smolfs(5): the error is
#     cleared at the retry time) and finds room in the memtable goes into
#     the log, which works, and is acknowledged; either way the answer and
#     the schema agree, and an acknowledged family survives the remount.
#
# Each time any write that fails, fails with EIO and nothing else (never
# with success: a write that returned 0 is a write the database holds), the
# daemon stays up, a cell written before reads back, and once the fault is
# cleared writes succeed again without a remount (after a flush failed the
# engine retries it after a backoff, so the first writes may still meet its
# error: each is EIO, and one succeeds within the timeout).  At the end the
# database is mounted again with the real smolfs: every write whose close()
# or fsync() returned 0 reads back, and `smolctl check` is clean.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

FS_DAEMON=$B/tests/smolfs_fault
if [ ! -x "$FS_DAEMON" ]; then
	echo "Bail out! $FS_DAEMON is not built (set SMOLFS_BUILDDIR)"
	exit 1
fi
plan 43

SMOLFS_FAULT_CTL=$T/ctl
SMOLFS_FAULT_WRITE_BUFFER=65536
export SMOLFS_FAULT_CTL SMOLFS_FAULT_WRITE_BUFFER
mkfifo "$SMOLFS_FAULT_CTL" || exit 1
: >"$SMOLFS_FAULT_CTL.ack"
nctl=0

# fault COMMAND...: one command to the daemon's fault environment, and wait
# (bounded) for its answer; a refused or unanswered command ends the script
fault() {
	nctl=$((nctl + 1))
	if ! timeout "$FS_TIMEOUT" sh -c 'printf "%s\n" "$1" >"$2"' sh "$*" "$SMOLFS_FAULT_CTL"; then
		echo "Bail out! the daemon did not take the command '$*'"
		exit 1
	fi
	_n=0
	while ! grep -q -x "ok $nctl" "$SMOLFS_FAULT_CTL.ack"; do
		if grep -q "^bad $nctl:" "$SMOLFS_FAULT_CTL.ack" || [ "$_n" -ge $((FS_TIMEOUT * 10)) ]; then
			echo "Bail out! the fault command '$*' was not applied"
			diag_file "$SMOLFS_FAULT_CTL.ack"
			exit 1
		fi
		sleep 0.1
		_n=$((_n + 1))
	done
}

fs_mount
K=$MNT/k
sh_run "mkdir '$K' '$MNT/k2' '$K/.families/f' '$K/.families/e' && echo bytes > '$K/.families/f/type' &&
	mkdir -p '$K/r/f' && echo 'before the faults' > '$K/r/f/other'"
succeeds "a table k of bytes, an empty family e, a row r, a cell other, and a table k2"

# 6 KiB of random text, the body of every cell (a cell NAME holds "NAME:" and it)
pad=$(head -c 4608 /dev/urandom | base64 | tr -d '\n')
: >"$T/acked"     # the cells whose close() (or fsync) returned 0, one name a line

# put OP NAME: fs_op OP (write or fsync) of the cell NAME; its result in $res,
# and NAME in $T/acked if it was acknowledged
put() {
	res=$("$FS_OP" "$1" "$K/r/f/$2" "$2:$pad" 2>&1)
	[ "$res" = ok ] && echo "$2" >>"$T/acked"
}

# put_eio DESCRIPTION OP NAME: the write of NAME fails, with EIO
put_eio() {
	put "$2" "$3"
	case $res in
	"write EIO" | "close EIO" | "fsync EIO") ok "$1" ;;
	*) not_ok "$1"; echo "# fs_op $2 $3: got '$res', expected EIO at write, close or fsync" ;;
	esac
}

# up DESCRIPTION: the daemon runs, the cell written before the faults reads
# back, and the row's family lists
up() {
	if kill -0 "$fs_pid" 2>/dev/null && [ "$(cat "$K/r/f/other" 2>&1)" = "before the faults" ] &&
	   ls "$K/r/f" >/dev/null 2>"$T/ls.err"; then
		ok "$1"
	else
		not_ok "$1"
		echo "# the cell other: $(cat "$K/r/f/other" 2>&1)"
		diag_file "$T/ls.err"
	fi
}

# put_until_ok DESCRIPTION OP PREFIX: writes PREFIX1, PREFIX2... until one
# is acknowledged (within the timeout); every one refused before was EIO
put_until_ok() {
	_i=0
	_bad=
	_t0=$(date +%s)
	while :; do
		_i=$((_i + 1))
		put "$2" "$3$_i"
		[ "$res" = ok ] && break
		case $res in
		*" EIO") ;;
		*) _bad="$3$_i: $res"; break ;;
		esac
		[ $(($(date +%s) - _t0)) -ge "$FS_TIMEOUT" ] && { _bad="still $res after ${FS_TIMEOUT}s"; break; }
		sleep 0.05
	done
	if [ -z "$_bad" ]; then
		ok "$1 (after $((_i - 1)) refused with EIO)"
	else
		not_ok "$1"
		echo "# $_bad"
	fi
}

# fill_eio DESCRIPTION PREFIX: write cells PREFIX1, PREFIX2... (up to 400,
# 2.4 MiB: dozens of memtables) until three were refused; at least one
# must be, and each with EIO
fill_eio() {
	_i=0
	_nref=0
	: >"$T/refused"
	while [ "$_nref" -lt 3 ] && [ "$_i" -lt 400 ]; do
		_i=$((_i + 1))
		put write "$2$_i"
		[ "$res" = ok ] || { echo "$2$_i $res" >>"$T/refused"; _nref=$((_nref + 1)); }
	done
	if [ -s "$T/refused" ] && ! grep -v -E '^[^ ]+ (write|close) EIO$' "$T/refused" >/dev/null; then
		ok "$1 ($_i writes, $_nref refused)"
	else
		not_ok "$1"
		echo "# $_i writes; the refused (none means no write met the fault):"
		diag_file "$T/refused"
	fi
}

# ---------------------------------------------------------------- the log: append
put write a0
fault fail append .log EIO
put_eio "a log append fails: the write fails with EIO at close()" write a1
put_eio "a second write, into the log after the failed one, fails with EIO too" write a2
put_eio "an fsync'd write fails with EIO" fsync a3
if [ ! -e "$K/r/f/a1" ] && [ ! -e "$K/r/f/a2" ]; then
	ok "a write refused at the log leaves no cell"
else
	not_ok "a write refused at the log leaves no cell"
	ls "$K/r/f" | sed 's/^/#   /'
fi
up "the daemon is up: a cell written before reads back, the family lists"
fault clear
# the kernel made a name at the refused create: the daemon must have made it forget it
put write a1
if [ "$res" = ok ]; then
	ok "the fault cleared: the refused cell is created and written, without a remount"
else
	not_ok "the fault cleared: the refused cell is created and written, without a remount"
	echo "# fs_op write a1: got '$res'"
fi
put_until_ok "and another" write b
put_until_ok "and an fsync'd write" fsync af
acked_read_back "every acknowledged cell reads back"

# the same with a full disk: ENOSPC, and the name free again afterwards
fault fail append .log ENOSPC
op_is "close ENOSPC" "a log append finds the disk full: the write fails with ENOSPC at close()" \
	write "$K/r/f/n1" "n1:$pad"
fault clear
put write n1
if [ "$res" = ok ]; then
	ok "room again: the refused cell is created and written"
else
	not_ok "room again: the refused cell is created and written"
	echo "# fs_op write n1: got '$res'"
fi

# ---------------------------------------------------------------- the log: fsync
fault fail sync .log EIO
put_eio "a log fsync fails: fsync(2) fails with EIO" fsync s1
put_eio "a second fsync'd write, into the next log, fails with EIO too" fsync s2
up "the daemon is up"
fault clear
put_until_ok "the fault cleared: an fsync'd write succeeds again" fsync s
acked_read_back "every acknowledged cell reads back"

# ---------------------------------------------------------------- a flush: the table
fault fail append .sst EIO
fill_eio "a flush cannot write its table: the writes that meet it fail with EIO" t
up "the daemon is up"
fault clear
put_until_ok "the fault cleared: a write succeeds again" write t
acked_read_back "every acknowledged cell reads back"

fault fail sync .sst EIO
fill_eio "a flush cannot fsync its table: the writes that meet it fail with EIO" u
up "the daemon is up"
fault clear
put_until_ok "the fault cleared: a write succeeds again" write u
put_until_ok "and an fsync'd write" fsync uf
acked_read_back "every acknowledged cell reads back"

# ---------------------------------------------------------------- a flush: the manifest
fault fail append MANIFEST EIO
fill_eio "a flush cannot record its table in the manifest: the writes that meet it fail with EIO" m
# the first family of k2: refused (EIO, and not declared) or acknowledged (declared)
mk=$("$FS_OP" mkdir "$MNT/k2/.families/g" 2>&1)
if [ -d "$MNT/k2/.families/g" ]; then g_now=declared; else g_now=absent; fi
case "$mk/$g_now" in
"mkdir EIO/absent" | "ok/declared")
	ok "the first family of k2 (a synced schema write): mkdir fails with EIO and declares nothing, or succeeds and declares it ($mk)" ;;
*)	not_ok "the first family of k2 (a synced schema write): mkdir fails with EIO and declares nothing, or succeeds and declares it"
	echo "# fs_op mkdir: got '$mk'; the family is $g_now" ;;
esac
# a new locality group: a new tree, whose manifest edit fails whatever the flush does
res=$("$FS_OP" write "$K/.families/e/locality_group" lg 2>&1)
case $res in
"write EIO" | "close EIO") ok "moving the empty family e to a new locality group (a manifest edit) fails with EIO" ;;
*)	not_ok "moving the empty family e to a new locality group (a manifest edit) fails with EIO"
	echo "# fs_op write .families/e/locality_group: got '$res'" ;;
esac
file_is "$K/.families/e/locality_group" "and e stays in the default group" <<EOF
default
EOF
up "the daemon is up"
fault clear
put_until_ok "the fault cleared: a write succeeds again" write m
put_until_ok "and an fsync'd write" fsync mf
# the engine may still be backing off from the failed flush: each is retried as writes are
_n=0
while :; do
	res=$("$FS_OP" write "$K/.families/e/locality_group" lg 2>&1)
	case $res in *" EIO") ;; *) break ;; esac
	[ "$_n" -lt $((FS_TIMEOUT * 10)) ] || break
	sleep 0.1
	_n=$((_n + 1))
done
if [ "$res" = ok ] && [ "$(cat "$K/.families/e/locality_group" 2>&1)" = lg ]; then
	ok "and the family e moves to the new group"
else
	not_ok "and the family e moves to the new group"
	echo "# fs_op write .families/e/locality_group: got '$res'; it reads '$(cat "$K/.families/e/locality_group" 2>&1)'"
fi
# declared already if the first mkdir was acknowledged: then EEXIST says it stayed
want=ok
[ "$mk" = ok ] && want="mkdir EEXIST"
_n=0
while :; do
	run "$FS_OP" mkdir "$MNT/k2/.families/g"
	[ "$(cat "$T/out")" = "mkdir EIO" ] && [ "$_n" -lt $((FS_TIMEOUT * 10)) ] || break
	sleep 0.1
	_n=$((_n + 1))
done
if [ "$(cat "$T/out")" = "$want" ]; then
	ok "and the family of k2 can be declared (or is there: $want)"
else
	not_ok "and the family of k2 can be declared (or is there: $want)"
	echo "# fs_op mkdir: got '$(cat "$T/out")'"
fi
acked_read_back "every acknowledged cell reads back"
fs_unmount "unmount after the faults: the daemon exits 0"

# ---------------------------------------------------------------- remount
FS_DAEMON=$SMOLFS
if fs_try_mount "the real smolfs mounts the database"; then
	acked_read_back "after the remount every acknowledged cell reads back"
	file_is "$K/r/f/other" "and the cell written before the faults" <<EOF
before the faults
EOF
	sh_run "cat '$K/.families/e/locality_group' && ls '$MNT/k2/.families'"
	out_is "and the schema: e in its new group, the family g of k2" <<EOF
lg
g
EOF
	fs_unmount
else
	skip "it did not mount" "after the remount every acknowledged cell reads back"
	skip "it did not mount" "and the cell written before the faults"
	skip "it did not mount" "and the schema: e in its new group, the family g of k2"
	skip "it did not mount" "unmount"
fi
run "$SMOLCTL" -d "$DATADIR" check
succeeds "smolctl check finds the database clean"

done_testing
