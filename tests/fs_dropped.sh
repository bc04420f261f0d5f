#!/bin/sh
# fs_dropped.sh -- a table, or a family, dropped and created again under the
# same name is another one: files and directories of the old one that a
# process still holds (an open descriptor, a working directory) answer
# ESTALE, a write through them reaches nothing, and the new table or family
# works as a fresh one, under the same paths, at once.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 19

fs_mount
cd "$MNT" || exit 1

# hold_dir DIR: a process whose working directory is DIR, which lists it
# ($T/held.out, .err, .status) once $T/go receives a line
hold_dir() {
	rm -f "$T/go" "$T/held."*
	mkfifo "$T/go"
	(cd "$1" && : > "$T/held.in" && read _x < "$T/go" &&
	 ls . > "$T/held.out" 2> "$T/held.err"; echo $? > "$T/held.status") &
	held_pid=$!
	fs_extra_pids="${fs_extra_pids:-} $held_pid"
	_n=0
	while [ ! -e "$T/held.in" ] && [ "$_n" -lt $((FS_TIMEOUT * 10)) ]; do
		sleep 0.1
		_n=$((_n + 1))
	done
}

# release_dir: let the held process list its directory and wait for it
release_dir() {
	echo go > "$T/go"
	wait "$held_pid"
}

# old_io WHAT: a read of descriptor 3 and a write to descriptor 4, both of
# the old WHAT, fail with ESTALE (two assertions); then both are closed and
# the held directory is listed
old_io() {
	cat <&3 > "$T/out" 2> "$T/err"
	status=$?
	if [ "$status" -ne 0 ] && grep -q 'Stale file handle' "$T/err"; then
		ok "a read of the old $1's descriptor fails with ESTALE"
	else
		not_ok "a read of the old $1's descriptor fails with ESTALE"
		_show_run
	fi
	# not the shell's echo, which names no errno
	env printf "more\n" >&4 2> "$T/err"
	status=$?
	if [ "$status" -ne 0 ] && grep -q 'Stale file handle' "$T/err"; then
		ok "a write to the old $1's descriptor fails with ESTALE"
	else
		not_ok "a write to the old $1's descriptor fails with ESTALE"
		diag_file "$T/err"
	fi
	exec 3<&- 4>&-
	release_dir
}

# ---------------------------------------------------------------- a table
sh_run 'mkdir t t/.families/f && mkdir -p t/r/f && echo old > t/r/f/q && echo w0 > t/r/f/w'
succeeds "table t with family f, cells q and w"
exec 3< t/r/f/q
exec 4>> t/r/f/w
exec 5< t/r/f/q
hold_dir "$MNT/t/r"
# a writer that wrote before the drop and closes after it (tests/fs_op hold)
rm -f "$T/hold.in"
mkfifo "$T/hold.in"
"$FS_OP" hold "$MNT/t/r/f/h" "written before the drop" < "$T/hold.in" > "$T/hold.out" 2>&1 &
hold_pid=$!
fs_extra_pids="${fs_extra_pids:-} $hold_pid"
exec 7> "$T/hold.in"
echo >&7
_n=0
until grep -q written "$T/hold.out" || [ "$_n" -ge $((FS_TIMEOUT * 10)) ]; do
	sleep 0.1
	_n=$((_n + 1))
done
sh_run 'rm -rf t'
succeeds "rm -rf t drops the table while a reader, two writers and a working directory hold it"
sh_run 'mkdir t t/.families/f && mkdir -p t/r/f && echo new > t/r/f/q && echo n2 > t/r/f/q2'
succeeds "t made again under the same name: a family, a row, two cells"
run cat t/r/f/q t/r/f/q2
out_is "the new table's cells read back" <<'OUT'
new
n2
OUT
run ls t/r/f
out_is "the new table lists its own cells" <<'OUT'
q
q2
OUT
# removexattr through the descriptor (its /proc link reaches the old inode),
# of a security. name: for a user. name the kernel first checks write
# permission, and the getattr that asks answers ESTALE before removexattr
# reaches the daemon
op_is "removexattr ESTALE" "removexattr of the old table's open cell fails with ESTALE" \
	removexattr /proc/self/fd/5 security.smolfs
exec 5<&-
old_io table
echo >&7
exec 7>&-
wait "$hold_pid"
if [ "$(tail -n 1 "$T/hold.out")" = "close ESTALE" ]; then
	ok "the close of a file written before the drop fails with ESTALE"
else
	not_ok "the close of a file written before the drop fails with ESTALE"
	diag_file "$T/hold.out"
fi
if [ "$(cat "$T/held.status")" -ne 0 ] && grep -q 'Stale file handle' "$T/held.err"; then
	ok "ls in a working directory of the old table fails with ESTALE"
else
	not_ok "ls in a working directory of the old table fails with ESTALE"
	diag_file "$T/held.out"
	diag_file "$T/held.err"
fi
run ls t/r/f
out_is "closing the old writers put nothing into the new table" <<'OUT'
q
q2
OUT
sh_run 'echo 3 > t/r/f/q3 && cat t/r/f/q3 && rm t/r/f/q2 && ls t/r/f'
out_is "the new table takes new cells and removes them" <<'OUT'
3
q
q3
OUT

# ---------------------------------------------------------------- a family
exec 3< t/r/f/q
exec 4>> t/r/f/q3
hold_dir "$MNT/t/r/f"
sh_run 'rm t/r/f/* && rm -r t/.families/f'
succeeds "family f dropped (its cells removed, then rm -r of its schema directory)"
sh_run 'mkdir t/.families/f && echo i64 > t/.families/f/type && mkdir -p t/r/f &&
	echo 7 > t/r/f/n && cat t/r/f/n'
out_is "f declared again (type i64): a new cell in the same row works" <<'OUT'
7
OUT
old_io family
# a row's family directory is a name, not the family: it shows the new one
if [ "$(cat "$T/held.status")" -eq 0 ] && [ "$(cat "$T/held.out")" = n ]; then
	ok "ls in a working directory t/r/f held across the drop lists the new family's cell"
else
	not_ok "ls in a working directory t/r/f held across the drop lists the new family's cell"
	diag_file "$T/held.out"
	diag_file "$T/held.err"
fi
run ls t/r/f
out_is "the new family lists only its own cell" <<'OUT'
n
OUT
cd / || exit 1
fs_unmount
done_testing
