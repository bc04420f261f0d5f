#!/bin/sh
# fs_concurrency.sh -- several processes at once on one mount: writers of
# their own cells and of one shared cell, and a process that creates and
# removes rows while others list the table.  No crash, no error, no listing
# that skips or repeats a row that stayed, and every cell ends with one of
# the values written to it.  (Readers during the writes: fs_atomic.sh.)
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 8

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

cd / || exit 1
fs_unmount
done_testing
