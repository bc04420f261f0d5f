#!/bin/sh
# tests/fuzz/run.sh -- run libFuzzer targets for a fixed time, speaking TAP.
#
# Usage (from a build directory configured with --enable-fuzzing, as
# `make fuzz` calls it):  run.sh SRCDIR TARGET...
#
# Each target runs from its committed corpus (SRCDIR/tests/fuzz/corpus/T)
# plus its work directory (tests/fuzz/work/T, where new inputs go) for
# SMOLFS_FUZZ_SECONDS (default 60) and is one TAP assertion: ok with its
# executions when libFuzzer ends without a finding, not ok with the tail of
# its log and the saved input (tests/fuzz/findings/T-...) when it finds one.
# SMOLFS_FUZZ_JOBS targets run at a time (default: the number of CPUs), so
# that CI's run of all targets takes about SECONDS * TARGETS / JOBS.
# Exits 1 if any target failed.
set -u
srcdir=$1
shift
secs=${SMOLFS_FUZZ_SECONDS:-60}
jobs=${SMOLFS_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1

mkdir -p tests/fuzz/findings || exit 1
echo "1..$#"
echo "# each target ${secs} s, ${jobs} at a time"

# A target's result: its log says how it ended, its exit status whether
# libFuzzer found something (a crash, a leak, a timeout, a failed check).
fuzz_one() { # fuzz_one TARGET
	mkdir -p "tests/fuzz/work/$1" || return 1
	./tests/fuzz/fuzz_"$1" -max_total_time="$secs" -timeout=30 -print_final_stats=1 \
		-artifact_prefix="tests/fuzz/findings/$1-" \
		"tests/fuzz/work/$1" "$srcdir/tests/fuzz/corpus/$1" >"tests/fuzz/fuzz_$1.log" 2>&1
	echo $? >"tests/fuzz/fuzz_$1.rc"
}

report() { # report NUMBER TARGET
	rc=$(cat "tests/fuzz/fuzz_$2.rc" 2>/dev/null || echo missing)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "tests/fuzz/fuzz_$2.log")
	if [ "$rc" = 0 ] && [ -n "$execs" ]; then
		echo "ok $1 - fuzz $2: ${execs} executions in ${secs} s, no finding"
	else
		fail=1
		echo "not ok $1 - fuzz $2: exit status $rc (log tests/fuzz/fuzz_$2.log)"
		tail -n 40 "tests/fuzz/fuzz_$2.log" | sed 's/^/# /'
		for f in tests/fuzz/findings/"$2"-*; do
			[ -e "$f" ] && echo "# finding saved: $f"
		done
	fi
}

fail=0
n=0
set -- "$@"
while [ $# -gt 0 ]; do
	batch=""
	i=0
	while [ $# -gt 0 ] && [ "$i" -lt "$jobs" ]; do
		rm -f "tests/fuzz/fuzz_$1.rc"
		fuzz_one "$1" &
		batch="$batch $1"
		i=$((i + 1))
		shift
	done
	wait
	for t in $batch; do
		n=$((n + 1))
		report "$n" "$t"
	done
done
exit $fail
