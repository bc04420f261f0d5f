#!/bin/sh
# fs_fsx.sh -- tests/fs_fsx (random reads, writes, appends, truncates and
# reopens of bytes cells against an in-memory model) on a fresh mount, then
# the cells compared with the model after a remount.  20,000 operations, times
# SMOLFS_TEST_SCALE; SMOLFS_TEST_SEED repeats a run (the seed is printed).
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 8

nops=$((20000 * ${SMOLFS_TEST_SCALE:-1}))
fs_mount
sh_run "mkdir '$MNT/fsx' && mkdir '$MNT/fsx/.families/data' &&
	echo bytes > '$MNT/fsx/.families/data/type' &&
	echo 1 > '$MNT/fsx/.families/data/max_versions' && mkdir -p '$MNT/fsx/r/data'"
succeeds "a table with a bytes family keeping one version"
mkdir "$T/model"
"$FS_OP_DIR/fs_fsx" "$MNT/fsx/r/data" "$nops" "$T/model" >"$T/fsx.out" 2>&1
st=$?
cat "$T/fsx.out" | sed 's/^\([^#]\)/# \1/'
if [ "$st" -eq 0 ]; then
	ok "fs_fsx: $nops random operations on three bytes cells, no mismatch"
else
	not_ok "fs_fsx: $nops random operations on three bytes cells, no mismatch (exit $st)"
fi
fs_unmount
fs_mount
for i in 0 1 2; do
	same_files "$T/model/fsx$i" "$MNT/fsx/r/data/fsx$i" "after a remount fsx$i holds what the model holds"
done
run ls "$MNT/fsx/r/data"
out_is "the family holds the three cells, one version each" <<'LIST'
fsx0
fsx1
fsx2
LIST
fs_unmount
done_testing
