#!/bin/sh
# bench-import.sh -- how fast smolctl imports and exports, against the
# engine's own random-write rate measured in the same run.
#
# Usage: tools/bench-import.sh [ROWS] [CELLS-PER-ROW]   (default 1000000 x 10)
# Run from a build directory (it uses ./smolctl and ./smolbench).
#
# It writes ROWS x CELLS JSON lines (row keys "user%08d", families "meta"
# and "stat", 40-byte string values, one timestamp each), then measures:
#   - smolctl import --create of the lines in key order, and shuffled;
#   - smolctl export of the result (time and peak RSS: it must stay flat);
#   - smolbench fillrandom of ROWS x CELLS entries (100-byte values), the
#     engine's raw rate that the issue compares import with.
# Each figure is one run; run it several times on a quiet machine and quote
# medians.  Needs about 3 GB of space in $TMPDIR (or /tmp).
set -eu

rows=${1:-1000000}
cells=${2:-10}
here=$(pwd)
[ -x "$here/smolctl" ] && [ -x "$here/smolbench" ] || {
	echo "bench-import.sh: run it from a build directory (no ./smolctl or ./smolbench)" >&2
	exit 2
}
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-import.XXXXXX")
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
# elapsed START: seconds since START, two decimals
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }'; }
# measured COMMAND...: run it (output to $work/cmd.out and .err), stop the
# benchmark if it fails, and leave its peak RSS in MiB in $rss (GNU time's,
# which counts the pages of the SSTables the engine maps: page cache, not
# memory the process allocated) and in $anon the peak of its anonymous
# memory (RssAnon: heap and stacks, sampled ten times a second).
measured() {
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f %M -o "$work/rss" "$@" >"$work/cmd.out" 2>"$work/cmd.err" &
	else
		"$@" >"$work/cmd.out" 2>"$work/cmd.err" &
	fi
	pid=$!
	peak_anon=0
	while kill -0 "$pid" 2>/dev/null; do
		# with GNU time the command is its child
		for p in "$pid" $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
			a=$(awk '/^RssAnon:/ { print $2 }' /proc/"$p"/status 2>/dev/null)
			[ -n "$a" ] && [ "$a" -gt "$peak_anon" ] && peak_anon=$a
		done
		sleep 0.1
	done
	wait "$pid" || {
		echo "bench-import.sh: $* failed:" >&2
		cat "$work/cmd.err" >&2
		exit 1
	}
	rss="?"
	[ -s "$work/rss" ] && rss=$(awk '{ printf "%.1f", $1 / 1024 }' "$work/rss")
	anon=$(awk -v k="$peak_anon" 'BEGIN { printf "%.1f", k / 1024 }')
}

echo "bench-import: $rows rows x $cells cells = $((rows * cells)) cells, in $work"
t=$(now)
awk -v rows="$rows" -v cells="$cells" 'BEGIN {
	print "{\"table\":\"users\",\"families\":{\"meta\":{\"type\":\"string\",\"max_versions\":0,\"ttl\":0,\"locality_group\":\"default\",\"compression\":1},\"stat\":{\"type\":\"string\",\"max_versions\":0,\"ttl\":0,\"locality_group\":\"default\",\"compression\":1}}}"
	srand(301)
	for (r = 0; r < rows; r++) {
		line = sprintf("{\"table\":\"users\",\"row\":\"user%08d\",\"cells\":[", r)
		for (c = 0; c < cells; c++) {
			v = sprintf("%08x-%08x-%08x-%08x-%05d", int(rand() * 2147483647),
				    int(rand() * 2147483647), r, c, r % 100000)
			line = line sprintf("%s{\"family\":\"%s\",\"qualifier\":\"q%02d\",\"ts\":%d,\"type\":\"string\",\"value\":\"%s\"}",
					    c ? "," : "", c % 2 ? "stat" : "meta", c, 1700000000000000 + r, v)
		}
		print line "]}"
	}
}' >"$work/sorted.jsonl"
{ head -1 "$work/sorted.jsonl"; tail -n +2 "$work/sorted.jsonl" | shuf --random-source="$work/sorted.jsonl"; } \
	>"$work/shuffled.jsonl"
bytes=$(wc -c <"$work/sorted.jsonl")
echo "  generated $bytes bytes of JSON lines in $(elapsed "$t") s"

n=$((rows * cells))
for order in sorted shuffled; do
	rm -rf "$work/db"
	t=$(now)
	measured "$here/smolctl" -d "$work/db" import --create "$work/$order.jsonl"
	s=$(elapsed "$t")
	echo "  import ($order): $s s, $(rate "$n" "$s") cells/s, peak RSS $rss MiB (anonymous $anon MiB)"
	eval "import_$order=$(rate "$n" "$s")"
done

t=$(now)
measured "$here/smolctl" -d "$work/db" export -o "$work/export.jsonl"
s=$(elapsed "$t")
echo "  export: $s s, $(rate "$n" "$s") cells/s, $(wc -c <"$work/export.jsonl") bytes, peak RSS $rss MiB (anonymous $anon MiB)"
rm -f "$work/export.jsonl" "$work/sorted.jsonl" "$work/shuffled.jsonl"
rm -rf "$work/db"

fill=$("$here/smolbench" --engines smolfs --benchmarks fillrandom --num "$n" --db "$work" --quiet |
	awk '$1 == "fillrandom" && $2 == "smolfs" { print $3 }')
echo "  smolbench fillrandom (100-byte values, $n entries): $fill ops/s"
awk -v a="$import_sorted" -v b="$import_shuffled" -v f="$fill" 'BEGIN {
	printf "  import / fillrandom: %.2f in key order, %.2f shuffled (the issue asks >= 0.5)\n", a / f, b / f
}'
