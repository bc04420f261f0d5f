#!/bin/sh
# fs_statfs.sh -- statfs of a mount (stat -f, df): block size, total blocks
# and file counts of the filesystem holding DATADIR, names up to 255 bytes;
# and MOUNT/.smolfs/stats, the engine's statistics as text, read-only, found
# by name and not listed, so find, rsync and cp -a of the mount never meet it.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 14

fs_mount
run stat -f -c %l "$MNT"
out_is "stat -f: names up to 255 bytes" <<'OUT'
255
OUT
run stat -f -c '%S %b %c' "$MNT"
stat -f -c '%S %b %c' "$DATADIR" >"$T/host" 2>&1
if [ "$status" -eq 0 ] && cmp -s "$T/out" "$T/host"; then
	ok "block size, total blocks and total files are DATADIR's filesystem's ($(cat "$T/out"))"
else
	not_ok "block size, total blocks and total files are DATADIR's filesystem's"
	diag "mount: $(cat "$T/out" "$T/err")"
	diag "DATADIR: $(cat "$T/host")"
fi
run stat -f -c %a "$MNT"
if [ "$status" -eq 0 ] && [ "$(cat "$T/out")" -gt 0 ]; then
	ok "free blocks available to a user: $(cat "$T/out")"
else
	not_ok "free blocks available to a user"
	_show_run
fi
run df -P "$MNT"
out_has " $MNT" "df of the mount answers, on its mount point"
run df -i "$MNT"
succeeds "df -i of the mount answers"

sh_run "mkdir '$MNT/t' '$MNT/t/.families/f' && mkdir -p '$MNT/t/r/f' && echo v > '$MNT/t/r/f/q'"
succeeds "a table with a cell"
run cat "$MNT/.smolfs/stats"
if [ "$status" -eq 0 ] && grep -q '^level  files      bytes$' "$T/out" &&
   grep -q '^wal bytes [1-9]' "$T/out" && grep -q '^disk bytes [0-9]' "$T/out" &&
   grep -q '^block cache hits [0-9]' "$T/out"; then
	ok "cat .smolfs/stats: files and bytes per level, log bytes, disk bytes, cache hits"
else
	not_ok "cat .smolfs/stats: files and bytes per level, log bytes, disk bytes, cache hits"
	_show_run
fi
# the cell written is in a memtable still: one entry at least, some bytes
if awk '$1 == "memtables" && $2 > 0 && $3 == "bytes" && $4 == "active," &&
	$11 ~ /^\([1-9]/ && $12 == "entries," { found = 1 } END { exit !found }' "$T/out"; then
	ok "stats has a memtables line: the active memtables' bytes and their entries ($(grep '^memtables' "$T/out"))"
else
	not_ok "stats has a memtables line: the active memtables' bytes and their entries"
	_show_run
fi
run ls -A "$MNT"
out_is "ls -A of the mount lists the tables only, not .smolfs" <<'OUT'
t
OUT
run ls "$MNT/.smolfs"
out_is "ls .smolfs lists stats" <<'OUT'
stats
OUT
run stat -c %a "$MNT/.smolfs/stats"
out_is "stats is read-only (0444)" <<'OUT'
444
OUT
op_errno EACCES "opening stats for writing: EACCES" write "$MNT/.smolfs/stats" x
run find "$MNT" -name stats
out_is "find of the mount never meets it" <<'OUT'
OUT
fs_unmount
done_testing
