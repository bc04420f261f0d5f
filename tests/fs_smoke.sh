#!/bin/sh
# fs_smoke.sh -- a quick pass over the mounted tree, run by `make check` with
# every change of fs/: mount a fresh DATADIR, make a table, a family and
# cells with the shell's tools, read them back, edit with sed -i, remove,
# unmount and mount again, and stop the daemon with SIGTERM.  The full
# filesystem tests are tests/fs_*.sh.  POSIX sh, TAP.

SMOLFS=${SMOLFS_BUILDDIR:-.}/smolfs
if [ ! -x "$SMOLFS" ]; then
	echo "1..0 # SKIP no smolfs at $SMOLFS (set SMOLFS_BUILDDIR)"
	exit 0
fi
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
	echo "1..0 # SKIP no /dev/fuse or no fusermount3"
	exit 0
fi
LC_ALL=C
export LC_ALL

T=$(mktemp -d "${TMPDIR:-/tmp}/smolfs-smoke.XXXXXX") || exit 1
D=$T/data
M=$T/mnt
mkdir "$M"
cleanup() {
	st=$?
	fusermount3 -u "$M" 2>/dev/null
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		grep -q " $M " /proc/mounts || break
		sleep 0.2
	done
	rm -rf "$T"
	exit $st
}
trap cleanup EXIT
trap 'exit 1' INT TERM

n=0
fails=0
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fails=$((fails + 1))
	fi
}
# is GOT WANT NAME
is() {
	if [ "$1" = "$2" ]; then
		ok 0 "$3"
	else
		ok 1 "$3"
		printf '#   got:  %s\n#   want: %s\n' "$1" "$2"
	fi
}
mounted() {
	grep -q " $M fuse.smolfs " /proc/mounts
}
# wait until the mount is gone (the daemon unmounts, then exits)
# Unmounted, and the daemon gone: it closes the database after the unmount,
# and holds DATADIR's lock until then, so a remount right after the unmount
# alone can find it still in use (seen on a loaded machine).
wait_unmounted() {
	for _ in $(seq 1 100); do
		if ! mounted && ! pgrep -f "smolfs $D $M" >/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

"$SMOLFS" --version >"$T/out" 2>&1
ok $? "smolfs --version runs"
"$SMOLFS" "$D" "$M" 2>"$T/err"
ok $? "smolfs mounts a new DATADIR"
mounted
ok $? "the mount is listed as fuse.smolfs"
is "$(stat -c %a "$D")" 700 "DATADIR is created with mode 0700"
is "$(find "$D" -type f ! -perm 600 | wc -l | tr -d ' ')" 0 "and its files are 0600"

mkdir "$M/aircraft" && mkdir "$M/aircraft/.families/meta" "$M/aircraft/.families/stats"
ok $? "mkdir makes a table and declares families"
is "$(cat "$M/aircraft/.families/meta/type")" string "a new family's type is string"
echo i64 >"$M/aircraft/.families/stats/type"
is "$(cat "$M/aircraft/.families/stats/type")" i64 "echo changes a family's type"
echo 0 >"$M/aircraft/.families/stats/max_versions"
(echo abc >"$M/aircraft/.families/stats/max_versions") 2>/dev/null
is "$(cat "$M/aircraft/.families/stats/max_versions")" 0 "a bad setting changes nothing"

R="$M/aircraft/plane#TF-FIR"
mkdir -p "$R/meta" "$R/stats"
ok $? "mkdir -p makes a row and families in it"
echo "Airbus A321" >"$R/meta/model"
is "$(cat "$R/meta/model")" "Airbus A321" "echo then cat a string cell"
is "$(stat -c %s "$R/meta/model")" "$(cat "$R/meta/model" | wc -c | tr -d ' ')" \
	"st_size is what cat prints"
echo 51000000 >"$R/stats/miles"
(echo abc >"$R/stats/miles") 2>/dev/null
ok $((! $?)) "echo abc into an i64 cell fails"
is "$(cat "$R/stats/miles")" 51000000 "and the old value stays"
echo 5 >"$R/stats/miles"
is "$(cat "$R/stats/miles")" 5 "a shorter value replaces a longer one"
old=$(ls "$R/stats" | grep '^miles@')
is "$(cat "$R/stats/$old")" 51000000 "the older version is miles@ts"
is "$(getfattr --only-values -n user.smolfs.type "$R/stats/miles" 2>/dev/null)" i64 \
	"user.smolfs.type shows the cell's type"
sed -i 's/Airbus/Boeing/' "$R/meta/model"
is "$(cat "$R/meta/model")" "Boeing A321" "sed -i edits a cell"
echo 7 >"$R/stats/new" && mv "$R/stats/new" "$R/stats/miles"
is "$(cat "$R/stats/miles")" 7 "mv over a cell gives it the moved value"
is "$(ls "$R/stats" | grep -c '^miles@')" 0 "and replaces all its versions (no miles@ts)"
is "$(ls "$R/stats" | grep -c '^new')" 0 "and the source name is gone"
setfattr -n user.smolfs.type -v string "$R/stats/miles"
ok $? "setfattr user.smolfs.type converts an i64 cell to string"
is "$(getfattr --only-values -n user.smolfs.type "$R/stats/miles" 2>/dev/null) $(cat "$R/stats/miles")" \
	"string 7" "the cell has the new type and the same value"
(setfattr -n user.smolfs.type -v i64 "$R/meta/model") 2>/dev/null
ok $((! $?)) "converting \"Boeing A321\" to i64 fails"
is "$(getfattr --only-values -n user.smolfs.type "$R/meta/model" 2>/dev/null) $(cat "$R/meta/model")" \
	"string Boeing A321" "and the cell is unchanged"
is "$(ls "$M/aircraft")" "plane#TF-FIR" "ls of a table lists its rows"
is "$(ls "$M/aircraft/.prefix/plane")" "plane#TF-FIR" "ls of .prefix/p lists matching rows"
is "$(ls -A "$M/aircraft/.prefix")" "" ".prefix itself lists nothing"
(: >"$M/aircraft/file") 2>/dev/null
ok $((! $?)) "a file at the table level is refused"

mkdir "$T/mnt2"
"$SMOLFS" -f "$D" "$T/mnt2" >"$T/out" 2>"$T/err"
ok $((! $?)) "a second smolfs on the same DATADIR is refused"
grep -q "in use" "$T/err"
ok $? "with a message saying why"

fusermount3 -u "$M"
wait_unmounted
ok $? "fusermount3 -u unmounts"
"$SMOLFS" "$D" "$M" 2>"$T/err"
ok $? "the DATADIR mounts again"
is "$(cat "$R/meta/model")" "Boeing A321" "a cell survives the remount"
rm -r "$R"
ok $? "rm -r removes a row"
is "$(ls "$M/aircraft")" "" "and the table is empty"
pid=$(pgrep -f "smolfs $D $M" | head -1)
kill -TERM "$pid"
wait_unmounted
ok $? "SIGTERM unmounts"
"$SMOLFS" "$D" "$M" 2>"$T/err"
ok $? "and the DATADIR mounts again (the lock was released)"

echo "1..$n"
[ "$fails" = 0 ]
