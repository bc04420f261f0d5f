#!/bin/sh
# ctl_read.sh -- smolctl get and scan on the seeds' tables (aircraft,
# webtable, buses) and a table of awkward bytes: the tables for people, the
# JSON lines, prefixes, ranges, reverse, limits, families, versions, keys
# only, counts, escaped keys; then dropping families and tables that hold
# cells.  The data comes in through smolctl import (tools/tio.c).
# shellcheck source=tests/ctl_lib.sh
. "$(dirname "$0")/ctl_lib.sh"

D=$T/db

echo "# the schema, with smolctl"
for cmd in "create-table aircraft" "add-family aircraft flight" "add-family aircraft meta" \
	   "create-table webtable" "add-family webtable language" "add-family webtable anchor" \
	   "add-family webtable contents --max-versions 3 --locality-group contents" \
	   "create-table buses" "add-family buses loc --type f64 --max-versions 1" \
	   "create-table odd" "add-family odd f --type bytes"; do
	# shellcheck disable=SC2086
	run -d "$D" $cmd
	[ "$status" -eq 0 ] || break
done
status_is 0 "the seeds' tables and families are declared"

# Every row of aircraft and webtable, and a row whose key is not UTF-8 (key,
# 0x00, 0xff, 0x01) with a bytes value (00 01 ff 'a' 'b' '\') and a qualifier
# holding a tab and a newline.
cat >"$T/seeds.jsonl" <<'EOF'
{"table":"aircraft","row":"plane#TF-FIR","cells":[{"family":"meta","qualifier":"model","ts":1706176800000000,"type":"string","value":"A321"},{"family":"meta","qualifier":"airline","ts":1706176800000000,"type":"string","value":"Icelandair"},{"family":"flight","qualifier":"last","ts":1706180400000000,"type":"string","value":"FI318"}]}
{"table":"aircraft","row":"plane#TF-FIS","cells":[{"family":"meta","qualifier":"model","ts":1706176800000000,"type":"string","value":"B757"}]}
{"table":"aircraft","row":"flight#TF-FIR#2023-12-31#FI204","cells":[{"family":"flight","qualifier":"route","ts":1704020400000000,"type":"string","value":"KEF-CPH"}]}
{"table":"aircraft","row":"flight#TF-FIR#2024-01-25#FI318","cells":[{"family":"flight","qualifier":"route","ts":1706180400000000,"type":"string","value":"KEF-OSL"},{"family":"flight","qualifier":"miles","ts":1706180400000000,"type":"i64","value":1100}]}
{"table":"aircraft","row":"flight#TF-FIR#2024-01-26#FI319","cells":[{"family":"flight","qualifier":"route","ts":1706266800000000,"type":"string","value":"OSL-KEF"}]}
{"table":"aircraft","row":"flight#TF-FIR#2024-02-01#FI450","cells":[{"family":"flight","qualifier":"route","ts":1706785200000000,"type":"string","value":"KEF-LHR"}]}
{"table":"aircraft","row":"flight#TF-FIS#2024-01-25#FI500","cells":[{"family":"flight","qualifier":"route","ts":1706180400000000,"type":"string","value":"KEF-JFK"}]}
{"table":"webtable","row":"com.cnn.www","cells":[{"family":"language","qualifier":"","ts":1,"type":"string","value":"EN"},{"family":"anchor","qualifier":"cnnsi.com","ts":9,"type":"string","value":"CNN"},{"family":"anchor","qualifier":"my.look.ca","ts":8,"type":"string","value":"CNN.com"},{"family":"contents","qualifier":"","ts":3,"type":"string","value":"<html>cnn t3"},{"family":"contents","qualifier":"","ts":4,"type":"string","value":"<html>cnn t4"},{"family":"contents","qualifier":"","ts":5,"type":"string","value":"<html>cnn t5"},{"family":"contents","qualifier":"","ts":6,"type":"string","value":"<html>cnn t6"}]}
{"table":"webtable","row":"com.github/about","cells":[{"family":"language","qualifier":"","ts":1,"type":"string","value":"EN"},{"family":"contents","qualifier":"","ts":5,"type":"string","value":"<html>about v1"},{"family":"contents","qualifier":"","ts":7,"type":"string","value":"<html>about v2"}]}
{"table":"webtable","row":"com.github/","cells":[{"family":"contents","qualifier":"","ts":4,"type":"string","value":"<html>home"},{"family":"anchor","qualifier":"news.ycombinator.com","ts":4,"type":"string","value":"GitHub"}]}
{"table":"webtable","row":"com.githubusercontent/raw","cells":[{"family":"language","qualifier":"","ts":1,"type":"string","value":"EN"}]}
{"table":"webtable","row":"org.example/","cells":[{"family":"language","qualifier":"","ts":1,"type":"string","value":"IS"}]}
{"table":"odd","row_b64":"a2V5AP8B","cells":[{"family":"f","qualifier":"tab\tnew\nline","ts":10,"type":"bytes","value_b64":"AAH/YWJc"},{"family":"f","qualifier":"utf8","ts":10,"type":"string","value":"café \\ ok"}]}
EOF
run -d "$D" import "$T/seeds.jsonl"
status_is 0 "import the aircraft, webtable and odd rows"
out_is "import says what it did" <<EOF
imported 13 rows (26 cells) from $T/seeds.jsonl: 13 lines read, 0 rejected
EOF
err_empty "import prints nothing on stderr when it is not a terminal"

# The bus positions in Smoltable's payload (time in nanoseconds), for --table.
{
	printf '{"items":[\n'
	sep=
	for bus in 'STC#2#5' 'STC#22#173' 'STC#22#174' 'STC#22#9' 'STC#221#1' 'STC#23#1' \
		   'STD#22#173'; do
		printf '%s{"row_key":"%s","cells":[' "$sep" "$bus"
		printf '{"column_key":"loc:lat","type":"f64","value":64.1,"time":1000}'
		printf ',{"column_key":"loc:lat","type":"f64","value":64.2,"time":2000}'
		printf ',{"column_key":"loc:lon","type":"f64","value":-21.9,"time":2000}]}\n'
		sep=,
	done
	printf ']}\n'
} >"$T/buses.json"
run -d "$D" import --table buses "$T/buses.json"
status_is 0 "import Smoltable's payload into buses with --table"

echo "# get, for people"
run -d "$D" get aircraft 'plane#TF-FIR'
out_is "get: the row key, then an aligned table of its cells" <<'EOF'
plane#TF-FIR
  family  qualifier         timestamp  time (UTC)                   type    value
  flight  last       1706180400000000  2024-01-25T11:00:00.000000Z  string  FI318
  meta    airline    1706176800000000  2024-01-25T10:00:00.000000Z  string  Icelandair
  meta    model      1706176800000000  2024-01-25T10:00:00.000000Z  string  A321
EOF
run -d "$D" get webtable com.cnn.www
out_is "get: max_versions 3 shows the three newest contents, newest first" <<'EOF'
com.cnn.www
  family    qualifier   timestamp  time (UTC)                   type    value
  anchor    cnnsi.com           9  1970-01-01T00:00:00.000009Z  string  CNN
  anchor    my.look.ca          8  1970-01-01T00:00:00.000008Z  string  CNN.com
  contents                      6  1970-01-01T00:00:00.000006Z  string  <html>cnn t6
  contents                      5  1970-01-01T00:00:00.000005Z  string  <html>cnn t5
  contents                      4  1970-01-01T00:00:00.000004Z  string  <html>cnn t4
  language                      1  1970-01-01T00:00:00.000001Z  string  EN
EOF
run -d "$D" get webtable com.cnn.www --family contents --versions 1
out_is "get --family --versions 1: the newest version of one family" <<'EOF'
com.cnn.www
  family    qualifier  timestamp  time (UTC)                   type    value
  contents                     6  1970-01-01T00:00:00.000006Z  string  <html>cnn t6
EOF
run -d "$D" get webtable com.cnn.www -f anchor -f language
out_has "my.look.ca" "get -f twice: the first family"
out_has "language" "get -f twice: the second family"
grep contents "$T/out" >/dev/null
test $? -ne 0
check $? "get -f twice: not the others"
run -d "$D" get aircraft 'flight#TF-FIR#2024-01-25#FI318' --column flight:miles
out_is "get --column: one column; an i64 value" <<'EOF'
flight#TF-FIR#2024-01-25#FI318
  family  qualifier         timestamp  time (UTC)                   type  value
  flight  miles      1706180400000000  2024-01-25T11:00:00.000000Z  i64   1100
EOF
run -d "$D" get buses 'STC#22#173'
out_is "get: f64 values, and max_versions 1 keeps the latest position" <<'EOF'
STC#22#173
  family  qualifier  timestamp  time (UTC)                   type  value
  loc     lat                2  1970-01-01T00:00:00.000002Z  f64   64.2
  loc     lon                2  1970-01-01T00:00:00.000002Z  f64   -21.9
EOF
run -d "$D" get odd 'key\x00\xff\x01' --escaped
out_is "get --escaped: a key of any bytes; bytes values and odd qualifiers escaped" <<'EOF'
key\x00\xff\x01
  family  qualifier       timestamp  time (UTC)                   type    value
  f       tab\tnew\nline         10  1970-01-01T00:00:00.000010Z  bytes   \x00\x01\xffab\\
  f       utf8                   10  1970-01-01T00:00:00.000010Z  string  café \\ ok
EOF
run -d "$D" get odd 'key\x00\xff\x01' -e --column 'f:tab\tnew\nline'
out_has '\x00\x01\xffab\\' "get -e --column: an escaped qualifier"

echo "# get: errors"
run -d "$D" get aircraft 'plane#TF-XXX'
error_naming "table aircraft: no row plane#TF-XXX" "a missing row: status 1, the message names table and row"
run -d "$D" get nosuch row
error_naming "nosuch" "a missing table is named"
run -d "$D" get aircraft 'plane#TF-FIR' --family engines
error_naming "engines" "an unknown family is named"
run -d "$D" get aircraft 'plane#TF-FIS' --family flight
error_naming "no row plane#TF-FIS with cells of the families asked for" \
	"a row without cells of the family asked for"
run -d "$D" get aircraft 'plane#TF-FIR' --column meta
usage_error "--column without a qualifier"
run -d "$D" get aircraft 'plane#TF-FIR' --column meta:model --family meta
usage_error "--column with --family"
run -d "$D" get aircraft 'x\q' --escaped
usage_error "--escaped with an unknown escape"
run -d "$D" get aircraft 'plane#TF-FIR' --versions x
usage_error "--versions x"

echo "# get and scan --json: lines of the export format"
run -d "$D" get aircraft 'plane#TF-FIR' --json
out_is "get --json: one row line" <<'EOF'
{"table":"aircraft","row":"plane#TF-FIR","cells":[{"family":"flight","qualifier":"last","ts":1706180400000000,"type":"string","value":"FI318"},{"family":"meta","qualifier":"airline","ts":1706176800000000,"type":"string","value":"Icelandair"},{"family":"meta","qualifier":"model","ts":1706176800000000,"type":"string","value":"A321"}]}
EOF
run -d "$D" scan odd --json
out_is "scan --json: base64 for a key that is not UTF-8 and for bytes" <<'EOF'
{"table":"odd","row_b64":"a2V5AP8B","cells":[{"family":"f","qualifier":"tab\tnew\nline","ts":10,"type":"bytes","value_b64":"AAH/YWJc"},{"family":"f","qualifier":"utf8","ts":10,"type":"string","value":"café \\ ok"}]}
EOF
run -d "$D" scan buses --prefix 'STC#22#1' --json
out_is "scan --json: f64 values as JSON numbers" <<'EOF'
{"table":"buses","row":"STC#22#173","cells":[{"family":"loc","qualifier":"lat","ts":2,"type":"f64","value":64.2},{"family":"loc","qualifier":"lon","ts":2,"type":"f64","value":-21.9}]}
{"table":"buses","row":"STC#22#174","cells":[{"family":"loc","qualifier":"lat","ts":2,"type":"f64","value":64.2},{"family":"loc","qualifier":"lon","ts":2,"type":"f64","value":-21.9}]}
EOF
run -d "$D" scan webtable --json
if command -v python3 >/dev/null 2>&1; then
	python3 -c 'import json, sys
for line in sys.stdin:
    json.loads(line)' <"$T/out"
	check $? "every line of scan --json is JSON (python3 reads it)"
elif command -v jq >/dev/null 2>&1; then
	jq -c . <"$T/out" >/dev/null
	check $? "every line of scan --json is JSON (jq reads it)"
else
	ok "every line of scan --json is JSON # SKIP neither python3 nor jq"
fi
test "$(wc -l <"$T/out")" -eq 5
check $? "scan --json: one line per row of webtable"
# the JSON lines are import's input: into a fresh database they give the same rows
run -d "$T/db2" create-table webtable
for f in language anchor; do run -d "$T/db2" add-family webtable $f; done
run -d "$T/db2" add-family webtable contents --locality-group contents
run -d "$D" scan webtable --json
cp "$T/out" "$T/web.jsonl"
run -d "$T/db2" import "$T/web.jsonl"
status_is 0 "scan --json output imports into another database"
run -d "$T/db2" scan webtable --json
cmp -s "$T/out" "$T/web.jsonl"
check $? "and scans back byte for byte"

echo "# scan, for people"
run -d "$D" scan aircraft --prefix 'flight#TF-FIR#2024-01-'
out_is "scan --prefix: the January 2024 flights of TF-FIR, rows apart by a blank line" <<'EOF'
flight#TF-FIR#2024-01-25#FI318
  family  qualifier         timestamp  time (UTC)                   type    value
  flight  miles      1706180400000000  2024-01-25T11:00:00.000000Z  i64     1100
  flight  route      1706180400000000  2024-01-25T11:00:00.000000Z  string  KEF-OSL

flight#TF-FIR#2024-01-26#FI319
  family  qualifier         timestamp  time (UTC)                   type    value
  flight  route      1706266800000000  2024-01-26T11:00:00.000000Z  string  OSL-KEF
EOF
run -d "$D" scan webtable --prefix com.github/ --family anchor --family language
out_is "scan --prefix with two families: not com.githubusercontent" <<'EOF'
com.github/
  family  qualifier             timestamp  time (UTC)                   type    value
  anchor  news.ycombinator.com          4  1970-01-01T00:00:00.000004Z  string  GitHub

com.github/about
  family    qualifier  timestamp  time (UTC)                   type    value
  language                     1  1970-01-01T00:00:00.000001Z  string  EN
EOF
run -d "$D" scan webtable --prefix com.github --keys-only
out_is "scan --keys-only: with no slash the prefix takes com.githubusercontent too" <<'EOF'
com.github/
com.github/about
com.githubusercontent/raw
EOF
run -d "$D" scan buses -p 'STC#22#' -k
out_is "scan -p -k: route 22's buses only (not 2, 221 or 23)" <<'EOF'
STC#22#173
STC#22#174
STC#22#9
EOF
run -d "$D" scan buses -p 'STC#22#' -k --reverse --limit 2
out_is "scan --reverse --limit 2" <<'EOF'
STC#22#9
STC#22#174
EOF
run -d "$D" scan buses --start 'STC#22#174' --end 'STC#23' -k
out_is "scan --start (inclusive) --end (exclusive)" <<'EOF'
STC#22#174
STC#22#9
STC#221#1
EOF
run -d "$D" scan webtable --family contents --versions 1 --limit 1
out_is "scan --family --versions 1 --limit 1" <<'EOF'
com.cnn.www
  family    qualifier  timestamp  time (UTC)                   type    value
  contents                     6  1970-01-01T00:00:00.000006Z  string  <html>cnn t6
EOF
run -d "$D" scan odd -k
out_is "scan -k shows a key escaped" <<'EOF'
key\x00\xff\x01
EOF
run -d "$D" get odd "$(cat "$T/out")" -e --column f:utf8
out_has "café" "the escaped key scan prints names the row for get -e"
run -d "$D" scan aircraft --prefix nothing-here
status_is 0 "a scan that finds nothing succeeds"
out_is "and prints nothing" </dev/null

echo "# scan --count"
run -d "$D" scan aircraft --count
head -2 "$T/out" >"$T/out1"
bytes=$(sed -n 's/^bytes //p' "$T/out")
mv "$T/out1" "$T/out"
out_is "scan --count: rows and cells" <<'EOF'
rows 7
cells 10
EOF
test "${bytes:-0}" -gt 0
check $? "scan --count: the kv bytes read ($bytes)"
run -d "$D" scan aircraft --count --json --prefix plane
sed 's/"bytes":[0-9][0-9]*/"bytes":N/' "$T/out" >"$T/out1" && mv "$T/out1" "$T/out"
out_is "scan --count --json" <<'EOF'
{"rows":2,"cells":4,"bytes":N}
EOF

echo "# scan: errors"
run -d "$D" scan nosuch
error_naming "nosuch" "a missing table is named"
run -d "$D" scan aircraft --family engines
error_naming "engines" "an unknown family is named"
run -d "$D" scan aircraft --limit -3
usage_error "--limit -3"
run -d "$D" scan aircraft --keys-only --family meta
usage_error "--keys-only with --family"
run -d "$D" scan aircraft extra
usage_error "scan with an extra argument"

echo "# describe with cells, and dropping what holds cells"
run -d "$D" describe webtable --scan
out_has "contents                3          6" \
	"describe --scan counts the contents group's rows and visible versions"
run -d "$D" alter-family webtable anchor --locality-group elsewhere
error_naming "anchor" "moving a family that holds cells to another group fails naming it"
run -d "$D" drop-family aircraft meta
error_naming "meta" "drop-family of a family with cells fails naming it"
err_has "--force" "and says how to drop it anyway"
run -d "$D" get aircraft 'plane#TF-FIS'
out_has "B757" "nothing was dropped"
run -d "$D" drop-family aircraft meta --force
status_is 0 "drop-family --force"
run -d "$D" get aircraft 'plane#TF-FIS'
error_naming "plane#TF-FIS" "the family's cells are gone at once"
run -d "$D" drop-table aircraft
error_naming "aircraft" "drop-table of a table with cells fails naming it"
run -d "$D" drop-table aircraft --force
status_is 0 "drop-table --force"
run -d "$D" list-tables
out_is "the table is gone" <<'EOF'
buses
odd
webtable
EOF

done_testing
