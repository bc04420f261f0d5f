#!/bin/sh
# bench_smoke.sh -- smolbench keeps working and keeps reporting what
# smolbench(1) promises: a tiny run on smolfs alone (and on the peers, when
# this smolbench has them) exits 0; each workload's line carries ops/s, the
# spread, the p50, p99, p99.9 and max latency, the counts over 1 ms and
# 10 ms and the anonymous and file-backed memory, in that order and
# consistent (p50 <= p99 <= p99.9 <= max); the values are compressible by
# default and incompressible with --values=random, as the header's zstd
# figures show; the JSON carries the same; the pause meter counts a freeze
# of the process.  A benchmark is not judged here:
# no figure is compared with a speed.
# shellcheck source=tests/ctl_lib.sh
. "$(dirname "$0")/ctl_lib.sh"

SMOLBENCH=${SMOLFS_BUILDDIR:-.}/smolbench
if [ ! -x "$SMOLBENCH" ]; then
	echo "1..0 # SKIP no smolbench at $SMOLBENCH"
	exit 0
fi

# bench ARGS...: smolbench with ARGS, quiet, its databases under $T/db
bench() {
	"$SMOLBENCH" --quiet --db "$T/db" --settle-timeout 120 "$@" >"$T/out" 2>"$T/err"
	status=$?
}

KV="fillseq fillrandom overwrite readrandom readseq seekrandom compact readrandom-compacted
seekrandom-compacted readseq-compacted"

# rows_sane ENGINE DESCRIPTION: every kv workload has a line for ENGINE whose
# latency columns are numbers in order (compact: "-", it is one operation),
# whose counts and memory are numbers, and readseq and the reads found all
# --num entries
rows_sane() {
	_engine=$1
	_desc=$2
	_bad=
	for w in $KV; do
		_line=$(awk -v w="$w" -v e="$_engine" '$1 == w && $2 == e' "$T/out")
		if [ -z "$_line" ]; then
			_bad="$_bad $w:missing"
			continue
		fi
		# shellcheck disable=SC2086
		set -- - $_line
		# $2 workload $3 engine $4 ops/s $5 spread $6 MB/s $7 p50 $8 p99
		# $9 p99.9 ${10} max ms ${11} >1ms ${12} >10ms ${13} anon ${14} file
		# (max is printed to 0.01 ms, so p99.9 may exceed it by 5 us)
		if [ "$w" = compact ]; then
			[ "$7" = - ] && [ "$8" = - ] && [ "$9" = - ] && [ "${10}" = - ] ||
				_bad="$_bad $w:latency"
		else
			echo "$7 $8 $9 ${10} ${11} ${12}" | awk '
				function num(x) { return x ~ /^[0-9]+(\.[0-9]+)?$/ }
				{ ok = num($1) && num($2) && num($3) && num($4) && num($5) && num($6) &&
				       $1 + 0 <= $2 + 0 && $2 + 0 <= $3 + 0 && $3 + 0 <= $4 * 1000 + 5 &&
				       $6 + 0 <= $5 + 0
				  exit !ok }' || _bad="$_bad $w:latency($7 $8 $9 ${10} ${11} ${12})"
		fi
		echo "$4 ${13} ${14}" | grep -E '^[0-9]+ [0-9]+ [0-9]+$' >/dev/null ||
			_bad="$_bad $w:figures($4 ${13} ${14})"
		[ "${13}" -gt 0 ] || _bad="$_bad $w:anon=0"
	done
	[ -z "$_bad" ]
	check $? "$_desc"
	[ -z "$_bad" ] || echo "# wrong:$_bad"
}

# zstd_keeps: the percentage zstd level 1 keeps of the values, from the header
zstd_keeps() {
	sed -n 's/.*zstd level 1 keeps \([0-9]*\)%.*/\1/p' "$T/out" | head -n 1
}

bench --engines smolfs --num 300 --runs 1 --value-sizes 100 --json "$T/r.json"
status_is 0 "a tiny run on smolfs alone exits 0"
out_has "compressible values (db_bench-style" "the values are compressible by default, and the header says so"
grep -E '^workload +engine +ops/s +% +MB/s +p50 +p99 +p99\.9 +ms +>1ms +>10ms +MiB +MiB +MiB +MiB +notes$' \
	"$T/out" >/dev/null
check $? "the table has the ops/s, spread, percentile, count and memory columns"
rows_sane smolfs "every workload's line has its figures, the percentiles in order"
k=$(zstd_keeps)
[ -n "$k" ] && [ "$k" -ge 30 ] && [ "$k" -le 60 ]
check $? "zstd keeps 30-60% of compressible values (it kept ${k:-?}%)"
grep -F '"latency_us": {"p50": ' "$T/r.json" >/dev/null &&
	grep -F '"peak_rss_anon_kb": ' "$T/r.json" >/dev/null &&
	grep -F '"values": "compressible"' "$T/r.json" >/dev/null
check $? "the JSON carries the latencies, the memory and the kind of values"
test ! -e "$T/db/smolfs-100-run1"
check $? "the run's database directory is removed"

bench --engines smolfs --num 300 --runs 2 --values=random --value-sizes 64 \
	--benchmarks fillrandom,readrandom
status_is 0 "two runs of incompressible values exit 0"
out_has "random values (incompressible)" "the header and the table say the values are random"
k=$(zstd_keeps)
[ -n "$k" ] && [ "$k" -ge 95 ]
check $? "zstd keeps at least 95% of random values (it kept ${k:-?}%)"
out_has "2 runs interleaved" "the header says the runs are interleaved"

# --keep-db: the database stays, and a run that starts with a read reads it
bench --engines smolfs --num 300 --runs 1 --value-sizes 100 --keep-db \
	--benchmarks fillrandom
status_is 0 "a --keep-db fill exits 0"
test -e "$T/db/smolfs-100-run1/CURRENT"
check $? "--keep-db leaves the run's database in its directory"
out_has "(kept after each run: --keep-db)" "and the header says so"
bench --engines smolfs --num 300 --runs 1 --value-sizes 100 --keep-db \
	--benchmarks readrandom
status_is 0 "a --keep-db run of readrandom alone exits 0"
grep -E '^readrandom +smolfs .*found 300 of 300' "$T/out" >/dev/null
check $? "it reads the kept database: every key is found"
"$SMOLBENCH" --keep-db --num 300 >"$T/out" 2>"$T/err"
status=$?
status_is 1 "--keep-db without --db is refused"
err_has "--keep-db: name the directory" "and the message says what is missing"

# The pause meter: freeze the benchmark's process (SIGSTOP) for 0.2 s a few
# times while a million reads run; the meter's thread is frozen with it and
# wakes late, so the run must count at least one pause of 0.15 s or more.
(
	bench --engines smolfs --num 100000 --reads 1000000 --benchmarks fillseq,readrandom \
		--runs 1 --value-sizes 100 --json "$T/p.json"
	echo "$status" >"$T/p.status"
) &
bpid=$!
stops=0
while kill -0 $bpid 2>/dev/null && [ $stops -lt 20 ]; do
	sleep 0.3
	# the subshell -> bench's smolbench -> the process that runs the engine
	procs=$(pgrep -P "$(pgrep -P $bpid | tr '\n' , | sed 's/,$//')" 2>/dev/null)
	[ -n "$procs" ] || continue
	# shellcheck disable=SC2086
	kill -STOP $procs 2>/dev/null
	sleep 0.2
	# shellcheck disable=SC2086
	kill -CONT $procs 2>/dev/null
	stops=$((stops + 1))
done
wait $bpid
status=$(cat "$T/p.status" 2>/dev/null || echo 99)
status_is 0 "a run frozen $stops times by SIGSTOP exits 0"
tr ',' '\n' <"$T/p.json" | awk -F': ' '
	$1 ~ /"machine_pauses_over_10ms"$/ { n = $2 + 0 }
	$1 ~ /"machine_pause_max_ms"$/ && n >= 1 && $2 + 0 >= 150 { f = 1 }
	END { exit !f }'
check $? "the pause meter counts the freezes: some workload has a pause of 150 ms or more"
grep -F 'machine paused: wakeups of a thread' "$T/out" >/dev/null
check $? "the legend says what a machine pause is"

bench --values=sometimes
status_is 1 "--values takes compressible or random only"
err_has "--values: 'sometimes'" "and says what it did not take"

if "$SMOLBENCH" --help | grep -F leveldb,rocksdb >/dev/null; then
	bench --engines smolfs,leveldb,rocksdb --num 300 --runs 1 --value-sizes 100
	status_is 0 "a tiny run on all three engines exits 0"
	rows_sane leveldb "LevelDB's lines have their figures"
	rows_sane rocksdb "RocksDB's lines have their figures"
	grep -E '^workload +smolfs/leveldb +noise +smolfs/rocksdb +noise$' "$T/out" >/dev/null
	check $? "the ratio table gives each ratio with its noise"
	out_has "snappy everywhere (LevelDB 1.23's C API offers no other compressor)" \
		"the header says LevelDB compresses with snappy"
else
	ok "# SKIP built without --with-peers"
fi

done_testing
