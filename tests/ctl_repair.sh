#!/bin/sh
# ctl_repair.sh -- smolctl repair on the kinds of damage that used to make a
# database unopenable: a stray NNNNNN.log of garbage, a table a byte short,
# a missing table, a damaged data block, a missing CURRENT, a damaged
# manifest.  Each time: check finds the damage, repair says what it did and
# what it dropped, moves what it could not use into lost/, the database then
# opens and check is clean, and every row that was readable is exported,
# byte for byte as before.
# shellcheck source=tests/ctl_lib.sh
. "$(dirname "$0")/ctl_lib.sh"

B=$T/base

# Three imports: each writable open puts the previous import's log into a
# table, so the base has table A (the schema and rows 0..9999), table B
# (rows 10000..19999) and a log (rows 20000..24999).
awk 'BEGIN {
	print "{\"table\":\"t\",\"families\":{\"f\":{\"type\":\"string\",\"max_versions\":0,\"ttl\":0,\"locality_group\":\"default\",\"compression\":1}}}"
	for (i = 0; i < 25000; i++)
		printf "{\"table\":\"t\",\"row\":\"r%07d\",\"cells\":[{\"family\":\"f\",\"qualifier\":\"q\",\"ts\":1,\"type\":\"string\",\"value\":\"value %d, with some words to compress\"}]}\n", i, i
}' >"$T/all.jsonl"
head -n 10001 "$T/all.jsonl" >"$T/p1.jsonl"
sed -n '10002,20001p' "$T/all.jsonl" >"$T/p2.jsonl"
sed -n '20002,25001p' "$T/all.jsonl" >"$T/p3.jsonl"
"$SMOLCTL" -d "$B" import --create "$T/p1.jsonl" >/dev/null &&
	"$SMOLCTL" -d "$B" import "$T/p2.jsonl" >/dev/null &&
	"$SMOLCTL" -d "$B" import "$T/p3.jsonl" >/dev/null
check $? "a database of two tables and a log"
set -- $(cd "$B" && ls ./*.sst | sed 's|^\./||')
TA=$1
TB=$2
test -n "$TA" && test -n "$TB" && test -n "$(ls "$B" | grep '\.log$')"
check $? "the tables are $TA and $TB"

# fresh NAME: a copy of the base
fresh() {
	rm -rf "$T/$1"
	cp -a "$B" "$T/$1"
	D=$T/$1
}

# repaired DESCRIPTION: repair works, the database opens and check is clean
repaired() {
	run -d "$D" repair
	cp "$T/out" "$T/repair.out"
	status_is 0 "$1: repair succeeds"
	run -d "$D" check
	status_is 0 "$1: check is clean afterwards"
}

# exports_lines FIRST LAST DESCRIPTION: the export is lines FIRST..LAST of all.jsonl
exports() {
	run -d "$D" export
	sed -n "$1,$2p" "$T/all.jsonl" | cmp -s - "$T/out"
	check $? "$3"
}

repair_says() {
	grep -F -e "$1" "$T/repair.out" >/dev/null
	_r=$?
	if [ $_r -ne 0 ]; then echo "# repair said:"; diag_file "$T/repair.out"; fi
	check $_r "$2"
}

echo "# a stray log of garbage, the newest log"
fresh garbage
head -c 5000 /dev/urandom >"$D/000999.log"
run -d "$D" check
status_is 1 "check reports the damaged log"
run -d "$D" scan t
status_is 1 "and it does not open: a log that is garbage from its first byte is no torn tail"
repaired "garbage log"
repair_says "000999.log: damaged from its first record" "repair names the log and its damage"
test -f "$D/lost/000999.log" && test ! -e "$D/000999.log"
check $? "the log is moved into lost/"
exports 1 25001 "every row is there"

echo "# a stray log of garbage before the newest log"
fresh garbage2
# damage in a log that is not the newest is not a power cut's torn tail
log=$(cd "$D" && ls | grep '\.log$')
mv "$D/$log" "$D/001000.log"
head -c 5000 /dev/urandom >"$D/000999.log"
run -d "$D" check
status_is 1 "check finds the database damaged"
run -d "$D" scan t
status_is 1 "and it does not open"
repaired "garbage log before the newest"
repair_says "000999.log: damaged from its first record" "repair names the log and its damage"
test -f "$D/lost/000999.log" && test ! -e "$D/000999.log"
check $? "the log is moved into lost/"
exports 1 25001 "every row is there, the newest log's too"

echo "# a table a byte short"
fresh short
truncate -s -1 "$D/$TB"
run -d "$D" check
status_is 1 "check finds it"
repaired "short table"
repair_says "$TB: 1 byte short, inside the footer's magic number: restored (nothing dropped)" \
	"repair restores the footer"
repair_says "nothing was dropped" "and says nothing was dropped"
test -f "$D/lost/$TB"
check $? "the short file is kept in lost/"
exports 1 25001 "every row is there"

echo "# a missing table"
fresh missing
rm "$D/$TB"
run -d "$D" check
status_is 1 "check finds it"
repaired "missing table"
repair_says "$TB: missing: dropped from the manifest; lost: 10000 entries and 0 range tombstones, keys" \
	"repair reports the table, its entry count and key range"
repair_says "r0010000" "the range starts at the table's first row"
repair_says "r0019999" "and ends at its last"
run -d "$D" export
{ head -n 10001 "$T/all.jsonl"; sed -n '20002,25001p' "$T/all.jsonl"; } | cmp -s - "$T/out"
check $? "every row of the other table and of the log is there"

echo "# a damaged data block"
fresh block
size=$(stat -c %s "$D/$TB")
printf 'XXXX' | dd of="$D/$TB" bs=1 seek=$((size / 3)) conv=notrunc 2>/dev/null
run -d "$D" check
status_is 1 "check finds it"
repaired "damaged block"
repair_says "$TB: the data block at offset" "repair names the damaged block"
kept=$(sed -n 's/.*: \([0-9]*\) of its 10000 entries salvaged into.*/\1/p' "$T/repair.out")
test -n "$kept" && test "$kept" -gt 9000 && test "$kept" -lt 10000
check $? "it salvages the other blocks of the table ($kept of 10000 entries)"
test -f "$D/lost/$TB"
check $? "the damaged table is kept in lost/"
run -d "$D" export
# every exported line is one of the originals, in order, and only the block's rows are missing
test "$(grep -c '"row"' "$T/out")" -eq $((25000 - 10000 + kept))
check $? "the export has every row but those of the damaged block"
comm -23 "$T/all.jsonl" "$T/out" >"$T/gone"   # both in row order (LC_ALL=C)
first=$(head -n 1 "$T/gone" | sed 's/.*"row":"r\([0-9]*\)".*/\1/')
last=$(tail -n 1 "$T/gone" | sed 's/.*"row":"r\([0-9]*\)".*/\1/')
test "$(wc -l <"$T/gone")" -eq $((10000 - kept)) &&
	test $(($(expr "$last" + 0) - $(expr "$first" + 0) + 1)) -eq $((10000 - kept))
check $? "the rows lost are one run ($first to $last)"
# the report gives the block's range from the index: from the previous block's
# separator to its own (each >= the last key of its block, maybe shortened)
range=$(grep 'is damaged: its entries' "$T/repair.out" | sed 's/.*(keys \(.*\)) are dropped.*/\1/')
lo=$(printf '%s\n' "$range" | sed 's/^"[^"]*\(r[0-9]*\).* to .*/\1/')
hi=$(printf '%s\n' "$range" | sed 's/.* to "[^"]*\(r[0-9]*\).*/\1/')
awk -v lo="$lo" -v hi="$hi" -v f="r$first" -v l="r$last" \
	'BEGIN { exit !(lo "" < f "" && hi "" >= l "") }'
check $? "the reported range ($lo to $hi) covers them"

echo "# CURRENT missing"
fresh nocurrent
rm "$D/CURRENT"
run -d "$D" check
status_is 1 "check finds it"
repaired "missing CURRENT"
repair_says "CURRENT is missing" "repair says so"
repair_says "nothing was dropped" "and that nothing was dropped"
exports 1 25001 "every row is there"

echo "# a damaged manifest"
fresh manifest
m=$(cd "$D" && ls | grep '^MANIFEST-')
printf 'XX' | dd of="$D/$m" bs=1 seek=20 conv=notrunc 2>/dev/null
run -d "$D" check
status_is 1 "check finds it"
repaired "damaged manifest"
repair_says "$m is damaged" "repair names the manifest"
test -f "$D/lost/$m"
check $? "the damaged manifest is kept in lost/"
exports 1 25001 "every row is there (the tables are found without it)"

echo "# a repair of a sound database changes no data"
fresh sound
repaired "sound database"
repair_says "nothing was dropped" "repair says nothing was dropped"
test ! -e "$D/lost"
check $? "and makes no lost/ folder"
exports 1 25001 "every row is there"

done_testing
