#!/bin/sh
# fs_list.sh -- listing a family of a row on a real mount: a family of a few
# thousand cells (some with older versions) lists every q and q@ts exactly
# once, in order, through ls and find; and a listing taken while other
# cells are created and removed gives every cell that stays exactly once.
# POSIX sh, TAP.

. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 11

# chk STATUS NAME: an assertion from a status
chk() {
	if [ "$1" = 0 ]; then
		ok "$2"
	else
		not_ok "$2"
	fi
}
# same FILE1 FILE2 NAME: the files are equal
same() {
	if cmp -s "$1" "$2"; then
		ok "$3"
	else
		not_ok "$3"
		diff "$1" "$2" | head -5 | sed 's/^/#   /'
	fi
}

fs_mount
M=$MNT
mkdir "$M/t" && mkdir "$M/t/.families/f"
F=$M/t/row/f
mkdir -p "$F"
chk $? "a table, a family and a row"

# 3000 cells; every tenth written twice, so it has one older version
N=3000
i=0
while [ $i -lt $N ]; do
	q=$(printf 'c%05d' $i)
	echo "v$i" >"$F/$q" || break
	case $i in
	*0) echo "w$i" >"$F/$q" || break ;;
	esac
	i=$((i + 1))
done
chk $((i != N)) "$N cells are written"

ls -A "$F" >"$T/ls"
grep -v @ "$T/ls" >"$T/newest"
i=0
while [ $i -lt $N ]; do
	printf 'c%05d\n' $i
	i=$((i + 1))
done >"$T/want"
same "$T/newest" "$T/want" "ls lists every newest cell once, in order"
is_n=$(grep -c @ "$T/ls")
chk $((is_n != N / 10)) "and one q@ts for each cell written twice ($is_n)"
sed 's/@.*//' "$T/ls" | uniq -c | awk '$1 > 2 || ($1 == 2 && $2 !~ /0$/) {print}' >"$T/odd"
same "$T/odd" /dev/null "each q@ts follows its own q"
v=$(grep '^c00010@' "$T/ls")
[ -n "$v" ] && [ "$(cat "$F/$v")" = v10 ]
chk $? "a listed q@ts opens by name and holds the older value ($v)"
ls -A "$F" | sort | uniq -d >"$T/dups"
same "$T/dups" /dev/null "no name is listed twice"
(cd "$F" && find . -mindepth 1 | sed 's|^\./||' | sort) >"$T/find"
sort "$T/ls" >"$T/ls.sorted"
same "$T/find" "$T/ls.sorted" "find lists the same names as ls"
ls -l "$F" | awk 'NR > 1 {print $NF}' >"$T/ll"
same "$T/ll" "$T/ls" "ls -l (readdirplus) lists the same names"

# cells that come and go while the family is listed: those that stay are
# listed exactly once each, and nothing is listed twice
: >"$T/busy"
(
	j=0
	while [ -e "$T/busy" ] && [ $j -lt 20000 ]; do
		q=$(printf 'c%05d_tmp' $((j % 500 * 6)))
		echo x >"$F/$q" 2>/dev/null
		rm -f "$F/$q" 2>/dev/null
		j=$((j + 1))
	done
) &
bg=$!
bad=0
for _ in 1 2 3 4 5; do
	ls -A "$F" >"$T/ls2" || bad=1
	grep -v '_tmp' "$T/ls2" >"$T/stay"
	cmp -s "$T/stay" "$T/ls" || bad=1
	[ -z "$(sort "$T/ls2" | uniq -d)" ] || bad=1
done
rm -f "$T/busy"
wait "$bg" 2>/dev/null
chk $bad "listings while cells are created and removed give the others exactly once"

fs_unmount
done_testing
