#!/bin/sh
# fs_pagecache.sh -- readers through the kernel's page cache (smolfs(1),
# CACHING): a warm cat of an unchanged cell is one request to the daemon
# (its open) and no read; a write through the mount is read back at once
# and keeps the cell's inode number; a reader that holds a cell open across
# a rewrite reads the text it opened, whole, and its seek to the end agrees
# with it, while new readers read the new text; -s keeps every read direct.
# The daemon's request counts come from .smolfs/stats.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 21

fs_mount
cd "$MNT" || exit 1
sh_run 'mkdir t && mkdir t/.families/f && mkdir -p t/r/f && echo one > t/r/f/q &&
	cat t/r/f/q && cat t/r/f/q'
out_is "a cell written and read twice" <<'OUT'
one
one
OUT

B=$(req_base)
s1=$(req_snap)
for i in 1 2 3 4 5; do cat t/r/f/q >/dev/null; done
s2=$(req_snap)
d=$(req_delta "$s1" "$s2" "$B")
[ "$d" = "0 0 5 0 5" ]
check $? "five warm cats: five opens, no read, each from the page cache (lookup getattr open read paged: $d)"

ino1=$("$FS_OP" ino t/r/f/q)
echo two-longer > t/r/f/q
sh_run 'cat t/r/f/q; stat -c %s t/r/f/q'
out_is "a write over a cell in the page cache is read back at once, with its size" <<'OUT'
two-longer
11
OUT
ino2=$("$FS_OP" ino t/r/f/q)
[ -n "$ino1" ] && [ "$ino1" = "$ino2" ]
check $? "and the cell keeps its inode number ($ino1, $ino2)"
echo more >> t/r/f/q
file_is t/r/f/q "an append to it too" <<'OUT'
two-longer
more
OUT
cat t/r/f/q >/dev/null
truncate -s 3 t/r/f/q
sh_run 'cat t/r/f/q; stat -c %s t/r/f/q'
out_is "a truncate to it too (a string shows its newline)" <<'OUT'
two
4
OUT

# A reader holding the cell open (its pages) across a rewrite: the text it
# opened, whole; its lseek(SEEK_END) gives that text's length.
printf 'held-value\n' > t/r/f/h
cat t/r/f/h >/dev/null
exec 3<t/r/f/h
printf 'rewritten-while-held, longer\n' > t/r/f/h
sh_run 'cat t/r/f/h'
out_is "a rewrite while a reader holds the cell: new readers read the new text" <<'OUT'
rewritten-while-held, longer
OUT
op_is 11 "the holder's seek to the end gives the length of the text it opened" seekend 3
sh_run 'cat <&3'
out_is "and it reads that text, whole" <<'OUT'
held-value
OUT
exec 3<&-
sh_run 'stat -c %s t/r/f/h; cat t/r/f/h; cat t/r/f/h'
out_is "once it is closed, stat and cat show the new text" <<'OUT'
29
rewritten-while-held, longer
rewritten-while-held, longer
OUT
printf 'third\n' > t/r/f/h
file_is t/r/f/h "and a third write is read back" <<'OUT'
third
OUT

# A holder's pages are never filled with another text: a reader that opens
# the held inode again (through /proc, where no name is looked up again)
# after a rewrite and maps it privately would read them in.
op_is whole "a reader holding a cell across a rewrite, and a private mapping of the held inode opened again: the holder reads its text" \
	mapmix t/r/f/m

# A version name reads through the page cache too, and stays its version.
sh_run 'mkdir t/.families/v && echo 3 > t/.families/v/max_versions && mkdir -p t/r/v &&
	echo old > t/r/v/q && echo mid > t/r/v/q && ls t/r/v | grep -c @'
out_is "a family keeping three versions, two of them written" <<'OUT'
1
OUT
old=$(ls t/r/v | grep @)
cat "t/r/v/$old" >/dev/null
echo new > t/r/v/q
sh_run "cat t/r/v/$old t/r/v/$old t/r/v/q"
out_is "a version read warm keeps its text after a new version" <<'OUT'
old
old
new
OUT

cd / || exit 1
fs_unmount

# A cold read: the first open of an inode whose lookup gave it the text's
# attributes needs no invalidation, so its read asks for no size: a lookup
# per name on the path, the open and one read.
fs_mount
cd "$MNT" || exit 1
B=$(req_base)
s1=$(req_snap)
od -c t/r/f/q >/dev/null
s2=$(req_snap)
d=$(req_delta "$s1" "$s2" "$B")
[ "$d" = "4 0 1 1 0" ]
check $? "a cold read after a remount: four lookups, the open, one read, no getattr (lookup getattr open read paged: $d)"
file_is t/r/f/q "and it reads the cell" <<'OUT'
two
OUT
cd / || exit 1
fs_unmount

# -s: one thread serves every request, and no cell is read through the page cache.
fs_mount -s
cd "$MNT" || exit 1
sh_run 'cat t/r/f/q; cat t/r/f/q'
out_is "-s: the cell reads back" <<'OUT'
two
two
OUT
B=$(req_base)
s1=$(req_snap)
cat t/r/f/q >/dev/null
s2=$(req_snap)
d=$(req_delta "$s1" "$s2" "$B")
[ "${d##* }" = 0 ] && [ "$(echo "$d" | cut -d' ' -f4)" -ge 1 ]
check $? "-s: a cat reads from the daemon (lookup getattr open read paged: $d)"
cd / || exit 1
fs_unmount

done_testing
