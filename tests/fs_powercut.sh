#!/bin/sh
# fs_powercut.sh -- power cuts through the mount lose nothing that fsync()
# acknowledged.  Each cut mounts the database with tests/smolfs_fault (the
# daemon on the engine's fault environment, a 64 KiB memtable so that the
# writes make flushes and compactions) told to lose power at the N-th call
# that changes the disk (SMOLFS_FAULT_CUT_AFTER: N drawn from the seed;
# small N falls in the recovery of the open, before the mount appears).
# Four writers go through the mount meanwhile, each on cells of its own:
#   r0/f  tests/fs_op fsync: open(O_CREAT|O_TRUNC), write, fsync, close of a
#         new cell each time
#   r1/f  the same on three cells written over and over
#   r3/g  fsync of new cells in a family of another locality group (its own
#         tree, sharing the log)
#   r2/f  tests/fs_op write (no fsync): three cells written over and over
#         and new ones; close() promises nothing across a power cut, so
#         these only must hold a value once written (or the one before)
# At the cut the daemon leaves the files as the fault environment says a
# disk would hold them (synced bytes kept, each unsynced 4 KiB page kept,
# dropped or zeroed, name changes not made durable undone) and exits; its
# mount is detached.  Then the real smolfs must mount the database, and
# every cell whose fsync() returned 0 hold that value, or the value of a
# later write of it (in flight, or only closed); no cell may hold a value
# never written or appear without having been written; the daemon unmounts
# cleanly and `smolctl check` finds nothing wrong.  A writer may fail only
# when the mount is gone (ENOTCONN, ECONNABORTED): the daemon answers no
# request after the cut.
# SMOLFS_POWERCUT_CUTS cuts (6 by default; `make check-powercut CUTS=N`),
# cut points and page fates drawn from SMOLFS_TEST_SEED (printed, to replay
# a failure: the cut points are counted in calls, so a replay falls near,
# not always on, the same call).
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

FAULTD=$B/tests/smolfs_fault
if [ ! -x "$FAULTD" ]; then
	echo "Bail out! $FAULTD is not built (set SMOLFS_BUILDDIR)"
	exit 1
fi
cuts=${SMOLFS_POWERCUT_CUTS:-6}
seed=${SMOLFS_TEST_SEED:-$(date +%s)}
plan 9
diag "cuts $cuts, seed $seed (SMOLFS_TEST_SEED=$seed replays the cut points)"

SMOLFS_FAULT_CTL=$T/ctl
SMOLFS_FAULT_WRITE_BUFFER=65536
export SMOLFS_FAULT_CTL SMOLFS_FAULT_WRITE_BUFFER
mkfifo "$SMOLFS_FAULT_CTL" || exit 1
: >"$SMOLFS_FAULT_CTL.ack"

# rnd N LO HI: a number in LO..HI drawn for draw N from the seed
rnd() {
	seeded_rnd "$seed" "$1" "$2" "$3"
}

# 1.5 KiB of text after each value, so that a few dozen writes fill a memtable
pad=$(head -c 1152 /dev/urandom | base64 | tr -d '\n/+=')
K=$MNT/k
fs_mount
sh_run "mkdir '$K' '$K/.families/f' '$K/.families/g' &&
	echo lg > '$K/.families/g/locality_group' &&
	mkdir -p '$K/r0/f' '$K/r1/f' '$K/r2/f' '$K/r3/g'"
: >"$T/state"    # "CELL VALUE": each cell's value, as last read back
for c in r0/f/i r1/f/y0 r1/f/y1 r1/f/y2 r2/f/p0 r2/f/p1 r2/f/p2 r3/g/i; do
	v="init-$(echo "$c" | tr / -):$pad"
	"$FS_OP" write "$K/$c" "$v" >>"$T/err" 2>&1 || status=1
	echo "$c $v" >>"$T/state"
done
succeeds "a table k, family g in its own locality group, four rows with a first cell each"
fs_unmount "the first daemon unmounts cleanly"

# writer ID CUT: ID's writes until one fails; it logs "try CELL VALUE"
# before a write and "ok CELL VALUE" once it returned 0, and at the end
# "end RESULT" (the failure)
writer() {
	_log=$T/w$1.$2.log
	_k=0
	while [ "$_k" -lt 100000 ]; do
		_k=$((_k + 1))
		_n=$((_k % 3))
		case $1 in
		0) _c=r0/f/n$2x$_k; _op=fsync ;;
		1) _c=r1/f/y$_n; _op=fsync ;;
		2) _op=write; _c=r2/f/p$_n; [ "$_n" -eq 0 ] && _c=r2/f/m$2x$_k ;;
		3) _c=r3/g/n$2x$_k; _op=fsync ;;
		esac
		_v=c$2w$1k$_k:$pad
		echo "try $_c $_v" >>"$_log"
		_r=$("$FS_OP" "$_op" "$K/$_c" "$_v" 2>&1)
		if [ "$_r" != ok ]; then
			echo "end $_r" | head -n 1 >>"$_log"
			return
		fi
		echo "ok $_c $_v" >>"$_log"
	done
}

# check_cut CUT: read every cell of the rows back ($T/actual, errors in
# $T/readerr) and judge them against $T/state and the writers' logs; the
# lines in $T/bad, the counts "lost wrong fsynced closed" in $T/counts
check_cut() {
	(cd "$K" && grep -r --exclude='*@*' '' r0 r1 r2 r3) 2>"$T/readerr" | sed 's/:/ /' >"$T/actual"
	awk -v cut="$1" '
	FILENAME == ARGV[1] { base[$1] = $2; known[$1] = 1; next }
	FILENAME != ARGV[ARGC - 1] {
		w = FILENAME; sub(/.*\/w/, "", w); w = substr(w, 1, 1)
		if ($1 == "try") { c = $2; n[c]++; val[c, n[c]] = $3; known[c] = 1 }
		else if ($1 == "ok" && w == 2) closed++
		else if ($1 == "ok") { synced[c] = n[c]; fsynced++ }
		next
	}
	{ got[$1] = $2 }
	END {
		for (c in known) {
			v = c in got ? got[c] : "(none)"
			ok = 0
			if (c in synced) {
				# the fsynced value, or a later one
				for (i = synced[c]; i <= n[c]; i++)
					if (val[c, i] == v) ok = 1
				if (!ok) {
					printf "cut %d: %s lost its fsynced write: reads %.24s, expected %.24s%s\n",
						cut, c, v, val[c, synced[c]], synced[c] < n[c] ? " or later" : ""
					lost++
				}
				continue
			}
			if (v == (c in base ? base[c] : "(none)"))
				ok = 1
			for (i = 1; i <= n[c]; i++)
				if (val[c, i] == v) ok = 1
			if (!ok) {
				printf "cut %d: %s reads %.24s, a value never written to it\n", cut, c, v
				wrong++
			}
		}
		for (c in got)
			if (!(c in known)) {
				printf "cut %d: %s exists, never written\n", cut, c
				wrong++
			}
		printf "%d %d %d %d\n", lost, wrong, fsynced, closed > "/dev/stderr"
	}' "$T/state" $(ls "$T"/w?."$1".log 2>/dev/null) "$T/actual" >"$T/bad" 2>"$T/counts"
	if [ -s "$T/readerr" ]; then
		sed "s/^/cut $1: /" "$T/readerr" >>"$T/bad"
		read -r l w f c <"$T/counts"
		echo "$l $((w + $(wc -l <"$T/readerr"))) $f $c" >"$T/counts"
	fi
}

# wait_gone PID: wait (bounded) for a process to end; 0 if it did
wait_gone() {
	_n=0
	while kill -0 "$1" 2>/dev/null; do
		[ "$_n" -ge $((FS_TIMEOUT * 10)) ] && return 1
		sleep 0.1
		_n=$((_n + 1))
	done
	return 0
}

ncuts=0
nrecovery=0    # cuts that fell in the open, before the mount
nbadcut=0
nnomount=0
nunmount=0
ncheck=0
nlost=0
nwrong=0
nfsynced=0
nclosed=0
nbadend=0
npages="0 0"   # unsynced pages the cuts kept, and dropped or zeroed
cy=1
while [ "$cy" -le "$cuts" ]; do
	# ---------------------------------------------------------- write, cut
	# one cut in four at one of the first calls (the open's recovery), but
	# never the first, so that some cut always falls among the writes
	if [ "$cy" -gt 1 ] && [ "$(rnd "$cy" 0 3)" -eq 0 ]; then
		n=$(rnd "$((cy + 50000))" 1 12)
	else
		n=$(rnd "$((cy + 50000))" 20 400)
	fi
	fs_nlog=$((fs_nlog + 1))
	SMOLFS_FAULT_CUT_AFTER=$n SMOLFS_FAULT_SEED=$((seed + cy)) \
		"$FAULTD" -f "$DATADIR" "$MNT" >"$(_daemon_log)" 2>&1 &
	fs_pid=$!
	fs_mounted=$MNT
	pids=
	if fs_wait_mounted "$MNT"; then
		for id in 0 1 2 3; do
			writer "$id" "$cy" &
			pids="$pids $!"
		done
		if ! wait_gone "$fs_pid"; then
			# the writers stopped short of the cut point: cut now
			diag "cut $cy: no cut after $n calls within ${FS_TIMEOUT}s; cutting now"
			timeout "$FS_TIMEOUT" sh -c 'echo "cut 0" >"$1"' sh "$SMOLFS_FAULT_CTL"
		fi
	else
		nrecovery=$((nrecovery + 1))
	fi
	fs_wait_exit "$fs_pid"
	fs_pid=
	if [ "$fs_status" -ne 0 ] || ! grep -q '^smolfs_fault: power cut' "$(_daemon_log)"; then
		nbadcut=$((nbadcut + 1))
		diag "cut $cy (at call $n): the daemon exited with status $fs_status, its log:"
		fs_show_log
	fi
	sed -n 's/.*unsynced pages kept \([0-9]*\), dropped \([0-9]*\), zeroed \([0-9]*\).*/\1 \2 \3/p' \
		"$(_daemon_log)" >"$T/pages"
	read -r pk pd pz <"$T/pages" && npages="$((${npages%% *} + pk)) $((${npages#* } + pd + pz))"
	# the writers end on the dead mount (ENOTCONN) before it is detached
	# (after which their paths would be ENOENT)
	for p in $pids; do
		wait_gone "$p" || kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	fusermount3 -u -z "$MNT" 2>/dev/null
	fs_mounted=
	# a writer's failure is the mount going away, nothing else
	if cat "$T"/w?."$cy".log 2>/dev/null | grep '^end ' |
		grep -v -E ' (ENOTCONN|errno103)$' >"$T/ends"; then
		nbadend=$((nbadend + $(wc -l <"$T/ends")))
		diag "cut $cy: a writer failed otherwise than by the mount going away:"
		diag_file "$T/ends"
	fi

	# ---------------------------------------------------------- remount, read
	fs_nlog=$((fs_nlog + 1))
	"$SMOLFS" -f "$DATADIR" "$MNT" >"$(_daemon_log)" 2>&1 &
	fs_pid=$!
	fs_mounted=$MNT
	if ! fs_wait_mounted "$MNT"; then
		nnomount=$((nnomount + 1))
		diag "cut $cy (at call $n): the database does not mount; the daemon's log:"
		fs_show_log
		kill -KILL "$fs_pid" 2>/dev/null
		wait "$fs_pid" 2>/dev/null
		fs_pid=
		fs_force_unmount "$MNT"
		fs_mounted=
		ncuts=$cy
		break
	fi
	check_cut "$cy"
	read -r l w f c <"$T/counts"
	nlost=$((nlost + l))
	nwrong=$((nwrong + w))
	nfsynced=$((nfsynced + f))
	nclosed=$((nclosed + c))
	if [ -s "$T/bad" ]; then
		diag "cut $cy was at call $n; what went wrong:"
		diag_file "$T/bad"
	fi
	awk '{ print $1, $2 }' "$T/actual" >"$T/state"

	# ---------------------------------------------------------- unmount, check
	fs_cycle_end "cut $cy"
	ncuts=$cy
	cy=$((cy + 1))
done

diag "power cuts $ncuts ($nrecovery during the open's recovery), fsync'd writes checked $nfsynced, lost $nlost"
diag "unsynced pages the cuts kept: ${npages%% *}, dropped or zeroed: ${npages#* }"
diag "writes acknowledged by close() alone: $nclosed (a power cut may take them)"
check "$nbadcut" "every cut happened and the daemon left the disk as the cut does ($nbadcut failed)"
check "$nbadend" "no writer failed but by the mount going away ($nbadend)"
check "$nnomount" "the database mounts after every cut ($nnomount did not)"
[ "$nfsynced" -gt 0 ] || nlost=$((nlost + 1000000))
check "$nlost" "every fsync'd write reads back after the cut ($nlost lost of $nfsynced; some were made)"
check "$nwrong" "no cell holds a value never written to it, none appears unwritten ($nwrong)"
check "$nunmount" "each remounted daemon unmounts cleanly, exit 0, no sanitizer report ($nunmount failed)"
check "$ncheck" "smolctl check is clean after every cut ($ncheck failed)"
done_testing
