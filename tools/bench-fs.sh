#!/bin/sh
# tools/bench-fs.sh -- the filesystem benchmark: the same work, in one run, on
# a plain tmpfs directory, on libfuse's passthrough_ll over tmpfs, and on
# smolfs (its data directory on tmpfs too), with medians of several runs and
# ratios to tmpfs and to passthrough_ll; the small-cell work also runs on
# benchfloor, a daemon that answers from memory at once, whose times are
# the floor FUSE itself sets.  Run from the build directory (it uses
# ./smolfs, ./smolctl and ./benchfloor), as a user who may mount FUSE:
#
#   tools/bench-fs.sh [-n CELLS] [-r RUNS] [-l LISTING-ROWS] [-k]
#
#   -n CELLS         small cells created, read and stat'ed (default 100000)
#   -r RUNS          runs per workload; the median is reported (default 3)
#   -l ROWS          rows of the big table listed with ls (default 1000000)
#   -k               keep the scratch directory (under $BENCH_TMPFS)
#
# The work (smolfs(1) describes the tree):
#   create       CELLS cells of 8-16 bytes: open, write, close (100 rows of
#                CELLS/100 cells; tmpfs and passthrough_ll get the same tree)
#   read cold    every cell read back after a remount (tmpfs: no remount)
#   read warm    the same read again
#   stat         stat(2) of every cell
#   ls -l        of one family (one directory) of 10,000 cells
#   10 MiB       write (cp from tmpfs) and cat of one 10 MiB bytes cell
#   smolfs only: ls of a ROWS-row table (entries/s, and the daemon's peak RSS
#                and anonymous RSS before and after: flat anonymous memory
#                means the listing streams; the data files the engine maps
#                count in RSS as page-cache pages and are shown apart),
#                and ls of a 100-row prefix in a 10,000-row and in the
#                ROWS-row table (the same cost is the goal).
# passthrough_ll is built from Debian's libfuse3-dev examples
# (/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c) in the scratch
# directory at each run; nothing of it is kept.
set -eu

cells=100000
runs=3
bigrows=1000000
keep=no
while getopts n:r:l:k opt; do
	case $opt in
	n) cells=$OPTARG ;;
	r) runs=$OPTARG ;;
	l) bigrows=$OPTARG ;;
	k) keep=yes ;;
	*) sed -n '2,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
LC_ALL=C
export LC_ALL
B=$(pwd)
SMOLFS=$B/smolfs
SMOLCTL=$B/smolctl
FLOOR=$B/benchfloor
EXAMPLES=/usr/share/doc/libfuse3-dev/examples
for f in "$SMOLFS" "$SMOLCTL" "$FLOOR"; do
	[ -x "$f" ] || { echo "bench-fs: $f is not built (run from the build directory)" >&2; exit 1; }
done
[ -c /dev/fuse ] || { echo "bench-fs: no /dev/fuse" >&2; exit 1; }
[ -f "$EXAMPLES/passthrough_ll.c" ] ||
	{ echo "bench-fs: $EXAMPLES/passthrough_ll.c is missing (apt-get install libfuse3-dev)" >&2; exit 1; }
tmpfs=${BENCH_TMPFS:-/dev/shm}
[ "$(stat -f -c %T "$tmpfs")" = tmpfs ] ||
	{ echo "bench-fs: $tmpfs is not a tmpfs (set BENCH_TMPFS)" >&2; exit 1; }

# passthrough_ll keeps a descriptor open for every inode the kernel holds:
# raise the limit, and where it cannot go high enough, create fewer cells
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || :
fdmax=$(ulimit -n)
if [ "$fdmax" != unlimited ] && [ "$cells" -gt $((fdmax - 4000)) ]; then
	echo "bench-fs: passthrough_ll needs a descriptor per file and the limit is $fdmax:" \
		"$((fdmax - 4000)) cells instead of $cells" >&2
	cells=$((fdmax - 4000))
fi

W=$(mktemp -d "$tmpfs/bench-fs.XXXXXX")
mounted=
daemon=
cleanup() {
	for m in $mounted; do
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null || :
	done
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null || :
	if [ "$keep" = no ]; then rm -rf "$W"; else echo "bench-fs: kept $W" >&2; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---------------------------------------------------------------- helpers, built here
cc -O2 -o "$W/passthrough_ll" -I"$EXAMPLES" "$EXAMPLES/passthrough_ll.c" \
	$(pkg-config --cflags --libs fuse3) 2>"$W/cc.err" ||
	{ cat "$W/cc.err" >&2; exit 1; }
cat >"$W/fsb.c" <<'EOF'
/* fsb OP DIR ROWS PER: the timed loops of bench-fs.sh; prints the seconds taken.
 * Cells are DIR/rNNNNN/f/qNNNNN; create makes the row and family directories. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "fsb: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	char path[4096], buf[64], got[64];
	long rows, per, r, q;
	const char *op, *dir;
	double t0;

	if (argc != 5)
		return 2;
	op = argv[1];
	dir = argv[2];
	rows = atol(argv[3]);
	per = atol(argv[4]);
	t0 = now();
	for (r = 0; r < rows; r++) {
		if (strcmp(op, "create") == 0) {
			snprintf(path, sizeof(path), "%s/r%05ld", dir, r);
			if (mkdir(path, 0755) != 0 && errno != EEXIST)
				die("mkdir", path);
			snprintf(path, sizeof(path), "%s/r%05ld/f", dir, r);
			if (mkdir(path, 0755) != 0 && errno != EEXIST)
				die("mkdir", path);
		}
		for (q = 0; q < per; q++) {
			int fd, n;
			struct stat st;

			snprintf(path, sizeof(path), "%s/r%05ld/f/q%05ld", dir, r, q);
			n = snprintf(buf, sizeof(buf), "value %ld\n", r * per + q);
			if (strcmp(op, "create") == 0) {
				fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
				if (fd < 0)
					die("open", path);
				if (write(fd, buf, (size_t)n) != n)
					die("write", path);
				if (close(fd) != 0)
					die("close", path);
			} else if (strcmp(op, "read") == 0) {
				fd = open(path, O_RDONLY);
				if (fd < 0)
					die("open", path);
				if (read(fd, got, sizeof(got)) != n || memcmp(got, buf, (size_t)n) != 0)
					die("read (short or wrong)", path);
				close(fd);
			} else if (strcmp(op, "stat") == 0) {
				if (stat(path, &st) != 0)
					die("stat", path);
				if (st.st_size != n) {
					errno = EINVAL;
					die("stat (wrong size)", path);
				}
			} else {
				return 2;
			}
		}
	}
	printf("%.6f\n", now() - t0);
	return 0;
}
EOF
cc -O2 -o "$W/fsb" "$W/fsb.c" || exit 1

# ---------------------------------------------------------------- mounts
# mount_target NAME: a fresh, mounted target; prints its root
# (tmpfs: a directory; passthrough: passthrough_ll over a tmpfs directory;
# smolfs: a data directory on tmpfs, with table b and family f declared)
tgt_root() { echo "$W/$1.mnt"; }

mount_target() {
	root=$(tgt_root "$1")
	case $1 in
	tmpfs)
		mkdir -p "$root/b" ;;
	passthrough)
		mkdir -p "$W/pt.src/b" "$root"
		"$W/passthrough_ll" -o source="$W/pt.src" "$root"
		mounted="$mounted $root" ;;
	floor)
		# the tree is empty until the create loop has run on it
		mkdir -p "$root"
		full=0
		[ -f "$W/floor.made" ] && full=1
		FLOOR_PER=$per FLOOR_FULL=$full "$FLOOR" "$root"
		mounted="$mounted $root" ;;
	smolfs)
		mkdir -p "$root"
		"$SMOLFS" "$W/smolfs.data" "$root"
		mounted="$mounted $root"
		[ -d "$root/b" ] || { mkdir "$root/b" && mkdir "$root/b/.families/f" &&
			echo string >"$root/b/.families/f/type"; } ;;
	esac
}

unmount_target() {
	root=$(tgt_root "$1")
	case $1 in
	tmpfs) ;;
	*)
		fusermount3 -u "$root"
		# the daemon is done once the mount point is a plain directory again
		while awk -v m="$root" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts; do
			sleep 0.05
		done
		if [ "$1" = smolfs ]; then
			# and the data directory's lock is released
			n=0
			while ! "$SMOLCTL" -d "$W/smolfs.data" list-tables >/dev/null 2>&1 &&
				[ "$n" -lt 200 ]; do
				sleep 0.05
				n=$((n + 1))
			done
		fi ;;
	esac
}

wipe_target() {
	case $1 in
	tmpfs) rm -rf "$(tgt_root tmpfs)" ;;
	passthrough) rm -rf "$W/pt.src" ;;
	floor) rm -f "$W/floor.made" ;;
	smolfs) rm -rf "$W/smolfs.data" ;;
	esac
}

daemon_pid() { # the smolfs daemon serving the mount
	for p in $(pgrep -x smolfs 2>/dev/null); do
		if tr '\0' ' ' <"/proc/$p/cmdline" | grep -F "$W/smolfs.data" >/dev/null; then
			echo "$p"
			return
		fi
	done
}

# timed CMD...: seconds taken by a command (its output discarded)
timed() {
	s=$(date +%s.%N)
	"$@" >/dev/null
	e=$(date +%s.%N)
	awk -v s="$s" -v e="$e" 'BEGIN { printf "%.6f\n", e - s }'
}

# results: lines "WORKLOAD TARGET SECONDS" in $W/results
record() { echo "$1 $2 $3" >>"$W/results"; }

div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", (b > 0 ? a / b : 0) }'; }

median() { # the median of numbers on stdin
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

rows=100
per=$(( (cells + rows - 1) / rows ))
cells=$((rows * per))
head -c 10485760 /dev/urandom >"$W/big.src"
: >"$W/results"
echo "bench-fs: $cells cells ($rows rows of $per), $runs runs, on $tmpfs; $(nproc) CPUs" >&2

# ---------------------------------------------------------------- small cells
for run in $(seq 1 "$runs"); do
	for t in tmpfs passthrough floor smolfs; do
		wipe_target "$t"
		mount_target "$t"
		root=$(tgt_root "$t")
		record create "$t" "$("$W/fsb" create "$root/b" "$rows" "$per")"
		[ "$t" = floor ] && : >"$W/floor.made"
		unmount_target "$t"
		mount_target "$t"
		record "read-cold" "$t" "$("$W/fsb" read "$root/b" "$rows" "$per")"
		record "read-warm" "$t" "$("$W/fsb" read "$root/b" "$rows" "$per")"
		record stat "$t" "$("$W/fsb" stat "$root/b" "$rows" "$per")"
		if [ "$t" = floor ]; then   # it holds no other tree
			unmount_target "$t"
			continue
		fi
		# one family of 10,000 cells, in a table w of its own (after a
		# remount, so that passthrough_ll's descriptors are not exhausted)
		unmount_target "$t"
		mount_target "$t"
		mkdir "$root/w"
		[ "$t" = smolfs ] && mkdir "$root/w/.families/f"
		"$W/fsb" create "$root/w" 1 10000 >/dev/null
		ls -l "$root/w/r00000/f" >/dev/null
		record "ls-l-10k" "$t" "$(timed ls -l "$root/w/r00000/f")"
		# a 10 MiB bytes cell
		if [ "$t" = smolfs ] && [ ! -d "$root/b/.families/blob" ]; then
			mkdir "$root/b/.families/blob" && echo bytes >"$root/b/.families/blob/type"
		fi
		mkdir -p "$root/b/big/blob"
		record "write-10M" "$t" "$(timed cp "$W/big.src" "$root/b/big/blob/cell")"
		cmp -s "$W/big.src" "$root/b/big/blob/cell" || echo "bench-fs: $t: the 10 MiB cell differs" >&2
		record "cat-10M" "$t" "$(timed cat "$root/b/big/blob/cell")"
		unmount_target "$t"
	done
done

# ---------------------------------------------------------------- smolfs only: listings
# gen ROWS: JSON lines of a table "big" with ROWS rows "row%08d" (one cell each)
gen() {
	awk -v n="$1" 'BEGIN {
		print "{\"table\":\"big\",\"families\":{\"f\":{\"type\":\"string\",\"max_versions\":0,\"ttl\":0,\"locality_group\":\"default\",\"compression\":1}}}"
		for (i = 0; i < n; i++)
			printf "{\"table\":\"big\",\"row\":\"row%08d\",\"cells\":[{\"family\":\"f\",\"qualifier\":\"q\",\"ts\":1700000000000000,\"type\":\"string\",\"value\":\"v%d\"}]}\n", i, i
	}'
}
list_bench() { # list_bench ROWS: ls of the whole table and of a 100-row prefix
	rm -rf "$W/smolfs.data"
	gen "$1" | "$SMOLCTL" -d "$W/smolfs.data" import --create - >/dev/null
	"$SMOLCTL" -d "$W/smolfs.data" compact big >/dev/null
	mount_target smolfs
	root=$(tgt_root smolfs)
	pid=$(daemon_pid)
	hwm0=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
	anon0=$(awk '/^RssAnon/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
	# a prefix of 100 rows: row000123xx
	p=$(printf 'row%06d' $(( $1 / 200 )))
	for run in $(seq 1 "$runs"); do
		record "ls-prefix-100-of-$1" smolfs "$(timed ls "$root/big/.prefix/$p")"
	done
	n=$(ls "$root/big/.prefix/$p" | wc -l)
	[ "$n" -eq 100 ] || echo "bench-fs: the prefix $p lists $n rows, not 100" >&2
	for run in $(seq 1 "$runs"); do
		record "ls-$1-rows" smolfs "$(timed ls -f "$root/big")"
	done
	hwm1=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
	anon1=$(awk '/^RssAnon/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
	# the data files the engine maps count in VmRSS as file (or, on tmpfs,
	# shmem) pages: the page cache's, shared, not the daemon's own memory
	mapped=$(awk '/^Rss(File|Shmem)/ { n += $2 } END { print n + 0 }' "/proc/$pid/status" \
		2>/dev/null || echo 0)
	sst=$(du -sk "$W/smolfs.data" | awk '{ print $1 }')
	echo "peak-rss-kib-$1-rows smolfs before $hwm0 after $hwm1;" \
		"anonymous before $anon0 after $anon1; mapped files $mapped (data directory $sst)" \
		>>"$W/memory"
	unmount_target smolfs
}
: >"$W/memory"
list_bench 10000
list_bench "$bigrows"

# ---------------------------------------------------------------- report
echo
printf '%-12s %10s %12s %10s %10s %9s %9s %9s\n' workload tmpfs passthrough floor smolfs \
	'vs tmpfs' 'vs pt_ll' 'vs floor'
for w in create read-cold read-warm stat ls-l-10k write-10M cat-10M; do
	m_t=$(awk -v w=$w '$1 == w && $2 == "tmpfs" { print $3 }' "$W/results" | median)
	m_p=$(awk -v w=$w '$1 == w && $2 == "passthrough" { print $3 }' "$W/results" | median)
	m_f=$(awk -v w=$w '$1 == w && $2 == "floor" { print $3 }' "$W/results" | median)
	m_s=$(awk -v w=$w '$1 == w && $2 == "smolfs" { print $3 }' "$W/results" | median)
	# ratios as speed: >1 means smolfs is faster
	if grep -q "^$w floor " "$W/results"; then
		printf '%-12s %9.4fs %11.4fs %9.4fs %9.4fs %8.3fx %8.3fx %8.3fx\n' "$w" \
			"$m_t" "$m_p" "$m_f" "$m_s" \
			"$(div "$m_t" "$m_s")" "$(div "$m_p" "$m_s")" "$(div "$m_f" "$m_s")"
	else
		printf '%-12s %9.4fs %11.4fs %10s %9.4fs %8.3fx %8.3fx %9s\n' "$w" \
			"$m_t" "$m_p" - "$m_s" "$(div "$m_t" "$m_s")" "$(div "$m_p" "$m_s")" -
	fi
done
echo
for w in $(awk '$2 == "smolfs" && $1 ~ /^ls-/ && $1 != "ls-l-10k" { print $1 }' "$W/results" | sort -u); do
	m=$(awk -v w=$w '$1 == w { print $3 }' "$W/results" | median)
	case $w in
	ls-prefix-*) printf '%-28s %11.4fs\n' "$w" "$m" ;;
	*) n=${w#ls-}; n=${n%-rows}
	   printf '%-28s %11.4fs %12.0f entries/s\n' "$w" "$m" "$(div "$n" "$m")" ;;
	esac
done
sed 's/^/# /' "$W/memory"
echo "# medians of $runs runs; the ratios are speeds (tmpfs's, passthrough_ll's or the floor's time / smolfs's time: above 1 is smolfs faster)"
echo "# floor: benchfloor, a daemon answering from memory at once (small cells only)"
