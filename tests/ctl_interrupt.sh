#!/bin/sh
# ctl_interrupt.sh -- Ctrl-C (SIGINT) during a long export or import.
# export -o FILE writes a temporary file beside FILE and renames it over FILE
# only when it is complete and synced: interrupted, it leaves the previous
# FILE as it was and no temporary file behind.  An interrupted import writes
# the good rows it has read, says which lines are in (1 to L), and exits
# 130; the database then holds exactly those rows.  To hit the middle of the
# work on any machine, the process is stopped (SIGSTOP) once it is under
# way (it runs in short slices, stopped between them, until it is), sent
# SIGINT, and continued.
# shellcheck source=tests/ctl_lib.sh
. "$(dirname "$0")/ctl_lib.sh"

D=$T/db
N=200000

awk -v n=$N 'BEGIN {
	print "{\"table\":\"t\",\"families\":{\"f\":{\"type\":\"string\",\"max_versions\":0,\"ttl\":0,\"locality_group\":\"default\",\"compression\":1}}}"
	for (i = 0; i < n; i++)
		printf "{\"table\":\"t\",\"row\":\"r%07d\",\"cells\":[{\"family\":\"f\",\"qualifier\":\"q\",\"ts\":1,\"type\":\"string\",\"value\":\"value %d, padded to look like data: the quick brown fox\"}]}\n", i, i
}' >"$T/big.jsonl"
run -d "$D" import --create "$T/big.jsonl"
status_is 0 "a table of $N rows to export"

# wait_for CONDITION...: poll (up to 20 s) until the shell condition holds
wait_for() {
	_i=0
	while ! eval "$*"; do
		_i=$((_i + 1))
		[ $_i -gt 400 ] && return 1
		sleep 0.05
	done
	return 0
}

# step_until PID CONDITION...: let PID run in slices of 20 ms, stopped
# between them, until the shell condition holds; PID is left stopped, so it
# cannot finish between the check and the interrupt however busy the machine
step_until() {
	_pid=$1
	shift
	_i=0
	kill -STOP "$_pid" 2>/dev/null
	while ! eval "$*"; do
		_i=$((_i + 1))
		[ $_i -gt 3000 ] && return 1
		kill -CONT "$_pid" 2>/dev/null
		sleep 0.02
		kill -STOP "$_pid" 2>/dev/null
	done
	return 0
}

# interrupt PID: send SIGINT to the stopped PID, continue it, and wait: its status in $status
interrupt() {
	kill -INT "$1" && kill -CONT "$1"
	wait "$1"
	status=$?
}

# rchar PID: bytes the process has read so far
rchar() {
	sed -n 's/^rchar: //p' "/proc/$1/io" 2>/dev/null || echo 0
}

# temp_size: the size of export's temporary file beside $T/out-dir/backup.jsonl (0 if none)
temp_size() {
	_f=$(ls -A "$T/out-dir" | grep '^\.backup\.jsonl\.' | head -n 1)
	if [ -n "$_f" ]; then stat -c %s "$T/out-dir/$_f"; else echo 0; fi
}

echo "# export -o FILE, interrupted"
mkdir "$T/out-dir"
printf 'the previous backup\n' >"$T/out-dir/backup.jsonl"
"$SMOLCTL" -d "$D" export -o "$T/out-dir/backup.jsonl" >"$T/out" 2>"$T/err" &
pid=$!
step_until $pid '[ "$(temp_size)" -gt 100000 ]'
check $? "the export writes a temporary file beside FILE"
interrupt $pid
status_is 130 "an interrupted export exits with 130 (128 + SIGINT)"
err_has "export interrupted after" "it says it was interrupted"
err_has "backup.jsonl was left as it was" "and that FILE was left as it was"
printf 'the previous backup\n' | cmp -s - "$T/out-dir/backup.jsonl"
check $? "the previous FILE is intact"
test "$(ls -A "$T/out-dir")" = "backup.jsonl"
check $? "no temporary file is left behind"

echo "# export -o FILE, to the end"
run -d "$D" export -o "$T/out-dir/backup.jsonl"
status_is 0 "an export that is not interrupted works"
cmp -s "$T/big.jsonl" "$T/out-dir/backup.jsonl"
check $? "and replaces FILE with the whole export"
test "$(ls -A "$T/out-dir")" = "backup.jsonl"
check $? "leaving no temporary file"

echo "# export to standard output, interrupted"
"$SMOLCTL" -d "$D" export >"$T/stdout.jsonl" 2>"$T/err" &
pid=$!
step_until $pid '[ "$(stat -c %s "$T/stdout.jsonl")" -gt 100000 ]'
interrupt $pid
status_is 130 "an interrupted export to standard output exits with 130"
err_has "export interrupted after" "and says so"

echo "# import from a file, interrupted"
"$SMOLCTL" -d "$T/db2" import --create "$T/big.jsonl" >"$T/out" 2>"$T/err" &
pid=$!
step_until $pid '[ "$(rchar $pid)" -gt 10000000 ]'
check $? "the import is under way"
interrupt $pid
status_is 130 "an interrupted import exits with 130"
lines=$(sed -n 's/.*interrupted: lines 1 to \([0-9]*\) are imported (\([0-9]*\) rows.*/\1/p' "$T/err")
rows=$(sed -n 's/.*interrupted: lines 1 to \([0-9]*\) are imported (\([0-9]*\) rows.*/\2/p' "$T/err")
test -n "$lines" && test -n "$rows"
check $? "it says which lines are imported, and how many rows"
test "${lines:-0}" -gt 1 && test "${lines:-0}" -le $N && test "${rows:-0}" -eq $((${lines:-0} - 1))
check $? "it stopped in the middle: lines 1 to $lines, $rows rows (line 1 is the schema)"
out_has "interrupted" "the summary on standard output says so too"
run -d "$T/db2" export
status_is 0 "the interrupted database exports"
head -n "${lines:-0}" "$T/big.jsonl" | cmp -s - "$T/out"
check $? "it holds exactly the rows of lines 1 to $lines, nothing more or less"

echo "# import from a pipe that goes quiet, interrupted"
mkfifo "$T/fifo"
"$SMOLCTL" -d "$T/db3" import --create "$T/fifo" >"$T/out" 2>"$T/err" &
pid=$!
# this shell writes 1001 lines, then keeps the pipe open without writing
exec 3>"$T/fifo"
head -n 1001 "$T/big.jsonl" >&3
size=$(head -n 1001 "$T/big.jsonl" | wc -c)
wait_for '[ "$(rchar $pid)" -ge $size ]'
check $? "the import read what the pipe held and waits for more"
kill -INT $pid
wait_for '! kill -0 $pid 2>/dev/null'
check $? "SIGINT ends an import that waits on its input"
wait $pid
status=$?
exec 3>&-
status_is 130 "with status 130"
# it stops at the first line boundary after the signal: the lines it had read
# but not reached are not imported, and the message says where it stopped
lines=$(sed -n 's/.*interrupted: lines 1 to \([0-9]*\) are imported.*/\1/p' "$T/err")
test "${lines:-0}" -ge 1 && test "${lines:-0}" -le 1001
check $? "it says which lines are imported (1 to $lines)"
run -d "$T/db3" export
head -n "${lines:-0}" "$T/big.jsonl" | cmp -s - "$T/out"
check $? "and the database holds exactly the rows of those lines"

done_testing
