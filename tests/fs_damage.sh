#!/bin/sh
# fs_damage.sh -- damaged files under a live mount and while unmounted.
# Two tables of 300 cells each, every table in a locality group of its own
# so that each has an SSTable of its own (smolctl compact).  Under the live
# mount, bytes are flipped in the middle of table a's SSTable and table b's
# SSTable is cut in half (the engine maps tables: the cut must not kill the
# daemon with SIGBUS).  Then every read of a cell gives its exact value or
# EIO, never other bytes; some reads do fail (the damage is seen); the
# daemon stays up and its log names the damaged file; a listing of the table
# completes or stops with EIO.  While unmounted, on a new database: garbage
# appended after the last record of the newest log is ignored at mount (every
# cell still reads back), so is a last record cut short (the cells before it
# read back, its own is whole or absent), and a damaged MANIFEST stops the
# mount: smolfs exits non-zero with a message naming the file.  (smolfs(5)
# has the files.)
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 24

# flip FILE OFFSET N: invert N bytes of FILE from OFFSET, in place
flip() {
	_esc=$(od -An -v -tu1 -j "$2" -N "$3" "$1" |
		awk '{ for (i = 1; i <= NF; i++) printf "\\%03o", 255 - $i }')
	printf "$_esc" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# size FILE: its length in bytes
size() {
	wc -c <"$1" | tr -d ' '
}

# cells TABLE WORDS: the import lines of TABLE's 300 rows r000..r299, one
# cell f:q each: "TABLE-rNNN-" and WORDS times 8 hex digits, which zstd
# cannot shrink much
cells() {
	awk -v t="$1" -v w="$2" 'BEGIN { srand(t == "a" ? 7 : 11)
		for (i = 0; i < 300; i++) { v = sprintf("%s-r%03d-", t, i)
			for (j = 0; j < w; j++) v = v sprintf("%08x", int(rand() * 4294967296))
			printf "{\"table\":\"%s\",\"row\":\"r%03d\",\"cells\":[{\"family\":\"f\",", t, i
			printf "\"qualifier\":\"q\",\"value\":\"%s\"}]}\n", v } }'
}

# biggest N: the Nth largest SSTable of DATADIR
biggest() {
	ls -S "$DATADIR" | grep -E '^[0-9]+\.sst$' | sed -n "$1p"
}

# ---------------------------------------------------------------- setup
# table a's values are twice the size of b's, so its SSTable is the larger
# (the default tree's, of the schema, are far smaller)
cells a 40 >"$T/a.jsonl"
cells b 20 >"$T/b.jsonl"
sh_run "'$SMOLCTL' -d '$DATADIR' create-table a && '$SMOLCTL' -d '$DATADIR' create-table b &&
	'$SMOLCTL' -d '$DATADIR' add-family --locality-group ga a f &&
	'$SMOLCTL' -d '$DATADIR' add-family --locality-group gb b f &&
	'$SMOLCTL' -d '$DATADIR' import '$T/a.jsonl' &&
	'$SMOLCTL' -d '$DATADIR' import '$T/b.jsonl' && '$SMOLCTL' -d '$DATADIR' compact"
sst_a=$(biggest 1)
sst_b=$(biggest 2)
if [ "$status" -eq 0 ] && [ -n "$sst_a" ] && [ -n "$sst_b" ]; then
	ok "two tables of 300 cells, each compacted into an SSTable of its own ($sst_a, $sst_b)"
else
	not_ok "two tables of 300 cells, each compacted into an SSTable of its own"
	_show_run
	ls -l "$DATADIR" | sed 's/^/#   /'
fi

# read_all TABLE: read each cell of TABLE once; $nexact, $neio and the
# reads that gave anything else ($T/wrong)
read_all() {
	nexact=0
	neio=0
	: >"$T/wrong"
	sed -e 's/.*"row":"\([^"]*\)".*"value":"\([^"]*\)".*/\1 \2/' "$T/$1.jsonl" >"$T/$1.want"
	while read -r r v; do
		got=$(cat "$MNT/$1/$r/f/q" 2>"$T/rerr")
		st=$?
		if [ "$st" -eq 0 ] && [ "$got" = "$v" ]; then
			nexact=$((nexact + 1))
		elif [ "$st" -ne 0 ] && grep -q 'Input/output error' "$T/rerr"; then
			neio=$((neio + 1))
		else
			echo "$1/$r: status $st, read '$(printf '%s' "$got" | cut -c 1-40)...', $(cat "$T/rerr")" >>"$T/wrong"
		fi
	done <"$T/$1.want"
}

# damaged TABLE FILE WHAT: the assertions after FILE (TABLE's table) got WHAT
damaged() {
	read_all "$1"
	diag "table $1 after $3: $nexact reads exact, $neio EIO"
	if [ ! -s "$T/wrong" ]; then
		ok "$3: every read of table $1 gives its exact value or EIO"
	else
		not_ok "$3: every read of table $1 gives its exact value or EIO"
		diag_file "$T/wrong"
	fi
	if [ "$neio" -gt 0 ]; then
		ok "$3: the damage is seen: $neio reads fail with EIO"
	else
		not_ok "$3: the damage is seen: some reads fail with EIO"
	fi
	if grep -q -F "$2" "$(_daemon_log)"; then
		ok "$3: the daemon's log names $2"
	else
		not_ok "$3: the daemon's log names $2"
		fs_show_log
	fi
	ls -U "$MNT/$1" >"$T/ls" 2>"$T/ls.err"
	_st=$?
	if kill -0 "$fs_pid" 2>/dev/null &&
	   { [ "$_st" -eq 0 ] || grep -q 'Input/output error' "$T/ls.err"; }; then
		ok "$3: a listing of table $1 completes or stops with EIO ($(wc -l <"$T/ls") rows listed), the daemon stays up"
	else
		not_ok "$3: a listing of table $1 completes or stops with EIO, the daemon stays up"
		diag_file "$T/ls.err"
	fi
}

# ---------------------------------------------------------------- live mount
fs_mount
run cat "$MNT/a/r000/f/q" "$MNT/b/r000/f/q"
grep -h '"row":"r000"' "$T/a.jsonl" "$T/b.jsonl" |
	sed -e 's/.*"value":"\([^"]*\)".*/\1/' >"$T/first"
out_is "before the damage, a cell of each table reads (its table is open)" <"$T/first"

n=$(size "$DATADIR/$sst_a")
flip "$DATADIR/$sst_a" $((n / 4)) 16
flip "$DATADIR/$sst_a" $((n / 2)) 16
damaged a "$sst_a" "bytes flipped in $sst_a"

n=$(size "$DATADIR/$sst_b")
run "$FS_OP" truncate "$DATADIR/$sst_b" $((n / 2))
damaged b "$sst_b" "$sst_b cut in half"
fs_unmount

# ---------------------------------------------------------------- unmounted
DATADIR=$T/data2
fs_mount
sh_run "mkdir '$MNT/t' '$MNT/t/.families/f' && mkdir -p '$MNT/t/r/f' &&
	i=0; while [ \$i -lt 20 ]; do '$FS_OP' write '$MNT/t/r/f/c'\$i v\$i >/dev/null || exit 1;
	i=\$((i + 1)); done"
succeeds "a new database: 20 cells written through the mount"
fs_unmount
log=$(ls "$DATADIR" | grep -E '^[0-9]+\.log$' | sort | tail -n 1)
if [ -n "$log" ] && [ "$(size "$DATADIR/$log")" -gt 0 ]; then
	ok "the newest log $log holds records ($(size "$DATADIR/$log") bytes)"
else
	not_ok "the newest log holds records"
	ls -l "$DATADIR" | sed 's/^/#   /'
fi
head -c 200 /dev/urandom | tr '\000' '\001' >>"$DATADIR/$log"
if fs_try_mount "200 bytes of garbage after the last record of $log: the database mounts"; then
	i=0
	: >"$T/want"
	: >"$T/got"
	while [ "$i" -lt 20 ]; do
		echo "v$i" >>"$T/want"
		cat "$MNT/t/r/f/c$i" >>"$T/got" 2>&1
		i=$((i + 1))
	done
	same_files "$T/want" "$T/got" "every cell reads back"
	sh_run "for i in 0 1 2 3 4; do '$FS_OP' write '$MNT/t/r/f/d'\$i w\$i >/dev/null || exit 1; done"
	succeeds "five more cells written"
	fs_unmount
else
	skip "it did not mount" "every cell reads back"
	skip "it did not mount" "five more cells written"
	skip "it did not mount" "unmount"
fi

# the newest log cut 3 bytes short: its last record (cell d4) is a torn tail
log=$(ls "$DATADIR" | grep -E '^[0-9]+\.log$' | sort | tail -n 1)
run "$FS_OP" truncate "$DATADIR/$log" $(($(size "$DATADIR/$log") - 3))
if fs_try_mount "$log cut 3 bytes short, in its last record: the database mounts"; then
	i=0
	: >"$T/got"
	while [ "$i" -lt 4 ]; do
		echo "w$i" >>"$T/want"
		i=$((i + 1))
	done
	for c in c0 c1 c2 c3 c4 c5 c6 c7 c8 c9 c10 c11 c12 c13 c14 c15 c16 c17 c18 c19 d0 d1 d2 d3; do
		cat "$MNT/t/r/f/$c" >>"$T/got" 2>&1
	done
	if [ -e "$MNT/t/r/f/d4" ]; then
		cat "$MNT/t/r/f/d4" >>"$T/got" 2>&1
		echo w4 >>"$T/want"
	fi
	same_files "$T/want" "$T/got" "every cell before the torn record reads back, and that one is whole or absent"
	fs_unmount
else
	skip "it did not mount" "every cell before the torn record reads back"
	skip "it did not mount" "unmount"
fi

manifest=$(cat "$DATADIR/CURRENT")
flip "$DATADIR/$manifest" $(($(size "$DATADIR/$manifest") / 2)) 4
fs_nlog=$((fs_nlog + 1))
"$SMOLFS" -f "$DATADIR" "$MNT" >"$(_daemon_log)" 2>&1 &
fs_pid=$!
fs_mounted=$MNT
fs_wait_exit "$fs_pid"
fs_pid=
if [ "$fs_status" -ne 0 ] && [ "$fs_status" -ne 124 ] && ! fs_is_mounted "$MNT"; then
	ok "a damaged $manifest: smolfs exits non-zero ($fs_status) without mounting"
else
	not_ok "a damaged $manifest: smolfs exits non-zero without mounting (status $fs_status)"
	diag_file "$(_daemon_log)"
fi
fs_force_unmount "$MNT"
fs_mounted=
if grep -q -F "$manifest" "$(_daemon_log)"; then
	ok "its message names $manifest"
else
	not_ok "its message names $manifest"
	diag_file "$(_daemon_log)"
fi
if fs_log_clean; then
	ok "and no sanitizer report"
else
	not_ok "and no sanitizer report"
	fs_show_log
fi

done_testing
