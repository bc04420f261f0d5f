#!/bin/sh
# fs_rm.sh -- removing through a real mount: rm -r of a row (every cell,
# version and family gone, and still gone after the daemon is killed with
# -9), an emptied family directory that stays until rmdir'ed, rmdir of a
# table while it has rows (ENOTEMPTY), rm -rf of every row of a larger
# table (each cell unlinked) with the daemon's peak memory bounded, and
# rm -rf of a whole table.  Sizes scale with SMOLFS_TEST_SCALE.  POSIX sh, TAP.

. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 20

scale=${SMOLFS_TEST_SCALE:-1}
ncells=$((400 * scale))     # cells of the row removed with rm -r
nrows=$((1000 * scale))     # rows of the table whose rows are all removed

# the tables, written with smolctl before the mount
{
	echo '{"table":"t","families":{"f":{},"g":{}}}'
	echo '{"table":"many","families":{"f":{}}}'
	awk -v n="$ncells" 'BEGIN {
		printf "{\"table\":\"t\",\"row\":\"big\",\"cells\":["
		for (i = 0; i < n; i++)
			printf "%s{\"family\":\"f\",\"qualifier\":\"c%05d\",\"value\":\"v%d\"}",
				(i ? "," : ""), i, i
		printf ",{\"family\":\"g\",\"qualifier\":\"x\",\"ts\":1000,\"value\":\"old\"}"
		printf ",{\"family\":\"g\",\"qualifier\":\"x\",\"ts\":2000,\"value\":\"new\"}]}\n"
	}'
	echo '{"table":"t","row":"r2","cells":[{"family":"f","qualifier":"only","value":"1"},{"family":"g","qualifier":"a","value":"2"},{"family":"g","qualifier":"b","value":"3"}]}'
	echo '{"table":"t","row":"r3","cells":[{"family":"f","qualifier":"z","value":"4"}]}'
	awk -v n="$nrows" 'BEGIN {
		for (r = 0; r < n; r++)
			printf "{\"table\":\"many\",\"row\":\"row%06d\",\"cells\":[" \
				"{\"family\":\"f\",\"qualifier\":\"a\",\"value\":\"%d\"}," \
				"{\"family\":\"f\",\"qualifier\":\"b\",\"value\":\"%d\"}," \
				"{\"family\":\"f\",\"qualifier\":\"c\",\"value\":\"%d\"}]}\n", r, r, r, r
	}'
} >"$T/load.jsonl"
run "$SMOLCTL" -d "$DATADIR" import --create "$T/load.jsonl"
check "$status" "import a row of $ncells cells and a table of $nrows rows"

fs_mount
M=$MNT

# ---------------------------------------------------------------- rm -r row
n=$(ls "$M/t/big/f" | wc -l)
[ "$n" -eq "$ncells" ]
check $? "the row lists its $ncells cells ($n)"
run rm -r "$M/t/big"
succeeds "rm -r of the row"
run ls "$M/t"
out_is "the table no longer lists it" <<'EOF'
r2
r3
EOF
op_is "stat ENOENT" "the row is gone" ino "$M/t/big"

# ---------------------------------------------------------------- emptied family
# the last cell of f in r2, then cells elsewhere (the daemon settles whether
# a family was emptied lazily: these interleave the rows)
sh_run "rm '$M/t/r2/f/only' && rm '$M/t/r2/g/a' && rm '$M/t/r3/f/z'"
succeeds "rm of the last cell of a family, of a cell of another family, of another row's only cell"
sh_run "cd '$M/t' && ls . r2 r2/f r3 r3/f"
out_is "emptied directories stay listed, empty, until rmdir" <<'EOF'
.:
r2
r3

r2:
f
g

r2/f:

r3:
f

r3/f:
EOF
sh_run "rmdir '$M/t/r2/f' && ls '$M/t/r2' && rm -r '$M/t/r3' && ls '$M/t'"
out_is "rmdir of the emptied family; rm -r of the emptied row" <<'EOF'
g
r2
EOF
op_is "rmdir ENOTEMPTY" "rmdir of a table with a row: ENOTEMPTY" rmdir "$M/t"
op_is "rmdir ENOTEMPTY" "rmdir of a row with a cell: ENOTEMPTY" rmdir "$M/t/r2"

# ---------------------------------------------------------------- kill -9
# an unlink that returned 0 is in the log: the daemon killed at once after
# it does not bring the cell back
sh_run "rm '$M/t/r2/g/b' && ls '$M/t/r2/g'"
out_is "rm of a cell, then the daemon is killed with -9" </dev/null
kill -KILL "$fs_pid"
wait "$fs_pid" 2>/dev/null
fs_pid=
fusermount3 -u "$M" 2>/dev/null || fusermount3 -u -z "$M" 2>/dev/null
fs_mount
run ls "$M/t" "$M/many/row000000/f"
out_is "after the restart the removed cells are still gone (and the rest is there)" <<EOF
$M/many/row000000/f:
a
b
c

$M/t:
EOF

# ---------------------------------------------------------------- rm -rf of many rows
# every cell of every row unlinked (the glob leaves .families alone), with
# the daemon's peak memory read from /proc before and after
hwm() {
	awk '/^VmHWM:/ {print $2}' "/proc/$fs_pid/status"
}
h0=$(hwm)
sh_run "cd '$M/many' && rm -rf row*"
succeeds "rm -rf of the $nrows rows of a table"
h1=$(hwm)
diag "daemon VmHWM: ${h0} kB before, ${h1} kB after"
if grep -q __asan_init "$SMOLFS"; then
	# AddressSanitizer keeps freed memory aside (256 MiB by default)
	skip "a sanitizer build's peak memory holds its quarantine" \
		"the daemon's peak memory grew by less than 64 MiB"
else
	[ -n "$h0" ] && [ -n "$h1" ] && [ $((h1 - h0)) -lt $((64 * 1024)) ]
	check $? "the daemon's peak memory grew by less than 64 MiB ($((h1 - h0)) kB)"
fi
run ls -A "$M/many"
out_is "the table lists no row" <<'EOF'
.families
EOF
run rmdir "$M/many"
succeeds "rmdir of the emptied table drops it"

# ---------------------------------------------------------------- rm -rf of a table
run rm -rf "$M/t"
succeeds "rm -rf of a whole table (its .families too)"
run ls -A "$M"
out_is "no table is left" </dev/null
fs_unmount
run "$SMOLCTL" -d "$DATADIR" list-tables
out_is "smolctl sees no table either" </dev/null
done_testing
