#!/bin/sh
# fs_hostile.sh -- legal but hostile input on a real mount, and the daemon
# stays up through it: a pwrite at 2^40 (EFBIG, nothing changed), values of
# exactly max_value_size and one byte more (-o max_value_size=1000), 2,000
# files of one row open at once, two descriptors writing one cell (the last
# close wins) and two processes rewriting one cell (it ends with one of
# their values).  After each, the mount answers a read.  POSIX sh, TAP.

. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 19

# alive: the mount is up and answers a read of a known cell
alive() {
	if mountpoint -q "$MNT" && [ "$(cat "$MNT/t/r/b/v" 2>/dev/null)" = hello ]; then
		ok "the daemon is up and answers ($1)"
	else
		not_ok "the daemon is up and answers ($1)"
	fi
}
# rep N CHAR: CHAR N times
rep() {
	awk -v n="$1" -v s="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%s", s }'
}

fs_mount -o max_value_size=1000
M=$MNT
sh_run "mkdir '$M/t' '$M/t/.families/s' '$M/t/.families/b' && echo bytes > '$M/t/.families/b/type' &&
	mkdir -p '$M/t/r/b' '$M/t/r/s' && printf hello > '$M/t/r/b/v'"
succeeds "a table with a string family and a bytes family, and a cell"

# ---------------------------------------------------------------- huge offset
op_is "write EFBIG" "pwrite at 2^40: EFBIG" pwrite "$M/t/r/b/v" 1099511627776 x
run cat "$M/t/r/b/v"
printf hello >"$T/hello"
out_is "and the cell is unchanged" <"$T/hello"
alive "after the pwrite at 2^40"

# ---------------------------------------------------------------- max_value_size
op_is "ok" "a bytes value of exactly max_value_size (1000 bytes) is stored" \
	write "$M/t/r/b/big" "$(rep 1000 y)"
op_is "write EFBIG" "one of 1001 bytes is EFBIG at write()" write "$M/t/r/b/big" "$(rep 1001 z)"
run stat -c %s "$M/t/r/b/big"
out_is "and the cell keeps its 1000 bytes" <<'EOF'
1000
EOF
op_is "ok" "a string of 1000 bytes and its newline is stored" \
	write "$M/t/r/s/big" "$(rep 1000 y)
"
# 1001 bytes may still fit (a pwrite of a newline over the last byte):
# EFBIG at close; 1002 never can: EFBIG at write
op_is "close EFBIG" "a string of 1001 bytes is EFBIG at close()" write "$M/t/r/s/big" "$(rep 1001 z)"
op_is "write EFBIG" "a string of 1002 bytes is EFBIG at write()" write "$M/t/r/s/big" "$(rep 1002 z)"
run stat -c %s "$M/t/r/s/big"
out_is "and the string keeps its value (1000 bytes and the newline cat adds)" <<'EOF'
1001
EOF
alive "after the values over the limit"

# ---------------------------------------------------------------- many open files
nopen=2000
mkdir -p "$M/t/many/s"
if (ulimit -n $((nopen + 64))) 2>/dev/null || [ "$(ulimit -n)" -ge $((nopen + 64)) ]; then
	sh_run "ulimit -n $((nopen + 64)) 2>/dev/null; '$FS_OP' openmany '$M/t/many/s' $nopen"
	out_is "$nopen files of one row open at once, written, closed and read back" <<'EOF'
ok
EOF
	n=$(ls "$M/t/many/s" | wc -l)
	[ "$n" -eq "$nopen" ]
	check $? "the family lists the $nopen cells ($n)"
else
	skip "the descriptor limit ($(ulimit -n)) is below $((nopen + 64))" "$nopen files open at once"
	skip "the descriptor limit is too low" "the family lists them"
fi
alive "after $nopen open files"

# ---------------------------------------------------------------- two writers
op_is "ok" "two descriptors write one cell; the second is closed first" \
	twowrite "$M/t/r/s/w" first second
run cat "$M/t/r/s/w"
out_is "the last close wins" <<'EOF'
first
EOF
for who in A B; do
	(
		i=0
		while [ $i -lt 100 ]; do
			echo "$who$who$who" >"$M/t/r/s/race" || exit 1
			i=$((i + 1))
		done
	) &
	eval "pid_$who=\$!"
done
# shellcheck disable=SC2154
wait "$pid_A"
st_a=$?
# shellcheck disable=SC2154
wait "$pid_B"
st_b=$?
v=$(cat "$M/t/r/s/race")
[ "$st_a" -eq 0 ] && [ "$st_b" -eq 0 ] && { [ "$v" = AAA ] || [ "$v" = BBB ]; }
check $? "two processes rewriting one cell 100 times each: every write succeeds, it ends as one of them ($v)"
fs_unmount
done_testing
