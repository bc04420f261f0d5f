#!/bin/sh
# fs_requests.sh -- what the daemon is asked for the commonest writes
# (smolfs(1), CACHING and SECURITY): without allow_other the mount has no
# default_permissions, so creating cells costs the kernel no GETATTR, of
# the directory it changed or of the new cell; access(2) still answers from
# the modes the tree shows.  The counts come from .smolfs/stats.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 7

fs_mount
cd "$MNT" || exit 1
sh_run 'mkdir t && mkdir t/.families/f && mkdir -p t/r/f'
succeeds "a table, a family and a row"

# Ten new cells, each open(O_CREAT), write, close: a lookup each (the name
# is new), and no getattr (default_permissions asked for the directory's
# mode after each create, and for the new cell's at its open).
B=$(req_base)
s1=$(req_snap)
for i in 0 1 2 3 4 5 6 7 8 9; do
	"$FS_OP" write "t/r/f/c$i" "value $i" >/dev/null || echo "write c$i failed"
done >"$T/out" 2>&1
s2=$(req_snap)
d=$(req_delta "$s1" "$s2" "$B")
[ "$d" = "10 0 0 0 0" ] && [ ! -s "$T/out" ]
check $? "ten new cells: ten lookups and no getattr (lookup getattr open read paged: $d)"
file_is t/r/f/c7 "and each reads back" <<'OUT'
value 7
OUT

# access(2) answers as the kernel would from the modes: cells 0644,
# directories 0755, .smolfs/stats 0444 (the script runs as root, who may
# read and write anything and execute what has an execute bit)
sh_run '[ -r t/r/f/c1 ] && [ -w t/r/f/c1 ] && [ -x t/r/f ] && [ -w .smolfs/stats ] &&
	cd t/r && echo yes'
out_is "access: a cell is readable and writable, a directory searchable" <<'OUT'
yes
OUT
sh_run '[ -x t/r/f/c1 ] || [ -x .smolfs/stats ] || echo no'
out_is "access: no cell is executable" <<'OUT'
no
OUT
sh_run '[ -e t/r/f/nothing ] || echo absent'
out_is "access: a missing cell is absent" <<'OUT'
absent
OUT
cd /
fs_unmount
done_testing
