#!/bin/sh
# fs_concurrency.sh -- several processes at once on one mount: writers of
# their own cells and of one shared cell, and a process that creates and
# removes rows while others list the table.  No crash, no error, no listing
# that skips or repeats a row that stayed, and every cell ends with one of
# the values written to it.  (Readers during the writes: fs_atomic.sh.)
# Then a read and a close of one open settings file at once.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 9

n=$((200 * ${SMOLFS_TEST_SCALE:-1}))
fs_mount
cd "$MNT" || exit 1
sh_run 'mkdir c && mkdir c/.families/f && echo 3 > c/.families/f/max_versions &&
	for i in 0 1 2 3; do mkdir -p c/r$i/f && echo w$i-0 > c/r$i/f/own; done &&
	mkdir -p c/shared/f && echo w0-0 > c/shared/f/x'
succeeds "a table c with rows r0..r3 and shared, each with a first value"

pids=
# writers: each its own cell and the shared one
for i in 0 1 2 3; do
	(
		k=1
		while [ "$k" -le "$n" ]; do
			echo "w$i-$k" > "c/r$i/f/own" || echo "write c/r$i/f/own w$i-$k failed"
			echo "w$i-$k" > c/shared/f/x || echo "write c/shared/f/x w$i-$k failed"
			k=$((k + 1))
		done
	) >"$T/writer$i" 2>&1 &
	pids="$pids $!"
done
# a process that creates and removes rows
(
	k=0
	while [ "$k" -lt "$n" ]; do
		{ mkdir -p "c/tmp$k/f" && echo "t$k" > "c/tmp$k/f/x" && rm -r "c/tmp$k"; } ||
			echo "create or remove c/tmp$k failed"
		k=$((k + 1))
	done
) >"$T/churn" 2>&1 &
pids="$pids $!"
# listers: the rows that stay are always listed, each once
for j in 0 1; do
	(
		k=0
		while [ "$k" -lt "$n" ]; do
			if ! ls -U c >"$T/ls$j.out" 2>"$T/ls$j.err"; then
				echo "ls c failed: $(cat "$T/ls$j.err")"
			fi
			for r in r0 r1 r2 r3 shared; do
				m=$(grep -c -x "$r" "$T/ls$j.out")
				[ "$m" -eq 1 ] || echo "ls c listed $r $m times"
			done
			d=$(sort "$T/ls$j.out" | uniq -d)
			[ -z "$d" ] || echo "ls c listed twice: $d"
			k=$((k + 1))
		done
	) >"$T/lister$j" 2>&1 &
	pids="$pids $!"
done
for p in $pids; do
	wait "$p"
done

# quiet FILE... DESCRIPTION: the processes' reports are empty
quiet() {
	_d=$1
	shift
	cat "$@" >"$T/reports"
	if [ ! -s "$T/reports" ]; then
		ok "$_d"
	else
		not_ok "$_d"
		echo "# $(wc -l <"$T/reports") reports, the first:"
		diag_file "$T/reports"
	fi
}
quiet "four writers: every write succeeded" "$T"/writer?
quiet "rows created and removed meanwhile, without an error" "$T/churn"
quiet "two listers: each listing held every lasting row exactly once" "$T"/lister?

run cat c/r0/f/own c/r1/f/own c/r2/f/own c/r3/f/own
out_is "every writer's own cell ends with its last value" <<EOF
w0-$n
w1-$n
w2-$n
w3-$n
EOF
v=$(cat c/shared/f/x)
case $v in
w[0-3]-"$n") ok "the shared cell ends with one writer's last value ($v)" ;;
*) not_ok "the shared cell ends with one writer's last value"; diag "it holds '$v'" ;;
esac
run ls c
out_is "the table lists exactly the lasting rows" <<'EOF'
r0
r1
r2
r3
shared
EOF

# A read and a commit of one open file at once (tests/fs_op readflush: a
# child reads a settings file its parent holds open for writing, while the
# parent writes it and closes a dup of the descriptor).  The daemon once
# invalidated the file's pages at that close while holding the handle, and
# the kernel waited for the page that the child's read held, which waited
# for the handle: neither ever finished.  Bounded here; a hang fails and
# aborts the mount (umount -f) so that nothing stays stuck.
mkdir c/.families/g || exit 1
"$FS_OP" readflush c/.families/g/ttl $((300 * ${SMOLFS_TEST_SCALE:-1})) >"$T/rf.out" 2>&1 &
rf_pid=$!
_n=0
while kill -0 "$rf_pid" 2>/dev/null && [ "$_n" -lt $((FS_TIMEOUT * 10)) ]; do
	sleep 0.1
	_n=$((_n + 1))
done
if kill -0 "$rf_pid" 2>/dev/null; then
	not_ok "a settings file read and committed through one open file at once: both finish"
	diag "fs_op readflush still runs after $FS_TIMEOUT seconds: the daemon hangs; aborting it"
	cd / || :
	umount -f "$MNT" 2>/dev/null   # aborts the connection: the stuck requests fail
	wait "$rf_pid"
	diag_file "$T/rf.out"
	exit 1
fi
wait "$rf_pid"
if [ "$(tail -n 1 "$T/rf.out")" = ok ]; then
	ok "a settings file read and committed through one open file at once: both finish"
else
	not_ok "a settings file read and committed through one open file at once: both finish"
	diag_file "$T/rf.out"
fi

cd / || exit 1
fs_unmount
done_testing
