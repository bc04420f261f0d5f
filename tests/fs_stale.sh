#!/bin/sh
# fs_stale.sh -- versions that max_versions hides after a write, or after a
# change of max_versions, leave no stale name behind: ls lists exactly the
# visible versions, a q@ts name the kernel held (ls -l, cat) answers ENOENT
# to stat and can be written again by name, and no read after a write
# through the mount is stale, under every name of the cell.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 17

fs_mount
cd "$MNT" || exit 1
sh_run 'mkdir t t/.families/one t/.families/two &&
	echo 1 > t/.families/one/max_versions && echo 2 > t/.families/two/max_versions &&
	mkdir -p t/r/one t/r/two'
succeeds "a table with families one (max_versions 1) and two (max_versions 2)"

# max_versions 1
sh_run 'echo v1 > t/r/one/q && echo v2 > t/r/one/q &&
	echo a > t/r/one/p@1000000 && ls -l t/r/one >/dev/null && echo b > t/r/one/p@2000000'
succeeds "two writes of q, and p@1 s then p@2 s, with ls -l between"
run ls t/r/one
out_is "max_versions 1: ls shows each cell's newest only" <<'OUT'
p
q
OUT
run cat t/r/one/p t/r/one/q
out_is "and cat reads the last writes" <<'OUT'
b
v2
OUT
run stat t/r/one/p@1000000
fails "stat of p@1000000, which the kernel held, fails: the version is gone"

# max_versions 2
sh_run 'echo a > t/r/two/q@1000000 && echo b > t/r/two/q@2000000 &&
	ls -l t/r/two >/dev/null && cat t/r/two/q@1000000 >/dev/null &&
	echo c > t/r/two/q@3000000'
succeeds "q@1 s, q@2 s, ls -l and cat of q@1 s, then q@3 s"
run ls t/r/two
out_is "max_versions 2: ls shows the newest and one older version" <<'OUT'
q
q@2000000
OUT
run stat t/r/two/q@1000000
fails "stat of q@1000000, which the kernel held, fails"
run sh -c 'cat t/r/two/q t/r/two/q@2000000 t/r/two/q@3000000'
out_is "q, q@2000000 and q@3000000 read the visible versions" <<'OUT'
c
b
c
OUT
sh_run 'echo again > t/r/two/q@1000000'
succeeds "writing q@1000000 by the name the kernel held succeeds (no stale ENOENT)"
run ls t/r/two
out_is "and that version is hidden at once, as max_versions says" <<'OUT'
q
q@2000000
OUT

# no stale read after any write, under any name
: >"$T/stale"
i=1
while [ "$i" -le 20 ]; do
	echo "val$i" > t/r/two/x || echo "write $i failed" >>"$T/stale"
	ls -l t/r/two >/dev/null
	got=$(cat t/r/two/x)
	[ "$got" = "val$i" ] || echo "write $i: x read '$got'" >>"$T/stale"
	if [ "$i" -gt 1 ]; then
		old=$(ls t/r/two | grep '^x@')
		[ "$(printf '%s\n' "$old" | wc -l)" -eq 1 ] ||
			echo "write $i: older names '$old'" >>"$T/stale"
		got=$(cat "t/r/two/$old")
		[ "$got" = "val$((i - 1))" ] || echo "write $i: $old read '$got'" >>"$T/stale"
	fi
	i=$((i + 1))
done
if [ ! -s "$T/stale" ]; then
	ok "20 writes of x: cat x and cat of its one older name always read the last two values"
else
	not_ok "20 writes of x: cat x and cat of its one older name always read the last two values"
	diag_file "$T/stale"
fi

# max_versions lowered while the kernel holds the older names
sh_run 'ls -l t/r/two >/dev/null && cat t/r/two/q@2000000 >/dev/null &&
	echo 1 > t/.families/two/max_versions'
succeeds "max_versions of two lowered to 1 after ls -l and cat of q@2000000"
run ls t/r/two
out_is "ls shows the newest versions only" <<'OUT'
q
x
OUT
run stat t/r/two/q@2000000
fails "stat of q@2000000, which the kernel held, fails"
sh_run 'echo z > t/r/two/q@2000000'
succeeds "and writing it by name again succeeds (no stale ENOENT)"

cd / || exit 1
fs_unmount
done_testing
