#!/bin/sh
# fs_cache.sh -- what the kernel is allowed to cache never goes stale, and
# the answers that let tools stop asking: security labels and ACLs are
# ENOTSUP (ls -l asks once per filesystem, not once per file), other user.
# names ENODATA, and user.smolfs.type works as before.  Every read below
# follows a change made through the mount to a cell the kernel holds
# cached (read twice first, so its pages and attributes are warm).
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 26

fs_mount
cd "$MNT" || exit 1
sh_run 'mkdir t && mkdir t/.families/f && mkdir -p t/r/f && echo one > t/r/f/q'
succeeds "a table, a family and a cell"

op_is "getxattr ENOTSUP" "getxattr security.selinux: ENOTSUP (no labels here)" \
	getxattr t/r/f/q security.selinux
op_is "getxattr ENOTSUP" "getxattr system.posix_acl_access: ENOTSUP (no ACLs)" \
	getxattr t/r/f/q system.posix_acl_access
op_is "getxattr ENODATA" "getxattr of another user. name: ENODATA" \
	getxattr t/r/f/q user.other
op_is "string" "getxattr user.smolfs.type still answers" getxattr t/r/f/q user.smolfs.type

# warm: cat twice, stat, ls -l
warm() {
	cat "$1" >/dev/null && cat "$1" >/dev/null && stat "$1" >/dev/null &&
		ls -l "$(dirname "$1")" >/dev/null
}

warm t/r/f/q
echo longer-value > t/r/f/q
sh_run 'cat t/r/f/q; stat -c %s t/r/f/q; ls -l t/r/f | awk "\$NF == \"q\" { print \$5 }"'
out_is "a write over a warm cell: cat, stat and ls -l show the new value" <<'OUT'
longer-value
13
13
OUT

warm t/r/f/q
echo more >> t/r/f/q
file_is t/r/f/q "an append to a warm cell is read back" <<'OUT'
longer-value
more
OUT

warm t/r/f/q
truncate -s 3 t/r/f/q
sh_run 'cat t/r/f/q; stat -c %s t/r/f/q'
out_is "a truncate of a warm cell is read back (a string shows its newline)" <<'OUT'
lon
4
OUT

echo other > t/r/f/p
warm t/r/f/q
warm t/r/f/p
mv t/r/f/p t/r/f/q
file_is t/r/f/q "mv over a warm cell: the moved value is read" <<'OUT'
other
OUT

warm t/r/f/q
rm t/r/f/q && echo again > t/r/f/q
file_is t/r/f/q "rm then a new cell by the same name: the new value" <<'OUT'
again
OUT

echo 42 > t/r/f/n
warm t/r/f/n
setfattr -n user.smolfs.type -v i64 t/r/f/n
echo ' 7 ' > t/r/f/n
file_is t/r/f/n "a typed write to a warm cell shows the parsed value" <<'OUT'
7
OUT

warm t/r/f/n
"$FS_OP" pwrite t/r/f/n 0 9 >/dev/null
file_is t/r/f/n "a write at an offset through another open shows" <<'OUT'
9
OUT

# A reader holds the text it opened, and lseek(SEEK_END) gives that text's
# length (smolfs(1)), even after a commit by another descriptor and a stat by
# name, which gives the newest size: the stat must not leave that size in the
# kernel's inode for the reader's lseek to use without asking the daemon.
printf 'short\n' > t/r/f/s
exec 8<t/r/f/s
op_is 6 "a reader opened on a 6-byte value: lseek(SEEK_END) gives 6" seekend 8
op_is ok "another descriptor writes a 30-byte value and closes" \
	write t/r/f/s "a value of thirty bytes, long
"
run stat -c %s t/r/f/s
out_is "stat by name gives the new size" <<'OUT'
30
OUT
op_is 6 "the reader's lseek(SEEK_END) still gives its own text's length" seekend 8
run cat <&8
out_is "and it reads its own text" <<'OUT'
short
OUT
exec 8<&-
op_is 30 "a new reader's lseek(SEEK_END) gives the new length" seekend 0 <t/r/f/s

# Under -o ro a cat of an unchanged cell opens with keep_cache and the daemon
# reads nothing (smolfs(1)): its open looks up the version only, not the
# text.  A 1 MiB value of random bytes, compacted into an SSTable and read
# through a block cache smaller than it: each load of its text reads it from
# the SSTable again, which the engine counts (sst bytes read, in
# .smolfs/stats).
head -c 1048576 /dev/urandom >"$T/big"
sh_run "mkdir t/.families/b && echo bytes > t/.families/b/type && mkdir -p t/r/b &&
	cat '$T/big' > t/r/b/big"
succeeds "a 1 MiB bytes cell"
cd / || exit 1
fs_unmount
run "$SMOLCTL" -d "$DATADIR" compact
succeeds "smolctl compact puts it in an SSTable"
fs_mount -o ro,cache_size=64K
cd "$MNT" || exit 1
sst_read() {
	awk '$1 == "sst" && $2 == "bytes" && $3 == "read" { print $4 }' .smolfs/stats
}
# read_under LIMIT NAME: ok if the SSTable bytes read since $before are
# fewer than LIMIT
read_under() {
	after=$(sst_read)
	if [ -n "$before" ] && [ -n "$after" ] && [ $((after - before)) -lt "$1" ]; then
		ok "$2"
	else
		not_ok "$2"
		echo "# sst bytes read: before '$before', after '$after'"
	fi
}
# An open that reads nothing loads nothing: no page cache is involved.
before=$(sst_read)
for i in 1 2 3 4 5; do
	: <t/r/b/big
done
read_under 1048576 "-o ro: five opens of the cell read less than its size from SSTables"
# A cat that finds its pages kept reads nothing.  The kernel may drop clean
# pages at any time (memory pressure does; CI saw one reload in five cats,
# and so does echo 1 >/proc/sys/vm/drop_caches here), and a page missing
# from a read loads the whole text again.  Without keep_cache every open
# drops them and each of the five cats loads the text: five times its size.
# The daemon's side is exact: each of the five opens keeps the pages
# (counted in .smolfs/stats as page cache opens).
cat t/r/b/big >/dev/null && cat t/r/b/big >/dev/null
before=$(sst_read)
B=$(req_base)
s1=$(req_snap)
for i in 1 2 3 4 5; do
	cat t/r/b/big >/dev/null
done
s2=$(req_snap)
d=$(req_delta "$s1" "$s2" "$B")
echo "$d" | awk '{ exit !($3 == 5 && $5 == 5) }'
check $? "-o ro: five warm cats open with keep_cache (lookup getattr open read paged: $d)"
read_under 5242880 "-o ro: five more cats of the warm cell read less than five times its size"
run cmp t/r/b/big "$T/big"
succeeds "and it reads whole"

cd / || exit 1
fs_unmount
done_testing
