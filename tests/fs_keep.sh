#!/bin/sh
# fs_keep.sh -- nothing is lost: a write refused for its size (EFBIG) through
# an O_TRUNC open leaves the old value, and re-stamping a cell with touch -d
# (utimensat, as cp -a and rsync -a do) keeps its value even when older,
# hidden versions lie between the old and the new timestamp.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 10

fs_mount
cd "$MNT" || exit 1
sh_run 'mkdir t && mkdir t/.families/f t/.families/b && echo bytes > t/.families/b/type &&
	echo 1 > t/.families/f/max_versions && echo 1 > t/.families/b/max_versions &&
	mkdir -p t/r/f t/r/b'
succeeds "a table with a string and a bytes family, one version each"
sh_run 'head -c 10485760 /dev/zero > t/r/b/big'
succeeds "a 10 MiB bytes cell (the default limit) is written"
sh_run 'head -c 10485761 /dev/zero > t/r/b/big'
if [ "$status" -ne 0 ] && grep 'File too large' "$T/err" >/dev/null; then
	ok "one byte more, through an O_TRUNC open, fails with EFBIG"
else
	not_ok "one byte more, through an O_TRUNC open, fails with EFBIG"
	_show_run
fi
run stat -c %s t/r/b/big
out_is "the 10 MiB value stays" <<'EOF'
10485760
EOF
run cmp -n 10485760 t/r/b/big /dev/zero
succeeds "and reads back whole"
sh_run 'echo one > t/r/f/s && echo two > t/r/f/s && echo three > t/r/f/s'
succeeds "three writes of a cell of a one-version family"
run touch -m -d @1650000000 t/r/f/s
succeeds "touch -d of the cell (utimensat) to a time before all three"
run stat -c %Y t/r/f/s
out_is "re-stamps the newest version: mtime 1650000000" <<'EOF'
1650000000
EOF
file_is t/r/f/s "and keeps its value (no older version comes back)" <<'EOF'
three
EOF
cd / || exit 1
fs_unmount
done_testing
