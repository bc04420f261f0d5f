#!/bin/sh
# fs_cells.sh -- cells as files, with the tools people use on files: echo,
# >>, cat, stat, getfattr/setfattr, sed -i, vim, mv, rm, find, grep -r, du,
# ls -l; versions by name (q@ts); and every errno smolfs(1) promises for what
# the tree cannot hold, checked by name with tests/fs_op.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 120

fs_mount
cd "$MNT" || exit 1

# ---------------------------------------------------------------- schema
sh_run 'mkdir t && mkdir t/.families/f t/.families/n t/.families/b t/.families/v &&
	echo i64 > t/.families/n/type && echo bytes > t/.families/b/type &&
	for f in f n b; do echo 1 > t/.families/$f/max_versions || exit 1; done'
succeeds "mkdir of table t with families f (string), n (i64), b (bytes) of one version, and v (string, every version)"
run cat t/.families/f/type t/.families/n/type t/.families/b/type t/.families/v/type \
	t/.families/f/max_versions t/.families/v/max_versions
out_is "the families' types and max_versions read back" <<'EOF'
string
i64
bytes
string
1
0
EOF
op_errno EINVAL "echo abc > .families/n/max_versions: EINVAL" \
	write t/.families/n/max_versions abc
op_errno EINVAL "echo int128 > .families/n/type: EINVAL" \
	write t/.families/n/type int128
run cat t/.families/n/max_versions t/.families/n/type
out_is "the refused schema writes changed nothing" <<'EOF'
1
i64
EOF

# ---------------------------------------------------------------- writing and reading
run mkdir -p t/r/f t/r/n t/r/b t/r/v
succeeds "mkdir -p t/r/f t/r/n t/r/b t/r/v (a row and its families, no cell yet)"
run ls t/r
out_is "the empty row lists its empty families" <<'EOF'
b
f
n
v
EOF
sh_run 'echo 51000000 > t/r/n/miles'
succeeds "echo 51000000 > an i64 cell"
file_is t/r/n/miles "cat prints it" <<'EOF'
51000000
EOF
sh_run 'echo 5 > t/r/n/miles'
succeeds "echo 5 > over the longer value"
file_is t/r/n/miles "cat prints 5, nothing left of the longer value" <<'EOF'
5
EOF
run stat -c %s t/r/n/miles
out_is "st_size is 2, what cat prints" <<'EOF'
2
EOF
sh_run 'echo abc > t/r/n/miles'
fails "echo abc > the i64 cell fails"
op_is "write EINVAL" "abc can never be an i64: EINVAL at write()" write t/r/n/miles abc
op_is "close EINVAL" "a lone '-' might have become a number: EINVAL at close()" \
	write t/r/n/miles -
file_is t/r/n/miles "after the refused writes the cell still holds 5" <<'EOF'
5
EOF
op_is "ok" "' 42 ' with surrounding spaces is a valid i64" write t/r/n/miles ' 42 '
file_is t/r/n/miles "and reads 42" <<'EOF'
42
EOF

sh_run 'echo hello > t/r/f/s && echo world >> t/r/f/s'
succeeds "echo hello > s, echo world >> s"
file_is t/r/f/s "the string cell holds both lines" <<'EOF'
hello
world
EOF
run stat -c %s t/r/f/s
out_is "st_size is 12, what cat prints" <<'EOF'
12
EOF
op_is "write EINVAL" "a byte that is never UTF-8 (0xff) in a string cell: EINVAL at write()" \
	write t/r/f/s "$(printf 'ok\377')"
op_is "close EINVAL" "a cut UTF-8 sequence (0xc3) in a string cell: EINVAL at close()" \
	write t/r/f/s "$(printf 'ok\303')"
file_is t/r/f/s "the string cell keeps its old value" <<'EOF'
hello
world
EOF
op_is "ok" "pwrite of 'EL' at offset 1" pwrite t/r/f/s 1 EL
file_is t/r/f/s "a write at an offset acts on the newest value" <<'EOF'
hELlo
world
EOF
sh_run 'echo a > t/r/f/c && cat t/r/f/c >/dev/null && echo bbb > t/r/f/c'
succeeds "echo a > c, cat c, echo bbb > c"
file_is t/r/f/c "no stale read: cat shows the second value" <<'EOF'
bbb
EOF
run touch t/r/f/empty
succeeds "touch creates a string cell"
file_is t/r/f/empty "the empty string reads as one newline" <<'EOF'

EOF

printf 'a\000b\n' >t/r/b/x 2>"$T/err"
run od -An -c t/r/b/x
out_is "a bytes cell reads its bytes exactly, NUL and newline included" <<'EOF'
   a  \0   b  \n
EOF
run stat -c %s t/r/b/x
out_is "its st_size is 4" <<'EOF'
4
EOF
run truncate -s 2 t/r/b/x
succeeds "truncate -s 2 of the bytes cell"
run od -An -c t/r/b/x
out_is "it holds the first two bytes" <<'EOF'
   a  \0
EOF
sh_run 'head -c 10485760 /dev/zero > t/r/b/big'
succeeds "a 10 MiB bytes cell (the default limit) is written"
run stat -c %s t/r/b/big
out_is "its st_size is 10485760" <<'EOF'
10485760
EOF
sh_run 'head -c 10485761 /dev/zero > t/r/b/big'
if [ "$status" -ne 0 ] && grep 'File too large' "$T/err" >/dev/null; then
	ok "one byte more fails with EFBIG"
else
	not_ok "one byte more fails with EFBIG"
	_show_run
fi
op_is "ok" "fsync of a cell succeeds" fsync t/r/f/synced "kept"
file_is t/r/f/synced "the fsynced value reads back" <<'EOF'
kept
EOF

# ---------------------------------------------------------------- versions
sh_run 'echo old > t/r/v/q@1600000000000000'
succeeds "echo old > q@1600000000000000 writes a version by name"
sh_run 'echo new > t/r/v/q'
succeeds "echo new > q"
run ls t/r/v
out_is "ls of the family: each qualifier's newest as q, the older version as q@ts" <<'EOF'
q
q@1600000000000000
EOF
file_is t/r/v/q@1600000000000000 "cat q@ts reads that version" <<'EOF'
old
EOF
run stat -c %Y t/r/v/q@1600000000000000
out_is "its mtime is its timestamp" <<'EOF'
1600000000
EOF
sh_run 'echo older > t/r/v/q@1600000000000000'
succeeds "echo over q@ts rewrites that version"
file_is t/r/v/q@1600000000000000 "and it reads the new text" <<'EOF'
older
EOF
file_is t/r/v/q "the newest version is untouched" <<'EOF'
new
EOF
sh_run 'echo second > t/r/v/q'
succeeds "a second write of q"
v=$(ls t/r/v | grep '^q@' | grep -v '^q@1600000000000000$')
if [ "$(printf '%s\n' "$v" | grep -c '^q@[0-9][0-9]*$')" -eq 1 ]; then
	ok "the write turned the previous newest into a listed q@ts ($v)"
else
	not_ok "the write turned the previous newest into a listed q@ts"
	ls t/r/v 2>&1 | sed 's/^/#   /'
fi
file_is "t/r/v/$v" "that version reads the previous value" <<'EOF'
new
EOF
run rm t/r/v/q@1600000000000000
succeeds "rm q@ts"
run ls t/r/v/q@1600000000000000
fails "the removed version is gone"
file_is "t/r/v/$v" "the other versions stay" <<'EOF'
new
EOF
run rm t/r/v/q
succeeds "rm q"
sh_run 'ls t/r/v | grep -c "^q" || true'
out_is "rm q deletes every version of q" <<'EOF'
0
EOF

# ---------------------------------------------------------------- the type attribute
type_is t/r/f/s "getfattr user.smolfs.type of a string cell" <<'EOF'
string
EOF
sh_run 'echo 77 > t/r/f/num'
op_is "ok" "setfattr user.smolfs.type i64 on the string 77" setxattr t/r/f/num user.smolfs.type i64
type_is t/r/f/num "the cell is now i64" <<'EOF'
i64
EOF
op_is "write EINVAL" "and refuses abc at write()" write t/r/f/num abc
op_is "setxattr EINVAL" "setfattr i64 on the string hELlo... fails with EINVAL" \
	setxattr t/r/f/s user.smolfs.type i64
type_is t/r/f/s "and the cell stays a string" <<'EOF'
string
EOF
op_is "setxattr EINVAL" "setfattr of an unknown type name fails with EINVAL" \
	setxattr t/r/f/s user.smolfs.type text
op_is "setxattr ENOTSUP" "setfattr of another attribute name: ENOTSUP" \
	setxattr t/r/f/s user.comment hi

# ---------------------------------------------------------------- editors and mv
sh_run 'printf "alpha\nbeta\n" > t/r/f/ed'
succeeds "a two-line cell for the editors"
run sed -i 's/alpha/ALPHA/' t/r/f/ed
succeeds "sed -i on a cell"
file_is t/r/f/ed "sed -i's edit is in the cell" <<'EOF'
ALPHA
beta
EOF
if command -v vim >/dev/null 2>&1; then
	run vim -u NONE -es -c '%s/beta/BETA/' -c 'wq' t/r/f/ed
	succeeds "vim -u NONE -es edits a cell"
	file_is t/r/f/ed "vim's edit is in the cell" <<'EOF'
ALPHA
BETA
EOF
else
	skip "vim is not installed" "vim -u NONE -es edits a cell"
	skip "vim is not installed" "vim's edit is in the cell"
fi
run ls t/r/f
out_is "the editors left no temporary file behind" <<'EOF'
c
ed
empty
num
s
synced
EOF
sh_run 'echo replacement > t/r/f/tmp && mv t/r/f/tmp t/r/f/s'
succeeds "mv of a cell over another cell of the family"
file_is t/r/f/s "the target holds the moved value" <<'EOF'
replacement
EOF
run ls t/r/f/tmp
fails "the source name is gone"
sh_run 'echo 1 > t/r/n/one && echo 2 > t/r/n/two'
op_is "rename EEXIST" "rename with RENAME_NOREPLACE over a cell: EEXIST" \
	rename t/r/n/one t/r/n/two noreplace
op_is "ok" "rename with RENAME_EXCHANGE" rename t/r/n/one t/r/n/two exchange
run cat t/r/n/one t/r/n/two
out_is "the two cells swapped their values" <<'EOF'
2
1
EOF
op_is "ok" "rename of a cell across families of the row" rename t/r/f/c t/r/b/c
run cat t/r/b/c
out_is "the cell arrived in the other family" <<'EOF'
bbb
EOF
sh_run 'mkdir -p t/r2/f && echo moved > t/r/f/away'
op_is "rename EXDEV" "rename of a cell into another row: EXDEV" rename t/r/f/away t/r2/f/away
run mv t/r/f/away t/r2/f/away
succeeds "mv across rows still works (copy and delete)"
file_is t/r2/f/away "the moved cell is in the other row" <<'EOF'
moved
EOF
op_is "rename EXDEV" "rename of a row: EXDEV" rename t/r2 t/r3
run mkdir u
succeeds "mkdir of a second table u"
op_is "rename EXDEV" "rename of a table: EXDEV" rename u u2

# ---------------------------------------------------------------- metadata
run ls -l t/r/f/s
out_has "-rw-r--r--" "ls -l shows a cell as -rw-r--r--"
run stat -c '%F %a %U %G' t/r/f/s
out_is "stat: a regular file, 0644, owned by the daemon's user" <<EOF
regular file 644 $(id -un) $(id -gn)
EOF
run stat -c '%F %a' t t/r t/r/f t/.families t/.families/f
out_is "stat: tables, rows, families and the schema are directories 0755" <<'EOF'
directory 755
directory 755
directory 755
directory 755
directory 755
EOF
op_is "ok" "chmod of a cell succeeds" chmod t/r/f/s 600
run stat -c %a t/r/f/s
out_is "and changes nothing" <<'EOF'
644
EOF
op_is "ok" "chown of a cell to its owner succeeds" chown t/r/f/s
run touch -m -d @1650000000 t/r/f/synced
succeeds "touch -d of a cell (utimensat)"
run stat -c %Y t/r/f/synced
out_is "re-stamps the version: mtime 1650000000" <<'EOF'
1650000000
EOF
file_is t/r/f/synced "and keeps the value" <<'EOF'
kept
EOF
bad=
for f in t/r/f/* t/r/n/* t/r/b/*; do
	[ "$(stat -c %s "$f")" -eq "$(cat "$f" | wc -c)" ] || bad="$bad $f"
done
if [ -z "$bad" ]; then
	ok "st_size equals the length cat prints, for every cell"
else
	not_ok "st_size equals the length cat prints, for every cell"
	diag "differs for:$bad"
fi
ino=$("$FS_OP" ino t/r/f/s)
dino=$("$FS_OP" dirino t/r/f s)
if [ -n "$ino" ] && [ "$ino" = "$dino" ] && [ "$ino" = "$("$FS_OP" ino t/r/f/s)" ]; then
	ok "st_ino is stable and readdir's d_ino equals it"
else
	not_ok "st_ino is stable and readdir's d_ino equals it"
	diag "stat $ino, readdir $dino"
fi

run stat -f -c %l .
out_is "statfs: names up to 255 bytes" <<'EOF'
255
EOF

# ---------------------------------------------------------------- the tree's refusals
op_is "open EPERM" "a regular file at the table level: EPERM" write t/file x
op_is "open EPERM" "a regular file directly in a row: EPERM" write t/r/file x
op_is "open EPERM" "a regular file in the mount root: EPERM" write file x
op_is "mkdir EPERM" "mkdir of an undeclared family in a row: EPERM" mkdir t/r/nofam
op_is "symlink EPERM" "a symlink in a family: EPERM" symlink s t/r/f/link
op_is "link EPERM" "a hard link in a family: EPERM" link t/r/f/s t/r/f/hard
op_is "mknod EPERM" "a device node in a family: EPERM" mknod t/r/f/dev
op_is "mkfifo EPERM" "a fifo in a family: EPERM" mkfifo t/r/f/fifo
sh_run 'ls t/r | grep -c nofam || true'
out_is "the refused mkdir created no family" <<'EOF'
0
EOF
run ls t/r/f
out_is "the refused files created nothing in the family" <<'EOF'
ed
empty
num
s
synced
EOF

# ---------------------------------------------------------------- walking the tree
run find t -type f
sort "$T/out" >"$T/sorted" && mv "$T/sorted" "$T/out"
out_is "find t -type f: the schema files and every cell, nothing twice" <<'EOF'
t/.families/b/compression
t/.families/b/locality_group
t/.families/b/max_versions
t/.families/b/ttl
t/.families/b/type
t/.families/f/compression
t/.families/f/locality_group
t/.families/f/max_versions
t/.families/f/ttl
t/.families/f/type
t/.families/n/compression
t/.families/n/locality_group
t/.families/n/max_versions
t/.families/n/ttl
t/.families/n/type
t/.families/v/compression
t/.families/v/locality_group
t/.families/v/max_versions
t/.families/v/ttl
t/.families/v/type
t/r/b/big
t/r/b/c
t/r/b/x
t/r/f/ed
t/r/f/empty
t/r/f/num
t/r/f/s
t/r/f/synced
t/r/n/miles
t/r/n/one
t/r/n/two
t/r2/f/away
EOF
run grep -r -l ALPHA t
out_is "grep -r finds the cell that holds ALPHA" <<'EOF'
t/r/f/ed
EOF
run du -s -k --apparent-size t
if [ "$status" -eq 0 ] && [ ! -s "$T/err" ] &&
   [ "$(awk '{print $1}' "$T/out")" -ge \
     "$(find t -type f -exec stat -c %s {} + | awk '{ s += $1 } END { print int(s / 1024) }')" ]; then
	ok "du -s --apparent-size t succeeds and counts every cell's size"
else
	not_ok "du -s --apparent-size t succeeds and counts every cell's size"
	_show_run
fi

# ---------------------------------------------------------------- removing
op_is "rmdir ENOTEMPTY" "rmdir of a table with rows: ENOTEMPTY" rmdir t
op_is "rmdir ENOTEMPTY" "rmdir of a row with cells: ENOTEMPTY" rmdir t/r
run rm t/r/b/big
succeeds "rm of a cell"
run rm -r t/r
succeeds "rm -r of a row"
run ls t
out_is "the row is gone from the table" <<'EOF'
r2
EOF
run cat t/r/f/s
fails "its cells cannot be read"
sh_run 'mkdir -p t/r4/f t/r4/n && echo x > t/r4/f/x'
run rmdir t/r4/n
succeeds "rmdir of an empty family in a row"
run ls t/r4
out_is "the row keeps its other family" <<'EOF'
f
EOF
sh_run 'mkdir -p t/empty/f'
run rmdir t/empty/f t/empty
succeeds "rmdir of an empty family and then of its empty row"
run rmdir u
succeeds "rmdir of an empty table drops it"
run ls
out_is "the mount root lists the tables left" <<'EOF'
t
EOF

cd / || exit 1
fs_unmount
done_testing
