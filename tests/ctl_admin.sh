#!/bin/sh
# ctl_admin.sh -- smolctl's housekeeping and bulk commands: check (a clean
# database, then one with a flipped byte in an SSTable), compact, stats,
# export and import (round trip, errors with their line numbers, dry run,
# --create, standard input), the lock held by another smolctl, and the
# progress line that only a terminal gets.
# shellcheck source=tests/ctl_lib.sh
. "$(dirname "$0")/ctl_lib.sh"

D=$T/db

# A small database: webtable with a locality group, and aircraft.
cat >"$T/seed.jsonl" <<'EOF'
{"table":"aircraft","families":{"flight":{"type":"string","max_versions":0,"ttl":0,"locality_group":"default","compression":1},"meta":{"type":"string","max_versions":0,"ttl":0,"locality_group":"default","compression":1}}}
{"table":"aircraft","row":"flight#TF-FIR#2024-01-25#FI318","cells":[{"family":"flight","qualifier":"route","ts":1706180400000000,"type":"string","value":"KEF-OSL"}]}
{"table":"aircraft","row":"plane#TF-FIR","cells":[{"family":"meta","qualifier":"model","ts":1706176800000000,"type":"string","value":"A321"}]}
{"table":"webtable","families":{"anchor":{"type":"string","max_versions":0,"ttl":0,"locality_group":"default","compression":1},"contents":{"type":"string","max_versions":3,"ttl":0,"locality_group":"contents","compression":3},"language":{"type":"string","max_versions":0,"ttl":0,"locality_group":"default","compression":1}}}
{"table":"webtable","row":"com.github/","cells":[{"family":"anchor","qualifier":"news.ycombinator.com","ts":4,"type":"string","value":"GitHub"},{"family":"contents","qualifier":"","ts":4,"type":"string","value":"<html>home"}]}
{"table":"webtable","row":"com.github/about","cells":[{"family":"contents","qualifier":"","ts":7,"type":"string","value":"<html>about v2"},{"family":"contents","qualifier":"","ts":5,"type":"string","value":"<html>about v1"},{"family":"language","qualifier":"","ts":1,"type":"string","value":"EN"}]}
{"table":"webtable","row":"com.githubusercontent/raw","cells":[{"family":"language","qualifier":"","ts":1,"type":"string","value":"EN"}]}
EOF

echo "# import --create, export, and the round trip"
run -d "$D" import "$T/seed.jsonl"
error_naming "$D: no such directory" "import without --create wants a database"
test ! -e "$D"
check $? "and creates nothing"
run -d "$D" import --create "$T/seed.jsonl"
status_is 0 "import --create makes the database, the tables and the families"
out_is "it says what it imported" <<EOF
imported 5 rows (8 cells) from $T/seed.jsonl: 7 lines read, 0 rejected
EOF
err_empty "nothing on stderr when stderr is not a terminal"
run -d "$D" export
status_is 0 "export to standard output"
cmp -s "$T/out" "$T/seed.jsonl"
check $? "export gives back exactly the lines imported"
err_empty "export prints nothing on stderr when it is not a terminal"
run -d "$D" export -o "$T/e1.jsonl"
status_is 0 "export -o FILE"
cmp -s "$T/e1.jsonl" "$T/seed.jsonl"
check $? "the file holds the same lines"
test ! -s "$T/out"
check $? "and standard output nothing"
run_in "$T/e1.jsonl" -d "$T/db2" import --create -
status_is 0 "import - reads standard input"
out_has "from standard input" "its summary names standard input"
run -d "$T/db2" export --output "$T/e2.jsonl"
cmp -s "$T/e1.jsonl" "$T/e2.jsonl"
check $? "export -> import -> export: byte-identical"
run -d "$D" export --table webtable --prefix com.github/
out_is "export --table --prefix: the schema line and the rows with the prefix" <<'EOF'
{"table":"webtable","families":{"anchor":{"type":"string","max_versions":0,"ttl":0,"locality_group":"default","compression":1},"contents":{"type":"string","max_versions":3,"ttl":0,"locality_group":"contents","compression":3},"language":{"type":"string","max_versions":0,"ttl":0,"locality_group":"default","compression":1}}}
{"table":"webtable","row":"com.github/","cells":[{"family":"anchor","qualifier":"news.ycombinator.com","ts":4,"type":"string","value":"GitHub"},{"family":"contents","qualifier":"","ts":4,"type":"string","value":"<html>home"}]}
{"table":"webtable","row":"com.github/about","cells":[{"family":"contents","qualifier":"","ts":7,"type":"string","value":"<html>about v2"},{"family":"contents","qualifier":"","ts":5,"type":"string","value":"<html>about v1"},{"family":"language","qualifier":"","ts":1,"type":"string","value":"EN"}]}
EOF
run -d "$D" export --table nosuch
error_naming "nosuch" "export of a missing table names it"
run -d "$D" export -o "$T/no/such/dir/x.jsonl"
error_naming "$T/no/such/dir/x.jsonl" "an output file that cannot be made is named"
run -d "$D" export stray
usage_error "export takes no argument"

echo "# import: bad lines, dry run"
cat >"$T/bad.jsonl" <<'EOF'
{"table":"aircraft","row":"plane#TF-FIS","cells":[{"family":"meta","qualifier":"model","ts":1,"type":"string","value":"B757"}]}
{"table":"aircraft","row":"plane#TF-XXX","cells":[{"family":"meta","qualifier":"model","ts":1,"type":"string","value":"A320"}
{"table":"aircraft","row":"plane#TF-YYY","cells":[{"family":"engines","qualifier":"n","ts":1,"type":"string","value":"2"}]}
{"table":"aircraft","row":"plane#TF-ZZZ","cells":[{"family":"meta","qualifier":"model","ts":1,"type":"string","value":"A330"}]}
EOF
run -d "$D" import --dry-run "$T/bad.jsonl"
status_is 1 "import --dry-run of a file with bad lines: status 1"
err_has "$T/bad.jsonl:2:" "the bad JSON is reported with its file and line"
err_has "$T/bad.jsonl:3:" "the unknown family is reported with its file and line"
out_has "dry run: would import 2 rows" "the dry run counts the good rows"
run -d "$D" get aircraft 'plane#TF-FIS'
error_naming "plane#TF-FIS" "a dry run writes nothing"
run -d "$D" import "$T/bad.jsonl"
status_is 1 "import of a file with bad lines: status 1"
err_has "2 lines rejected" "the summary on stderr counts the rejected lines"
run -d "$D" scan aircraft --prefix plane -k
out_is "the good rows were imported, the bad ones not" <<'EOF'
plane#TF-FIR
plane#TF-FIS
plane#TF-ZZZ
EOF
run -d "$D" import "$T/nosuch.jsonl"
error_naming "$T/nosuch.jsonl" "a missing input file is named"
run -d "$D" import a b
usage_error "import takes one file"
printf '{"items":[{"row_key":"r","cells":[]}]}\n' >"$T/payload.json"
run -d "$D" import "$T/payload.json"
test "$status" -eq 1 && grep "^smolctl: $T/payload.json" "$T/err" >/dev/null
check $? "a Smoltable payload without --table is refused, naming the file"

echo "# --max-value-size"
v2k=$(awk 'BEGIN { for (i = 0; i < 2000; i++) printf "x" }')
printf '{"table":"aircraft","row":"big","cells":[{"family":"meta","qualifier":"note","ts":1,"type":"string","value":"%s"}]}\n' \
	"$v2k" >"$T/big.jsonl"
run -d "$D" --max-value-size 1K import "$T/big.jsonl"
status_is 1 "import --max-value-size 1K of a 2000-byte value: status 1"
err_has "$T/big.jsonl:1:" "the oversized value is reported with its file and line"
err_has "longer than the maximum value size" "and says why"
run -d "$D" get aircraft big
error_naming "big" "nothing of its row was written"
run -d "$D" import "$T/big.jsonl" --max-value-size 4k
status_is 0 "with --max-value-size 4k (among the command's options) it is imported"
run -d "$D" get aircraft big --column meta:note
out_has "$v2k" "and reads back whole"
run -d "$D" --max-value-size 101M list-tables
usage_error "--max-value-size above 100M is a usage error"
run -d "$D" list-tables --max-value-size 12x
usage_error "--max-value-size that is not a size is a usage error"

echo "# stats"
run -d "$D" stats
status_is 0 "stats"
out_has "lg-1      table webtable, locality group contents" "stats names each group's tree"
out_has "block cache hit rate" "stats shows the cache hit rate"
out_has "since this smolctl opened the database" "and says what it counts"
out_has "B/entry     raw bytes   ratio" "stats has raw bytes and a compression ratio per level"
# 3000 rows of one repetitive 200-byte value: zstd packs them well
awk 'BEGIN {
	print "{\"table\":\"z\",\"families\":{\"f\":{\"type\":\"string\",\"max_versions\":0,\"ttl\":0,\"locality_group\":\"default\",\"compression\":3}}}"
	v = ""; for (i = 0; i < 20; i++) v = v "abcdefghij"
	for (i = 0; i < 3000; i++)
		printf "{\"table\":\"z\",\"row\":\"r%05d\",\"cells\":[{\"family\":\"f\",\"qualifier\":\"q\",\"ts\":1,\"type\":\"string\",\"value\":\"%s\"}]}\n", i, v
}' >"$T/z.jsonl"
"$SMOLCTL" -d "$T/dbz" import --create "$T/z.jsonl" >/dev/null 2>&1
# stats opens read-only and so flushes nothing: compact puts the log into tables first
"$SMOLCTL" -d "$T/dbz" compact >/dev/null 2>&1
run -d "$T/dbz" stats
# the default tree's line: tree level files bytes entries B/entry raw ratio
awk '$1 == "default" && $2 ~ /^[0-9]+$/ { print $4, $7, $8 }' "$T/out" >"$T/ratio"
read -r zbytes zraw zratio <"$T/ratio"
test "${zraw:-0}" -gt $((3000 * 200)) && test "${zbytes:-0}" -gt 0 &&
	awk -v b="$zbytes" -v r="$zraw" -v q="$zratio" \
		'BEGIN { e = r / b - q; exit !(r / b > 4 && e < 0.01 && e > -0.01) }'
check $? "3000 repetitive values: raw bytes above the values' 600000, ratio raw/file above 4 ($zraw / $zbytes = $zratio)"
run -d "$D" stats --scan
status_is 0 "stats --scan"
out_has "webtable          contents        lg-1" "stats --scan: a line per table and group"
out_has "live/file bytes" "stats --scan compares live bytes with file bytes"
run -d "$D" stats extra
usage_error "stats takes no argument"

echo "# compact"
# four more versions of com.github/'s contents: max_versions 3 keeps the newest 3
cat >"$T/versions.jsonl" <<'EOF'
{"table":"webtable","row":"com.github/","cells":[{"family":"contents","qualifier":"","ts":13,"type":"string","value":"v13"},{"family":"contents","qualifier":"","ts":12,"type":"string","value":"v12"},{"family":"contents","qualifier":"","ts":11,"type":"string","value":"v11"},{"family":"contents","qualifier":"","ts":10,"type":"string","value":"v10"}]}
EOF
run -d "$D" import "$T/versions.jsonl"
status_is 0 "import four more versions into the contents group"
# entries in the files of tree NAME, from stats (tree, level, files, bytes, entries)
tree_entries() {
	"$SMOLCTL" -d "$D" stats | awk -v t="$1" '$1 == t && $2 ~ /^[0-9]+$/ { n += $5 } END { print n + 0 }'
}
entries_before=$(tree_entries lg-1)
run -d "$D" compact
status_is 0 "compact"
out_has "compacted every tree of $D: the default tree and 1 locality group" \
	"compact says what it compacted"
out_has "tree lg-1 (table webtable, locality group contents)" "and names each group's tree"
# the lines after "tree lg-1 ...": before and after
sed -n '/^tree lg-1 /,/^tree /s/^  after : //p' "$T/out" >"$T/after"
grep "level 0" "$T/after" >/dev/null
test $? -ne 0 && grep "level 1: 1" "$T/after" >/dev/null
check $? "after compact the group's tree is one file, at level 1"
sed -n '/^tree default/,/^tree /s/^  after : //p' "$T/out" >"$T/after"
grep "level 0" "$T/after" >/dev/null
test $? -ne 0 && test -s "$T/after"
check $? "and the default tree has no level-0 file"
entries_after=$(tree_entries lg-1)
test "$entries_after" -eq 5
check $? "the group's tree keeps only the 5 visible versions (was $entries_before, now $entries_after)"
run -d "$D" get webtable com.github/ --column contents: --versions 9 --json
out_has '"value":"v13"},{"family":"contents","qualifier":"","ts":12,"type":"string","value":"v12"},{"family":"contents","qualifier":"","ts":11,"type":"string","value":"v11"}]}' \
	"the three newest versions are still read"
run -d "$D" compact aircraft
status_is 0 "compact TABLE"
out_has "compacted table aircraft of $D: its range of the default tree and 0 locality groups" \
	"compact TABLE names the table"
run -d "$D" compact webtable
out_has "tree lg-1 (table webtable, locality group contents)" \
	"compact TABLE compacts the table's own groups too"
run -d "$D" compact nosuch
error_naming "nosuch" "compact of a missing table names it"
run -d "$D" compact a b
usage_error "compact takes one table at most"
run -d "$D" describe webtable
out_has "default       1 " "describe: the default tree's files, at level 1 after compact"

echo "# check"
run -d "$D" check
status_is 0 "check of a sound database: status 0"
out_has "$D: no problems found" "check says it found nothing"
run -d "$T/nodb" check
error_naming "$T/nodb: no such directory" "check of a missing directory"

echo "# the lock: another smolctl holds the database"
if [ -d /proc/self/fd ] && mkfifo "$T/fifo" 2>/dev/null; then
	"$SMOLCTL" -d "$D" import "$T/fifo" >"$T/holder.out" 2>"$T/holder.err" &
	holder=$!
	exec 3>"$T/fifo"
	# wait until the import holds DATADIR/LOCK open (it then waits for input)
	i=0
	while [ $i -lt 100 ]; do
		for fd in /proc/"$holder"/fd/*; do
			[ "$(readlink "$fd" 2>/dev/null)" = "$D/LOCK" ] && break 2
		done
		sleep 0.1
		i=$((i + 1))
	done
	run -d "$D" create-table newtable
	err_is "a second smolctl is told the database is in use, and that nothing changed" <<EOF
smolctl: $D is in use by another process (a mounted smolfs or another smolctl); nothing was changed
EOF
	status_is 1 "with status 1"
	run -d "$D" check
	error_naming "$D is in use by another process" "check says so too"
	run -d "$D" scan aircraft -k
	error_naming "$D is in use by another process" "and so do reads"
	echo '{"table":"aircraft","row":"plane#TF-LCK","cells":[{"family":"meta","qualifier":"model","ts":1,"type":"string","value":"Q400"}]}' >&3
	exec 3>&-
	wait $holder
	holder_status=$?
	test "$holder_status" -eq 0
	check $? "the holding import finishes once its input ends"
	run -d "$D" list-tables
	out_is "the refused create-table changed nothing" <<'EOF'
aircraft
webtable
EOF
	run -d "$D" get aircraft 'plane#TF-LCK' --column meta:model
	out_has "Q400" "the holder's import was written"
else
	ok "the lock # SKIP no /proc or no mkfifo"
fi

echo "# progress on a terminal only"
if command -v script >/dev/null 2>&1 &&
   script -qec true /dev/null </dev/null >/dev/null 2>&1; then
	script -qec "'$SMOLCTL' -d '$T/db3' import --create '$T/seed.jsonl'" /dev/null \
		</dev/null >"$T/tty.out" 2>&1
	grep -F "100%" "$T/tty.out" >/dev/null
	check $? "import on a terminal draws a progress bar"
	script -qec "'$SMOLCTL' -d '$D' export -o '$T/e3.jsonl'" /dev/null \
		</dev/null >"$T/tty.out" 2>&1
	grep "export: [0-9]* rows, [0-9]* cells, [0-9]* bytes" "$T/tty.out" >/dev/null
	check $? "export -o on a terminal ends with what it wrote"
	script -qec "'$SMOLCTL' -d '$D' export" /dev/null </dev/null >"$T/tty.out" 2>&1
	grep -F "export: " "$T/tty.out" >/dev/null
	test $? -ne 0
	check $? "export to the terminal itself draws no progress over its output"
else
	ok "progress on a terminal # SKIP no script(1) to make one"
fi

echo "# check finds a damaged SSTable"
cp -R "$D" "$T/damaged"
sst=$(ls -S "$T/damaged"/*.sst 2>/dev/null | head -1)
if [ -n "$sst" ]; then
	# one byte in the first data block, which every SSTable has at offset 0
	byte=$(od -An -tu1 -j 10 -N 1 "$sst" | tr -d ' ')
	printf "$(printf '\\%03o' $(((byte + 1) % 256)))" |
		dd of="$sst" bs=1 seek=10 conv=notrunc 2>/dev/null
	run -d "$T/damaged" check
	status_is 1 "check of a damaged database: status 1"
	grep "^$sst at [0-9][0-9]*: " "$T/out" >/dev/null
	check $? "the problem is reported as FILE at OFFSET: MESSAGE, naming the file"
	err_has "$T/damaged: damaged: " "stderr sums it up, naming the directory"
	run -d "$T/damaged" list-tables
	test "$status" -eq 1 && grep "^smolctl: $T/damaged" "$T/err" >/dev/null
	check $? "other commands fail naming the directory"
	run -d "$D" check
	status_is 0 "the original is still sound"
else
	not_ok "an SSTable to damage (none in $D after compact)"
fi

done_testing
