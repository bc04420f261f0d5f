#!/bin/sh
# fs_crash.sh -- SIGKILL to the daemon while processes write through the
# mount loses no acknowledged write.  Each cycle mounts, starts four writers
# and kills the daemon with SIGKILL once a random number of writes has been
# acknowledged; the dead mount is detached (fusermount3 -u -z), the database
# mounted again and every cell read: it holds the last value whose write was
# acknowledged, or the value of the one write that was in flight at the kill.
# The writers, each on cells of its own row:
#   r0  tests/fs_op write: open(O_TRUNC), write, close
#   r1  tests/fs_op fsync: the same with fsync before close
#   r2  sed -i: a temporary cell written and renamed over the cell
#   r3  tests/fs_op rename A B exchange (RENAME_EXCHANGE) of two cells of
#       distinct values: a pair is never seen half swapped (both with one
#       value, or one of them gone)
#   r4  a multi-cell row mutation: tests/fs_op write of a cell f:s, then
#       `mv` of f:s over g:d, a cell of a family in another locality group
#       (its own tree; the two share the log): one row mutation that deletes
#       one cell and replaces another.  The pair (s, d) is never seen half
#       moved (s gone and d not holding its value, or both holding it).
# (`smolctl import` writes multi-cell rows too, but it cannot open a
# DATADIR that a daemon holds; renames are the mount's multi-cell
# mutations.)
# A write is acknowledged when the call that ends it (close, fsync and
# close, rename) returned 0; only then does its writer log it.  Before the
# remount that reads the cells, the daemon is started once more and killed
# 0 to 40 ms later, during its recovery or soon after.  After each cycle
# the database is unmounted and `smolctl check` must find it clean.
# SMOLFS_CRASH_CYCLES cycles (10 by default; `make check-crash CYCLES=N`),
# kill points drawn from SMOLFS_TEST_SEED (printed, to replay a failure).
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

cycles=${SMOLFS_CRASH_CYCLES:-10}
seed=${SMOLFS_TEST_SEED:-$(date +%s)}
plan 7
diag "cycles $cycles, seed $seed (SMOLFS_TEST_SEED=$seed replays the kill points)"

# rnd N LO HI: a number in LO..HI drawn for cycle N from the seed
rnd() {
	seeded_rnd "$seed" "$1" "$2" "$3"
}

K=$MNT/k
fs_mount
sh_run "mkdir '$K' '$K/.families/f' '$K/.families/g' && echo lg > '$K/.families/g/locality_group' &&
	mkdir -p '$K/r0/f' '$K/r1/f' '$K/r2/f' '$K/r3/f' '$K/r4/f' '$K/r4/g'"
: >"$T/state"    # "CELL VALUE": each cell's value, as last read back
for c in r0/f/p0 r0/f/p1 r0/f/p2 r1/f/y0 r1/f/y1 r1/f/y2 r2/f/s0 r2/f/s1 r2/f/s2 \
	r3/f/a0 r3/f/b0 r3/f/a1 r3/f/b1 r4/f/keep r4/g/d; do
	v="init-$(echo "$c" | tr / -)"
	"$FS_OP" write "$K/$c" "$v" >>"$T/err" 2>&1 || status=1
	echo "$c $v" >>"$T/state"
done
echo "r4/f/s (none)" >>"$T/state"    # a cell "(none)": absent
succeeds "a table k with five rows and the writers' cells, each with a first value"

# writer ID CYCLE: ID's writes until one fails; it logs "try CELL VALUE"
# before a write and "ok CELL VALUE" once it returned 0 ("try X A B" and
# "ok X A B" for an exchange); a failure before the kill is logged "err"
writer() {
	_id=$1
	_log=$T/w$1.$2.log
	_k=0
	while [ "$_k" -lt 100000 ]; do
		_k=$((_k + 1))
		_v=c$2-w$_id-$_k
		_n=$((_k % 3))
		case $_id in
		0) _c=r0/f/p$_n ;;
		1) _c=r1/f/y$_n ;;
		2) _c=r2/f/s$_n ;;
		3) _n=$((_k % 2)); _c="X r3/f/a$_n r3/f/b$_n" ;;
		4) _c=r4/f/s; [ $((_k % 2)) -eq 0 ] && _c="M r4/f/s r4/g/d" ;;
		esac
		if [ "$_id" -eq 3 ] || [ "$_c" = "M r4/f/s r4/g/d" ]; then
			echo "try $_c" >>"$_log"
		else
			echo "try $_c $_v" >>"$_log"
		fi
		case $_id in
		0) _r=$("$FS_OP" write "$K/$_c" "$_v" 2>&1) ;;
		1) _r=$("$FS_OP" fsync "$K/$_c" "$_v" 2>&1) ;;
		2) _r=$(sed -i "s/.*/$_v/" "$K/$_c" 2>&1 && echo ok) ;;
		3) _r=$("$FS_OP" rename "$K/r3/f/a$_n" "$K/r3/f/b$_n" exchange 2>&1) ;;
		4) case $_c in
		   M*) _r=$("$FS_OP" rename "$K/r4/f/s" "$K/r4/g/d" 2>&1) ;;
		   *) _r=$("$FS_OP" write "$K/$_c" "$_v" 2>&1) ;;
		   esac ;;
		esac
		if [ "$_r" != ok ]; then
			if [ -e "$T/killed" ]; then
				echo "end $_r" | head -n 1 >>"$_log"
			else
				echo "err $_c: $_r" | head -n 3 >>"$_log"
			fi
			return
		fi
		if [ "$_id" -eq 3 ] || [ "$_c" = "M r4/f/s r4/g/d" ]; then
			echo "ok $_c" >>"$_log"
		else
			echo "ok $_c $_v" >>"$_log"
		fi
	done
}

# acked CYCLE: the writes acknowledged so far in CYCLE
acked() {
	cat "$T"/w?."$1".log 2>/dev/null | grep -c '^ok '
}

# expect CYCLE: from the state before CYCLE and its writers' logs, each
# cell and the values it may hold now ("CELL V1 [V2]"; "(none)": absent),
# and in $T/pairs the moved pair's cells and the states they may be in
# together ("S D VS VD VS2 VD2": before and after the one in flight)
expect() {
	awk -v pairs="$T/pairs" '
	# the last line of a writer, if "try ...": that write was in flight at the kill
	function inflight() {
		if (pend == "")
			return
		split(pend, f, " ")
		if (f[2] == "X") { alt[f[3]] = cur[f[4]]; alt[f[4]] = cur[f[3]] }
		else if (f[2] == "M") { alt[f[4]] = cur[f[3]]; alt[f[3]] = "(none)" }
		else alt[f[2]] = f[3]
		pend = ""
	}
	function now(c) { return c in alt ? alt[c] : cur[c] }
	FILENAME == ARGV[1] { cur[$1] = $2; order[++n] = $1; next }
	FNR == 1 { inflight() }
	$1 == "try" { pend = $0; next }
	$1 == "ok" && $2 == "X" { t = cur[$3]; cur[$3] = cur[$4]; cur[$4] = t; pend = ""; next }
	$1 == "ok" && $2 == "M" { cur[$4] = cur[$3]; cur[$3] = "(none)"; pend = ""; next }
	$1 == "ok" { cur[$2] = $3; pend = ""; next }
	END { inflight(); for (i = 1; i <= n; i++) { c = order[i]
		print c, cur[c] (c in alt ? " " alt[c] : "") }
	      s = "r4/f/s"; d = "r4/g/d"
	      print s, d, cur[s], cur[d], now(s), now(d) > pairs }
	' "$T/state" "$T"/w?."$1".log
}

ncycles=0
nmoves=0       # multi-cell row mutations acknowledged: moves, exchanges
nexch=0
nacked=0
nlost=0
nhalf=0
nerr=0
nidle=0
nstartup_mounted=0     # second kills after the mount appeared
nstartup_recovered=0   # after the new manifest, before the mount
nunmount=0
ncheck=0
cy=1
while [ "$cy" -le "$cycles" ]; do
	# ---------------------------------------------------------- write, kill
	rm -f "$T/killed"
	pids=
	for id in 0 1 2 3 4; do
		writer "$id" "$cy" &
		pids="$pids $!"
	done
	want=$(rnd "$cy" 4 60)
	n=0
	while [ "$(acked "$cy")" -lt "$want" ] && [ "$n" -lt $((FS_TIMEOUT * 20)) ]; do
		sleep 0.05
		n=$((n + 1))
	done
	: >"$T/killed"
	kill -KILL "$fs_pid"
	wait "$fs_pid" 2>/dev/null
	fs_pid=
	fusermount3 -u -z "$MNT" 2>/dev/null
	fs_mounted=
	for p in $pids; do
		n=0
		while kill -0 "$p" 2>/dev/null && [ "$n" -lt $((FS_TIMEOUT * 10)) ]; do
			sleep 0.1
			n=$((n + 1))
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	a=$(acked "$cy")
	nmoves=$((nmoves + $(cat "$T"/w4."$cy".log 2>/dev/null | grep -c '^ok M ')))
	nexch=$((nexch + $(cat "$T"/w3."$cy".log 2>/dev/null | grep -c '^ok X ')))
	[ "$a" -gt 0 ] || nidle=$((nidle + 1))
	nacked=$((nacked + a))
	if grep -h '^err ' "$T"/w?."$cy".log >"$T/errs"; then
		nerr=$((nerr + $(wc -l <"$T/errs")))
		diag "cycle $cy: a writer failed before the kill:"
		diag_file "$T/errs"
	fi

	# ---------------------------------------------------------- kill at startup
	# a second SIGKILL, 0 to 40 ms after the daemon starts: during its
	# recovery (the log replayed into a level-0 table, a new manifest) or
	# soon after the mount (the dead daemon's mount stays in the table)
	d=$(awk -v ms="$(rnd "$((cy + 100000))" 0 40)" 'BEGIN { printf "%.3f", ms / 1000 }')
	m=$(cat "$DATADIR/CURRENT")
	fs_nlog=$((fs_nlog + 1))
	"$SMOLFS" -f "$DATADIR" "$MNT" >"$(_daemon_log)" 2>&1 &
	p=$!
	sleep "$d"
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	if fs_is_mounted "$MNT"; then
		nstartup_mounted=$((nstartup_mounted + 1))
	elif [ "$(cat "$DATADIR/CURRENT")" != "$m" ]; then
		nstartup_recovered=$((nstartup_recovered + 1))
	fi
	fs_force_unmount "$MNT"

	# ---------------------------------------------------------- remount, read
	fs_mount
	expect "$cy" >"$T/expect"
	: >"$T/actual"
	while read -r c v1 v2; do
		if [ -e "$K/$c" ]; then
			echo "$c $(cat "$K/$c" 2>&1 | head -n 1)"
		else
			echo "$c (none)"
		fi >>"$T/actual"
	done <"$T/expect"
	awk -v cy="$cy" '
	FILENAME == ARGV[1] { ps = $1; pd = $2; p1 = $3 " " $4; p2 = $5 " " $6; next }
	FILENAME == ARGV[2] { ok1[$1] = $2; ok2[$1] = $3; next }
	{ c = $1; v = substr($0, length(c) + 2); got[c] = v
	  if (v != ok1[c] && (ok2[c] == "" || v != ok2[c])) {
		printf "cycle %d: %s reads \"%s\", expected \"%s\"%s\n", cy, c, v, ok1[c],
			ok2[c] == "" ? "" : " or \"" ok2[c] "\""; lost++ } }
	END { for (c in got) if (c ~ /\/a[0-9]+$/) { b = c; sub(/\/a/, "/b", b)
		if (got[c] == got[b] || got[c] == "" || got[b] == "") {
			printf "cycle %d: exchange pair %s, %s half done: \"%s\", \"%s\"\n",
				cy, c, b, got[c], got[b]; half++ } }
	      p = got[ps] " " got[pd]
	      if (p != p1 && p != p2) {
		printf "cycle %d: move of %s over %s half done: \"%s\", expected \"%s\"%s\n",
			cy, ps, pd, p, p1, p1 == p2 ? "" : " or \"" p2 "\""; half++ }
	      printf "%d %d\n", lost, half > "/dev/stderr" }
	' "$T/pairs" "$T/expect" "$T/actual" >"$T/bad" 2>"$T/counts"
	read -r l h <"$T/counts"
	nlost=$((nlost + l))
	nhalf=$((nhalf + h))
	if [ -s "$T/bad" ]; then
		diag_file "$T/bad"
		for f in "$T"/w?."$cy".log; do
			diag "$f, its last lines:"
			tail -n 3 "$f" | sed 's/^/#   /'
		done
	fi
	cp "$T/actual" "$T/state"

	# ---------------------------------------------------------- unmount, check
	fs_cycle_end "cycle $cy"
	ncycles=$cy
	cy=$((cy + 1))
	[ "$cy" -le "$cycles" ] && fs_mount
done

diag "cycles $ncycles, writes acknowledged $nacked (multi-cell row mutations: $nmoves moves, $nexch exchanges), writes lost $nlost"
diag "second kills 0-40 ms after a start: $((ncycles - nstartup_mounted - nstartup_recovered)) before a new manifest, $nstartup_recovered after it and before the mount, $nstartup_mounted after the mount"
check "$nidle" "every cycle acknowledged writes before the kill ($nidle cycles without)"
check "$nerr" "no write failed before the kill ($nerr failures)"
check "$nlost" "every acknowledged write reads back after SIGKILL and remount ($nlost lost of $nacked)"
check "$nhalf" "no exchange and no move within a row is seen half done ($nhalf)"
check "$nunmount" "each remounted daemon unmounts cleanly, exit 0, no sanitizer report ($nunmount failed)"
check "$ncheck" "smolctl check is clean after every cycle ($ncheck failed)"
done_testing
