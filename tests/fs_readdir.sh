#!/bin/sh
# fs_readdir.sh -- listings resumed while entries come and go, on a real
# mount: tests/fs_readdir lists a family of a row and a table with small
# getdents64 buffers, telldir/seekdir back to the middle and to an early
# offset, and rewinddir, while another process creates and removes entries
# between the stable ones: no stable entry is skipped or repeated, no name
# is listed twice.  The size scales with SMOLFS_TEST_SCALE.  POSIX sh, TAP.

. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 3

FS_READDIR=$FS_OP_DIR/fs_readdir
n=$((300 * ${SMOLFS_TEST_SCALE:-1}))

fs_mount
mkdir "$MNT/t" "$MNT/t/.families/f" "$MNT/u" "$MNT/u/.families/f" && mkdir -p "$MNT/t/row/f"
run "$FS_READDIR" family "$MNT/t/row/f" "$n"
diag_file "$T/err"
out_is "a family of $n cells listed and resumed while other cells come and go" <<'EOF'
ok
EOF
run "$FS_READDIR" table "$MNT/u" "$n"
diag_file "$T/err"
out_is "a table of $n rows listed and resumed while other rows come and go" <<'EOF'
ok
EOF
fs_unmount
done_testing
