#!/bin/sh
# bench-guard.sh -- what the SIGBUS guard on mapped tables costs, side by side.
#
#   tools/bench-guard.sh GUARDED UNGUARDED [RUNS]
#
# GUARDED is a smolbench of a normal build; UNGUARDED a smolbench built with
# CPPFLAGS=-DSMOLFS_BENCH_UNGUARDED_MAP (a benchmark-only build that reads
# the table map without the guard; never ship it).  For 100-byte and 1 KiB
# values (smolbench's default compressible data), before and after a full
# compaction, it runs the unguarded map, the guarded map (the default) and
# pread (--pread-tables) interleaved, RUNS times (default 3), and prints the
# median ops/s of each read workload with its ratio to the unguarded map.
set -u
if [ $# -lt 2 ]; then
	echo "usage: $0 GUARDED-SMOLBENCH UNGUARDED-SMOLBENCH [RUNS]" >&2
	exit 2
fi
guarded=$1
unguarded=$2
runs=${3:-3}
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT INT TERM

for size in 100 1024; do
	if [ "$size" = 100 ]; then num=500000; reads=200000; else num=100000; reads=100000; fi
	for phase in before after; do
		if [ "$phase" = before ]; then
			list=fillrandom,readrandom,seekrandom,readseq
		else
			list=fillrandom,readrandom-compacted,readseq,seekrandom
		fi
		run=1
		while [ "$run" -le "$runs" ]; do
			for mode in unguarded guarded pread; do
				case $mode in
				unguarded) bin=$unguarded; extra= ;;
				guarded) bin=$guarded; extra= ;;
				pread) bin=$guarded; extra=--pread-tables ;;
				esac
				# shellcheck disable=SC2086
				"$bin" --engines smolfs --quiet --num $num --reads $reads \
					--value-size $size --benchmarks $list $extra 2>&1 |
				awk -v s=$size -v p=$phase -v m=$mode \
					'$2 == "smolfs" && $1 ~ /^(read|seek)/ { print s, p, $1, m, $3 }' >>"$out" ||
					exit 1
			done
			run=$((run + 1))
		done
	done
done

sort -k1,1n -k2,2 -k3,3 -k4,4 -k5,5n "$out" | awk '
function flush(   i, mid) {
	if (n == 0) return
	mid = v[int((n + 1) / 2)]
	med[key] = mid
	n = 0
}
{
	k = $1 " B " $2 " " $3 " " $4
	if (k != key) { flush(); key = k; order[++nk] = k }
	v[++n] = $5
}
END {
	flush()
	printf "%-38s %12s %18s %18s\n", "values, phase, workload", "unguarded", "guarded", "pread"
	for (i = 1; i <= nk; i++) {
		split(order[i], f, " ")
		if (f[5] != "guarded") continue
		base = f[1] " B " f[3] " " f[4]
		u = med[base " unguarded"]; g = med[base " guarded"]; p = med[base " pread"]
		printf "%-38s %12d %11d (%.2f) %11d (%.2f)\n", base, u, g, g / u, p, p / u
	}
}'
