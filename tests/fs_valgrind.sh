#!/bin/sh
# fs_valgrind.sh -- the daemon under valgrind's memcheck: a smoke workload
# through the mount (tables, families, cells of several types, versions,
# appends, renames, removals, listings, xattrs), an unmount, a remount that
# replays the log and reads everything back, and a second unmount.  Each
# daemon must report no memory error and no definite or indirect leak
# (valgrind --error-exitcode makes the daemon's exit status say so, and
# its log is checked for the error summary).
#
# Needs valgrind (CI installs it); skipped, saying so, without it.  The
# ASan build's daemon cannot run under valgrind: skipped there too.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

if ! command -v valgrind >/dev/null 2>&1; then
	echo "1..0 # SKIP valgrind is not installed"
	exit 0
fi
if grep -q -a __asan_init "$SMOLFS" 2>/dev/null; then
	echo "1..0 # SKIP the daemon is built with AddressSanitizer, which valgrind cannot run"
	exit 0
fi

plan 9
FS_TIMEOUT=$((FS_TIMEOUT > 180 ? FS_TIMEOUT : 180))   # valgrind starts slowly
VG_ERR=97

# vg_clean N: valgrind's log of daemon run N holds an error summary of 0
# and no definite or indirect leak
vg_clean() {
	grep -q 'ERROR SUMMARY: 0 errors' "$T/vg.$1.log" &&
		! grep -q -E '(definitely|indirectly) lost: [1-9]' "$T/vg.$1.log"
}

# vg_check N WHICH: the assertion on daemon run N's report, shown if it fails
vg_check() {
	if vg_clean "$1"; then
		ok "valgrind's report of the $2 daemon: 0 errors, nothing definitely or indirectly lost"
	else
		not_ok "valgrind's report of the $2 daemon: 0 errors, nothing definitely or indirectly lost"
		diag_file "$T/vg.$1.log"
	fi
}

vg_mount() {
	FS_WRAPPER="valgrind --error-exitcode=$VG_ERR --leak-check=full \
--errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
--log-file=$T/vg.$1.log"
	fs_mount
	FS_WRAPPER=
}

vg_mount 1
M=$MNT
mkdir "$M/t" && mkdir "$M/t/.families/meta" && echo i64 >"$M/t/.families/meta/type" &&
	mkdir "$M/t/.families/doc" && echo string >"$M/t/.families/doc/type" &&
	echo 3 >"$M/t/.families/doc/max_versions"
check $? "schema: a table, two families, their settings"
rc=0
for i in 1 2 3 4 5 6 7 8; do
	mkdir -p "$M/t/row$i/meta" "$M/t/row$i/doc" || rc=1
	echo "$((i * 1000))" >"$M/t/row$i/meta/miles" || rc=1
	echo "first $i" >"$M/t/row$i/doc/note" || rc=1
	echo "second $i" >"$M/t/row$i/doc/note" || rc=1
	echo "more" >>"$M/t/row$i/doc/note" || rc=1
done
check $rc "cells written, overwritten and appended in 8 rows"
rc=0
mv "$M/t/row1/doc/note" "$M/t/row1/doc/renamed" || rc=1
rm "$M/t/row2/doc/note" || rc=1
rm -r "$M/t/row3" || rc=1
ls -l "$M/t" "$M/t/row4/doc" >/dev/null || rc=1
ls "$M/t/.prefix/row" >/dev/null || rc=1
getfattr -n user.smolfs.type "$M/t/row4/meta/miles" >/dev/null 2>&1 || rc=1
cat "$M/.smolfs/stats" >/dev/null || rc=1
ls "$M/t/row4/doc" | grep -q '@' || rc=1   # older versions are listed
check $rc "renames, removals, listings, a prefix, an xattr, the stats file, versions"
fs_unmount "the daemon under valgrind unmounts and exits 0 (no memory error, no leak)"
vg_check 1 "first"

vg_mount 2
got=$(cat "$M/t/row4/meta/miles" "$M/t/row5/doc/note" "$M/t/row1/doc/renamed" 2>&1)
want=$(printf '4000\nsecond 5\nmore\nsecond 1\nmore')
[ "$got" = "$want" ]
check $? "after the remount the cells read back (got: $(echo "$got" | tr '\n' '|'))"
[ ! -e "$M/t/row3" ] && [ ! -e "$M/t/row2/doc/note" ]
check $? "and what was removed stays removed"
fs_unmount "the second daemon under valgrind unmounts and exits 0"
vg_check 2 "second"
done_testing
