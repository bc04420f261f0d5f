#!/bin/sh
# fs_stress.sh -- a long random workload through the mount, checked against
# a model.  Four workers each own two rows of table t and do random
# operations on them: write a cell (O_TRUNC), append, pwrite at an offset
# (past the end too, leaving a hole of zero bytes), truncate, rename within
# the row (plain, RENAME_NOREPLACE, RENAME_EXCHANGE), unlink a cell, rm -r
# the row, and list it.  Each worker's model is a mirror of its rows on the
# scratch directory's own filesystem: every operation is done on the mount
# and on the mirror by the same tests/fs_op call, and the two must answer
# alike ("ok" or the same errno), the cells the operation touched must read
# back the same bytes (or both be missing) and the row's listing must be the
# same.  Any difference is a mismatch, logged with the operation.  A fifth
# process lists and stats the whole table (ls -lR) and reads every cell the
# whole time; the only error it may see is ENOENT (a name gone between the
# listing and the look-up).  At the end the database is unmounted, mounted
# again and each worker's rows must equal its mirror, cell by cell (the
# empty rows the mirror keeps are forgotten by a remount, as smolfs(1)
# says), and `smolctl check` must find the data directory sound.
#
# The workload runs for SMOLFS_STRESS_SECONDS (default 20; `make check-stress
# STRESS_SECONDS=N` for any length); operations are drawn from
# SMOLFS_TEST_SEED (printed).  The verdict does not depend on how many
# operations a loaded machine manages in that time.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 8

DURATION=${SMOLFS_STRESS_SECONDS:-20}
seed=${SMOLFS_TEST_SEED:-$(date +%s)}
WORKERS=4
diag "$DURATION seconds, $WORKERS workers, seed $seed (SMOLFS_TEST_SEED=$seed replays the choices)"

K=$MNT/t           # the table on the mount
M=$T/model         # the workers' mirrors: $M/ROW/f/CELL

fs_mount
# a bytes family of one version: a cell reads back exactly the bytes
# written, like a file, and lists as one name
sh_run "mkdir '$K' '$K/.families/f' && echo bytes >'$K/.families/f/type' &&
	echo 1 >'$K/.families/f/max_versions'"
succeeds "a table t with a family f of bytes cells and one version"

# same_cell CELL (ROW/f/QUALIFIER): the cell's bytes on the mount and in the
# mirror agree (both missing, or the same bytes); 1 if not
same_cell() {
	_a=$K/$1
	_b=$M/$1
	if [ -e "$_a" ]; then
		[ -e "$_b" ] && cmp -s "$_a" "$_b"
	else
		[ ! -e "$_b" ]
	fi
}

# same_row ROW: the listing of ROW's family directory on the mount and in
# the mirror agree (both missing, or the same names)
same_row() {
	_la=$(ls -A "$K/$1/f" 2>/dev/null; echo "rc $?")
	_lb=$(ls -A "$M/$1/f" 2>/dev/null; echo "rc $?")
	[ "$_la" = "$_lb" ]
}

# worker ID: random operations on rows wID.r0 and wID.r1 until $T/stop
# exists (at least one); its count in $T/ops.ID, each mismatch a line of
# $T/mm.ID
worker() {
	_id=$1
	_x=$(((seed % 2147483648 + _id * 7919) % 2147483648))   # its own sequence
	_n=0
	: >"$T/mm.$_id"
	while :; do
		_n=$((_n + 1))
		# a linear congruential step; the high bits pick
		_x=$(((_x * 1103515245 + 12345) % 2147483648))
		_r=$((_x / 65536))
		_row=w$_id.r$((_r % 2))
		_c=$_row/f/c$((_r / 2 % 4))
		_d=$_row/f/c$((_r / 8 % 4))
		_op=$((_r / 50 % 20))
		# rm -r of a row (op 17) one time in four, else a listing
		[ "$_op" -eq 17 ] && [ $((_r / 1000 % 4)) -ne 0 ] && _op=18
		# an operation on a cell the model lacks is an ENOENT on both
		# sides: three times in four, write the cell instead
		if [ "$_op" -ge 5 ] && [ "$_op" -le 16 ] && [ ! -e "$M/$_c" ] &&
		   [ $((_r / 4000 % 4)) -ne 0 ]; then
			_op=0
		fi
		_v=w$_id-$_n
		_what=
		case $_op in
		0|1|2|3|4) # write (creating the row if it is missing)
			mkdir -p "$K/$_row/f" "$M/$_row/f"
			_what="write $_c $_v"
			_a=$("$FS_OP" write "$K/$_c" "$_v" 2>&1)
			_b=$("$FS_OP" write "$M/$_c" "$_v" 2>&1) ;;
		5|6|7)     # append (ENOENT on both when the cell is missing)
			_what="append $_c $_v"
			_a=$("$FS_OP" append "$K/$_c" "$_v" 2>&1)
			_b=$("$FS_OP" append "$M/$_c" "$_v" 2>&1) ;;
		8|9)       # pwrite at 0..11, past the end of a short value too
			_o=$((_r / 1000 % 12))
			_what="pwrite $_c $_o $_v"
			_a=$("$FS_OP" pwrite "$K/$_c" "$_o" "$_v" 2>&1)
			_b=$("$FS_OP" pwrite "$M/$_c" "$_o" "$_v" 2>&1) ;;
		10|11)     # truncate to 0..9 bytes, shorter or longer
			_o=$((_r / 1000 % 10))
			_what="truncate $_c $_o"
			_a=$("$FS_OP" truncate "$K/$_c" "$_o" 2>&1)
			_b=$("$FS_OP" truncate "$M/$_c" "$_o" 2>&1) ;;
		12|13|14|15) # rename within the row: plain, noreplace, exchange
			if [ "$_c" = "$_d" ]; then
				_d=$_row/f/c4
			fi
			case $((_r / 1000 % 3)) in
			0) _how= ;;
			1) _how=noreplace ;;
			2) _how=exchange ;;
			esac
			_what="rename $_c $_d $_how"
			# shellcheck disable=SC2086
			_a=$("$FS_OP" rename "$K/$_c" "$K/$_d" $_how 2>&1)
			# shellcheck disable=SC2086
			_b=$("$FS_OP" rename "$M/$_c" "$M/$_d" $_how 2>&1) ;;
		16)        # unlink
			_what="unlink $_c"
			_a=$("$FS_OP" unlink "$K/$_c" 2>&1)
			_b=$("$FS_OP" unlink "$M/$_c" 2>&1) ;;
		17)        # rm -r of the row
			_what="rm -r $_row"
			_a=$(rm -r "$K/$_row" 2>&1 && echo ok)
			_b=$(rm -r "$M/$_row" 2>&1 && echo ok)
			# the messages name different paths: compare only success
			[ "$_a" = ok ] || _a=failed
			[ "$_b" = ok ] || _b=failed ;;
		*)         # list the row (the check below) and read a cell
			_what="list $_row"
			_a=ok
			_b=ok ;;
		esac
		# the kind of operation and how the mount answered, for the summary
		case $_what in
		rename*) echo "rename${_how:+ $_how} $_a" ;;
		*) echo "${_what%% *} $_a" ;;
		esac >>"$T/kinds.$_id"
		if [ "$_a" != "$_b" ]; then
			printf '%s\n' "op $_n: $_what: the mount says '$_a', the model '$_b'" >>"$T/mm.$_id"
		fi
		if ! same_cell "$_c"; then
			printf '%s\n' "op $_n: $_what: $_c reads '$(od -An -c "$K/$_c" 2>&1 | tr -s ' \n' ' ')', the model '$(od -An -c "$M/$_c" 2>&1 | tr -s ' \n' ' ')'" >>"$T/mm.$_id"
		fi
		if [ "$_d" != "$_c" ] && ! same_cell "$_d"; then
			printf '%s\n' "op $_n: $_what: $_d reads '$(od -An -c "$K/$_d" 2>&1 | tr -s ' \n' ' ')', the model '$(od -An -c "$M/$_d" 2>&1 | tr -s ' \n' ' ')'" >>"$T/mm.$_id"
		fi
		if ! same_row "$_row"; then
			printf '%s\n' "op $_n: $_what: $_row lists '$(ls -A "$K/$_row/f" 2>&1 | tr '\n' ' ')', the model '$(ls -A "$M/$_row/f" 2>&1 | tr '\n' ' ')'" >>"$T/mm.$_id"
		fi
		[ -e "$T/stop" ] && break
	done
	echo "$_n" >"$T/ops.$_id"
}

# lister: the whole table listed with its attributes and every cell read,
# until $T/stop exists (at least once); its errors in $T/lister.err
lister() {
	_n=0
	while :; do
		_n=$((_n + 1))
		ls -lR "$K" >/dev/null 2>>"$T/lister.err"
		find "$K" -path "$K/.families" -prune -o -type f -exec cat {} + \
			>/dev/null 2>>"$T/lister.err"
		[ -e "$T/stop" ] && break
	done
	echo "$_n" >"$T/ops.lister"
}

mkdir "$M"
: >"$T/lister.err"
pids=
id=1
while [ "$id" -le "$WORKERS" ]; do
	worker "$id" &
	pids="$pids $!"
	id=$((id + 1))
done
lister &
pids="$pids $!"
# the deadline sets the length of the run, not the verdict
n=0
while [ "$n" -lt $((DURATION * 10)) ] && kill -0 "$fs_pid" 2>/dev/null; do
	sleep 0.1
	n=$((n + 1))
done
: >"$T/stop"
for p in $pids; do
	wait "$p"
done

total=0
nmm=0
id=1
while [ "$id" -le "$WORKERS" ]; do
	o=$(cat "$T/ops.$id" 2>/dev/null || echo 0)
	m=$(wc -l <"$T/mm.$id")
	diag "worker $id: $o operations, $m mismatches"
	total=$((total + o))
	nmm=$((nmm + m))
	id=$((id + 1))
done
diag "lister: $(cat "$T/ops.lister" 2>/dev/null || echo 0) passes over the table"
diag "in all: $total operations, $nmm mismatches; by kind and answer:"
cat "$T"/kinds.* | sort | uniq -c | sed 's/^ */  /' | while read -r line; do diag "  $line"; done
if [ "$nmm" -eq 0 ]; then
	ok "every operation answered and read back as the model says (0 mismatches)"
else
	not_ok "every operation answered and read back as the model says ($nmm mismatches)"
	cat "$T"/mm.* | head -n 30 | sed 's/^/#   /'
fi
if grep -v -e 'No such file or directory' "$T/lister.err" >"$T/lister.other"; then
	not_ok "the lister saw no error but ENOENT races"
	sort "$T/lister.other" | uniq -c | head -n 10 | sed 's/^/#   /'
else
	ok "the lister saw no error but ENOENT races ($(wc -l <"$T/lister.err") ENOENT)"
fi
fs_check_alive
fs_unmount

# after a remount every worker's rows equal its mirror: empty rows and
# families are dropped from the mirror, since a remount forgets them
find "$M" -mindepth 1 -depth -type d -empty -delete
fs_mount
ls -A "$M" >"$T/rows.model"
ls -A "$K" | grep -v '^\.families$' >"$T/rows.mount"
if cmp -s "$T/rows.model" "$T/rows.mount"; then
	ok "after a remount the table holds the rows of the model"
else
	not_ok "after a remount the table holds the rows of the model"
	diff -u "$T/rows.model" "$T/rows.mount" | sed 's/^/#   /'
fi
if diff -r "$M" "$K" -x .families >"$T/diff" 2>&1; then
	ok "after a remount every cell of every row reads as the model says"
else
	not_ok "after a remount every cell of every row reads as the model says"
	diag_file "$T/diff"
fi
fs_unmount
run "$SMOLCTL" -d "$DATADIR" check
succeeds "smolctl check finds the data directory sound"
done_testing
