#!/bin/sh
# fs_versions.sh -- versions by name (q@ts) in renames and type changes:
# mv q@ts p, mv q p@ts, RENAME_NOREPLACE onto a version, setfattr of the
# type on a version, each one table-layer call under the row lock
# (tbl_rename_version, tbl_convert_version), and what they leave in ls, cat
# and stat.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 17

fs_mount
cd "$MNT" || exit 1
sh_run 'mkdir t && mkdir t/.families/f && mkdir -p t/r/f &&
	echo a > t/r/f/q@1000000 && echo b > t/r/f/q@2000000 && echo c > t/r/f/q'
succeeds "a cell q with versions at 1 s and 2 s and a newest one"
run ls t/r/f
out_is "ls shows q and its two older versions" <<'OUT'
q
q@1000000
q@2000000
OUT

run mv t/r/f/q@1000000 t/r/f/p
succeeds "mv q@1000000 p"
file_is t/r/f/p "p is that version's value" <<'OUT'
a
OUT
run stat -c %Y t/r/f/p
out_is "with that version's time" <<'OUT'
1
OUT
run ls t/r/f
out_is "q lost that version only" <<'OUT'
p
q
q@2000000
OUT

op_is "rename EEXIST" "rename q@2000000 onto the cell p with RENAME_NOREPLACE: EEXIST" \
	rename t/r/f/q@2000000 t/r/f/p noreplace
op_is "rename EEXIST" "rename q onto an existing version p@1000000 with RENAME_NOREPLACE: EEXIST" \
	rename t/r/f/q t/r/f/p@1000000 noreplace
op_is "rename EINVAL" "RENAME_EXCHANGE with a version name: EINVAL" \
	rename t/r/f/q@2000000 t/r/f/p exchange

run mv t/r/f/q t/r/f/p@3000000
succeeds "mv q p@3000000: the cell q becomes version 3 s of p"
run ls t/r/f
out_is "q is gone with all its versions; p keeps its version at 1 s" <<'OUT'
p
p@1000000
OUT
file_is t/r/f/p "p's newest is q's value" <<'OUT'
c
OUT

sh_run 'echo 7 > t/r/f/p@1000000'
succeeds "echo 7 > p@1000000 rewrites that version"
op_is ok "setfattr user.smolfs.type i64 on p@1000000" \
	setxattr t/r/f/p@1000000 user.smolfs.type i64
run sh -c "'$FS_OP' getxattr t/r/f/p@1000000 user.smolfs.type; '$FS_OP' getxattr t/r/f/p user.smolfs.type"
out_is "that version is i64, the newest is still a string" <<'OUT'
i64
string
OUT
op_is "setxattr EINVAL" "converting the newest (c) to i64: EINVAL" \
	setxattr t/r/f/p user.smolfs.type i64

cd / || exit 1
fs_unmount
done_testing
