#!/bin/sh
# ctl_write.sh -- smolctl's writes of one cell or one row (set, delete-version,
# delete-cell, delete-family, delete-row, increment, check-and-set) and the
# time-range and qualifier-prefix filters of get and scan.  Every write is
# read back with smolctl get or export; every refusal must name the table,
# row and column, exit with 1 (2 for usage errors, 3 for a check-and-set
# whose check failed) and leave the database exactly as it was: an export
# before and after must be identical.
# shellcheck source=tests/ctl_lib.sh
. "$(dirname "$0")/ctl_lib.sh"

D=$T/db

# snapshot NAME: export the database to $T/NAME.jsonl
snapshot() {
	"$SMOLCTL" -d "$D" export -o "$T/$1.jsonl" >/dev/null 2>&1
}

# unchanged_since NAME DESCRIPTION: the database exports as it did at snapshot NAME
unchanged_since() {
	"$SMOLCTL" -d "$D" export -o "$T/now.jsonl" >/dev/null 2>&1
	if cmp -s "$T/$1.jsonl" "$T/now.jsonl"; then
		ok "$2"
	else
		not_ok "$2"
		diff "$T/$1.jsonl" "$T/now.jsonl" | sed 's/^/#   /'
	fi
}

# refused TEXT DESCRIPTION: status 1, a message naming TEXT, the database unchanged
# since the snapshot "before"
refused() {
	error_naming "$1" "$2"
	unchanged_since before "$2: the database is unchanged"
}

echo "# the schema"
for cmd in "create-table t" "add-family t n --type i64" "add-family t s" \
	   "add-family t b --type bytes" "add-family t c --type i32" "add-family t w" \
	   "add-family t g --max-versions 1" \
	   "create-table other" "add-family other n --type i64"; do
	# shellcheck disable=SC2086
	run -d "$D" $cmd
	[ "$status" -eq 0 ] || break
done
status_is 0 "tables t and other and their families are declared"

echo "# set"
run -d "$D" set --timestamp 1000 t r1 n:miles 1100
status_is 0 "set an i64 cell with a timestamp"
out_is "set prints nothing" </dev/null
err_empty "... and says nothing"
run -d "$D" get t r1 --json
out_is "the i64 cell reads back with its timestamp and type" <<'EOF'
{"table":"t","row":"r1","cells":[{"family":"n","qualifier":"miles","ts":1000,"type":"i64","value":1100}]}
EOF
run -d "$D" set t r1 n:miles ' 1200
'
status_is 0 "set a number with surrounding whitespace and a newline, at the server's time"
before_us=$(($(date +%s) - 60))000000
run -d "$D" get t r1 --json
if grep -F '"value":1200}' "$T/out" >/dev/null &&
   [ "$(sed 's/.*"ts":\([0-9]*\),"type":"i64","value":1200.*/\1/' "$T/out")" -gt "$before_us" ]; then
	ok "without --timestamp the version has the current time, newest first"
else
	not_ok "without --timestamp the version has the current time, newest first"
	diag_file "$T/out"
fi
run -d "$D" get t r1 --column n:miles --versions 2 --json
out_has '"ts":1000,"type":"i64","value":1100}' "the older version is still there"
run -d "$D" set --timestamp 1000 t r1 n:miles 1150
run -d "$D" get t r1 --column n:miles --since 1000 --before 1001 --json
out_is "set with an existing version's timestamp replaces that version" <<'EOF'
{"table":"t","row":"r1","cells":[{"family":"n","qualifier":"miles","ts":1000,"type":"i64","value":1150}]}
EOF
run -d "$D" set --timestamp 5 --type i32 t r1 n:small -7
status_is 0 "set --type stores another type than the family's"
run -d "$D" get t r1 --column n:small
out_is "the cell has the type given" <<'EOF'
r1
  family  qualifier  timestamp  time (UTC)                   type  value
  n       small              5  1970-01-01T00:00:00.000005Z  i32   -7
EOF
run -d "$D" set --timestamp 5 --type f64 t r1 n:lon -21.9
status_is 0 "set a negative number without --"
run -d "$D" set --timestamp 5 t r0 s:dash -- -x
status_is 0 "set a value beginning with - after --"
run -d "$D" get t r1 --column n:lon --json
out_is "the negative f64 reads back" <<'EOF'
{"table":"t","row":"r1","cells":[{"family":"n","qualifier":"lon","ts":5,"type":"f64","value":-21.9}]}
EOF
run -d "$D" get t r0 --column s:dash --json
out_has '"value":"-x"}' "the value after -- reads back"
run -d "$D" set --timestamp 7 t r1 s:name 'Icelandair \ café'
run -d "$D" set --timestamp 7 t r1 w:flag true
run -d "$D" get t r1 --family s --family w --json
out_is "strings and a boolean (in a string family, as text) read back" <<'EOF'
{"table":"t","row":"r1","cells":[{"family":"s","qualifier":"name","ts":7,"type":"string","value":"Icelandair \\ café"},{"family":"w","qualifier":"flag","ts":7,"type":"string","value":"true"}]}
EOF

run -d "$D" set --timestamp 5 --type i64 t r7 s:num 5
run -d "$D" set --timestamp 6 t r7 s:num 6
run -d "$D" get t r7 --json
out_is "set parses by the cell's own type (i64 in a string family), as a write on a mount does" <<'EOF'
{"table":"t","row":"r7","cells":[{"family":"s","qualifier":"num","ts":6,"type":"i64","value":6},{"family":"s","qualifier":"num","ts":5,"type":"i64","value":5}]}
EOF
snapshot before
run -d "$D" set t r7 s:num six
refused 'table t, row r7, column s:num: "six" is not a valid i64 (the cell'"'"'s type' \
	"a value that is not of the cell's type is refused, though the family's is string"
run -d "$D" set --timestamp 7 --type string t r7 s:num six
status_is 0 "--type string writes a string version over the i64 cell"
run -d "$D" get t r7 --versions 1 --json
out_has '"ts":7,"type":"string","value":"six"}' "... which reads back as a string"

run -d "$D" set t r9 g:q new
run -d "$D" set --timestamp 5 t r9 g:q old
status_is 0 "set --timestamp of a version max_versions hides at once succeeds"
err_has 'table t, row r9, column g:q: warning: the version with timestamp 5 is written, but reads do not show it (family g keeps the newest 1 version)' \
	"... with a warning that reads will not show it"
run -d "$D" get t r9 --json
out_has '"value":"new"}]}' "... and reads show the newer version only"

echo "# set --escaped: arbitrary bytes in the row key, qualifier and value"
run -d "$D" set -e --timestamp 9 t 'k\x00\xff\n' 'b:tab\there\x01' '\x00\x01\xffab\\'
status_is 0 "set --escaped with NUL, 0xff and control bytes"
run -d "$D" export --table t --prefix k
out_has '{"table":"t","row_b64":"awD/Cg==","cells":[{"family":"b","qualifier":"tab\there\u0001","ts":9,"type":"bytes","value_b64":"AAH/YWJc"}]}' \
	"export shows exactly the bytes given with escapes"
run -d "$D" scan t --prefix k
key=$(head -n 1 "$T/out")
qual=$(sed -n 3p "$T/out" | awk '{print $2}')
value=$(sed -n 3p "$T/out" | awk '{print $6}')
if [ "$key" = 'k\x00\xff\n' ] && [ "$qual" = 'tab\there\x01' ] && [ "$value" = '\x00\x01\xffab\\' ]; then
	ok "scan shows the key, qualifier and value in the escapes set read"
else
	not_ok "scan shows the key, qualifier and value in the escapes set read"
	diag_file "$T/out"
fi
run -d "$D" set -e --timestamp 9 t "$key" "b:$qual" "$value"
run -d "$D" scan t --prefix k
status_is 0 "scan's key, qualifier and value pasted back into set -e"
run -d "$D" export --table t --prefix k
out_has '{"table":"t","row_b64":"awD/Cg==","cells":[{"family":"b","qualifier":"tab\there\u0001","ts":9,"type":"bytes","value_b64":"AAH/YWJc"}]}' \
	"... name the same cell and value (one version, as before)"
run -d "$D" set -e t 'bad\q' s:x 1
usage_error "set -e with an unknown escape is a usage error"

echo "# set refused: nothing changes"
snapshot before
run -d "$D" set t r1 n:miles abc
refused 'table t, row r1, column n:miles: "abc" is not a valid i64' \
	"a value that is not an i64 is refused, naming table, row, column and value"
run -d "$D" set --type byte t r1 n:miles 256
refused 'table t, row r1, column n:miles: "256" is not a valid byte' \
	"a value out of the range of --type is refused"
run -d "$D" set -e t 'r\x01' nosuch:q 1
refused 'table t, row r\x01, column nosuch:q: table t has no column family nosuch' \
	"an undeclared family is refused, the row key escaped as the output shows it"
run -d "$D" set t2 r1 n:miles 1
refused 'table t2, row r1, column n:miles: no table t2' "a missing table is refused"
long=$(awk 'BEGIN { while (i++ < 4097) printf "x" }')
run -d "$D" set t "$long" n:miles 1
refused 'row key of 4097 bytes is longer than the limit of 4096 bytes' \
	"a row key over 4 KiB is refused"
err_has '... (4097 bytes), column n:miles' "... and the message shows the start of the key and its length"
longq=$(awk 'BEGIN { while (i++ < 16385) printf "q" }')
run -d "$D" set t r1 "n:$longq" 1
refused 'qualifier of 16385 bytes is longer than the limit of 16384 bytes' \
	"a qualifier over 16 KiB is refused"
run -d "$D" --max-value-size 8 set t r1 s:name 'more than eight bytes'
refused 'table t, row r1, column s:name: a value of 21 bytes is larger than a cell may hold (8 bytes' \
	"a value over --max-value-size is refused"
run -d "$D" get t r1 --column n:miles --versions 1
out_has ' 1200' "the i64 cell still holds its old value"
run -d "$D" set --type int t r1 n:miles 1
usage_error "an unknown --type is a usage error"
run -d "$D" set --timestamp soon t r1 n:miles 1
usage_error "a --timestamp that is not a number is a usage error"
run -d "$D" set t r1 miles 1
usage_error "a column without FAMILY: is a usage error"
run -d "$D" set t r1 n:miles
usage_error "set without VALUE is a usage error"
mkdir "$T/nodb"
run -d "$T/nodb" set t r1 n:miles 1
error_naming "holds no smolfs database" "set on a directory without a database is refused"
test -z "$(ls -A "$T/nodb")"
check $? "... and creates nothing in it"
unchanged_since before "no refused set changed the database"

echo "# delete-version"
run -d "$D" set --timestamp 10 t r2 s:v ten
run -d "$D" set --timestamp 20 t r2 s:v twenty
run -d "$D" set --timestamp 30 t r2 s:v thirty
run -d "$D" delete-version t r2 s:v 20
status_is 0 "delete-version of the middle version"
run -d "$D" get t r2 --json
out_is "the other two versions remain" <<'EOF'
{"table":"t","row":"r2","cells":[{"family":"s","qualifier":"v","ts":30,"type":"string","value":"thirty"},{"family":"s","qualifier":"v","ts":10,"type":"string","value":"ten"}]}
EOF
snapshot before
run -d "$D" delete-version t r2 s:v 20
refused 'table t, row r2, column s:v: no version with timestamp 20' \
	"delete-version of a version that is not there is refused"
run -d "$D" delete-version t r2 s:v twenty
usage_error "delete-version with a TIMESTAMP that is not a number is a usage error"

echo "# delete-cell"
run -d "$D" set --timestamp 10 t r2 s:keep kept
run -d "$D" delete-cell t r2 s:v
status_is 0 "delete-cell of a cell with two versions"
run -d "$D" get t r2 --json
out_is "every version of the cell is gone, the row's other cell remains" <<'EOF'
{"table":"t","row":"r2","cells":[{"family":"s","qualifier":"keep","ts":10,"type":"string","value":"kept"}]}
EOF
snapshot before
run -d "$D" delete-cell t r2 s:v
refused 'table t, row r2, column s:v: no such cell' "delete-cell of an absent cell is refused"
run -d "$D" delete-cell t r2 nosuch:v
refused 'table t, row r2, column nosuch:v: table t has no column family nosuch' \
	"delete-cell in an undeclared family is refused"
run -d "$D" delete-cell nosuch r2 s:v
refused 'table nosuch, row r2, column s:v: no table nosuch' "delete-cell in a missing table is refused"

echo "# delete-family"
run -d "$D" set --timestamp 10 t r3 s:a A
run -d "$D" set --timestamp 10 t r3 s:b B
run -d "$D" set --timestamp 10 t r3 n:x 1
run -d "$D" set --timestamp 10 t r4 s:a other-row
run -d "$D" delete-family t r3 s
status_is 0 "delete-family of a family in one row"
run -d "$D" get t r3 --json
out_is "the family's cells in the row are gone, the other family's remain" <<'EOF'
{"table":"t","row":"r3","cells":[{"family":"n","qualifier":"x","ts":10,"type":"i64","value":1}]}
EOF
run -d "$D" get t r4 --json
out_has '"value":"other-row"' "... and so do the family's cells in other rows"
run -d "$D" export --table t
out_has '"s":{"type":"string"' "... and the family stays declared"
snapshot before
run -d "$D" delete-family t r3 s
refused 'table t, row r3, family s: the row holds no cell of the family' \
	"delete-family of a family the row holds nothing of is refused"
run -d "$D" delete-family t r3 nosuch
refused 'table t, row r3, family nosuch: table t has no column family nosuch' \
	"delete-family of an undeclared family is refused"
run -d "$D" delete-family t r3 s:a
refused 'table t has no column family s:a' "delete-family takes a FAMILY, not a column"

echo "# delete-row"
run -d "$D" set --timestamp 10 other r3 n:x 5
run -d "$D" delete-row t r3
status_is 0 "delete-row"
run -d "$D" get t r3
error_naming 'table t: no row r3' "the row is gone"
run -d "$D" get other r3 --json
out_has '"value":5}' "the row of the same key in another table remains"
run -d "$D" get t r4 --json
out_has '"value":"other-row"' "the next row remains"
run -d "$D" delete-row -e t 'k\x00\xff\n'
status_is 0 "delete-row --escaped of a key with NUL and 0xff"
run -d "$D" scan t --prefix k --count
out_is "the row is gone" <<'EOF'
rows 0
cells 0
bytes 0
EOF
snapshot before
run -d "$D" delete-row t r3
refused 'table t, row r3: no such row' "delete-row of a row with no cell is refused"
run -d "$D" delete-row t r3 extra
usage_error "delete-row with an extra argument is a usage error"

echo "# increment"
run -d "$D" increment t r5 n:count
status_is 0 "increment an absent i64 cell"
out_is "an absent cell counts from 0, by 1 by default" <<'EOF'
1
EOF
run -d "$D" increment t r5 n:count 41
out_is "increment by 41 prints the new value" <<'EOF'
42
EOF
run -d "$D" increment t r5 n:count -50
out_is "a negative delta" <<'EOF'
-8
EOF
run -d "$D" increment t r5 n:count -- -1
run -d "$D" increment t r5 n:count -- +1
out_is "a delta after --, and one with a sign" <<'EOF'
-8
EOF
run -d "$D" get t r5 --column n:count --versions 1 --json
out_has '"type":"i64","value":-8}' "get reads the incremented value back"
run -d "$D" increment t r5 c:small 7
out_is "increment an absent i32 cell" <<'EOF'
7
EOF
run -d "$D" get t r5 --column c:small --json
out_has '"type":"i32","value":7}' "... stored as an i32"
run -d "$D" set --timestamp 10 t r5 n:big 9223372036854775806
snapshot before
run -d "$D" increment t r5 n:big 2
refused 'table t, row r5, column n:big: adding 2 overflows' "an increment that overflows is refused"
run -d "$D" get t r5 --column n:big --json
out_has '"value":9223372036854775806}' "... and the old value survives"
run -d "$D" increment t r5 c:small 2147483647
refused 'table t, row r5, column c:small: adding 2147483647 overflows' \
	"an increment that overflows an i32 is refused"
run -d "$D" set --timestamp 10 t r5 s:text hello
snapshot before
run -d "$D" increment t r5 s:text
refused 'table t, row r5, column s:text: the cell is of type string' "increment of a string cell is refused"
run -d "$D" increment t r5 s:absent
refused "the cell is absent and its family's type is string" \
	"increment of an absent cell of a string family is refused"
run -d "$D" increment t r5 nosuch:x
refused 'table t has no column family nosuch' "increment in an undeclared family is refused"
run -d "$D" increment t r5 n:big 1.5
usage_error "a DELTA that is not an integer is a usage error"
run -d "$D" increment t r5 n:big 9223372036854775808
usage_error "a DELTA beyond i64 is a usage error"

echo "# check-and-set"
run -d "$D" set --timestamp 10 t r6 s:state idle
run -d "$D" check-and-set --expect idle --timestamp 20 t r6 s:state busy
status_is 0 "check-and-set when the newest value is the one expected: status 0"
run -d "$D" get t r6 --column s:state --json
out_is "... and the value is set" <<'EOF'
{"table":"t","row":"r6","cells":[{"family":"s","qualifier":"state","ts":20,"type":"string","value":"busy"},{"family":"s","qualifier":"state","ts":10,"type":"string","value":"idle"}]}
EOF
snapshot before
run -d "$D" check-and-set --expect idle t r6 s:state busy
status_is 3 "check-and-set when the newest value differs: status 3"
err_has 'table t, row r6, column s:state: not set: the newest value is "busy"' \
	"... and the message says what the cell holds"
unchanged_since before "... and nothing was written"
run -d "$D" check-and-set --expect-absent t r6 s:state x
status_is 3 "check-and-set --expect-absent on a present cell: status 3"
unchanged_since before "... and nothing was written"
run -d "$D" check-and-set --expect-absent --timestamp 30 t r6 s:owner me
status_is 0 "check-and-set --expect-absent on an absent cell: status 0"
run -d "$D" get t r6 --column s:owner --json
out_has '"ts":30,"type":"string","value":"me"}' "... and the value is set"
run -d "$D" set --timestamp 10 t r6 n:count 5
run -d "$D" check-and-set --expect 5 --timestamp 20 t r6 n:count -6
status_is 0 "check-and-set compares a number with its text"
run -d "$D" check-and-set --expect -6 --timestamp 30 t r6 n:count 6
status_is 0 "check-and-set --expect takes a negative number"
run -d "$D" set -e --timestamp 10 t r6 'b:raw' '\x00\xff'
run -d "$D" check-and-set -e --expect '\x00\xff' --timestamp 20 t r6 'b:raw' '\x01'
status_is 0 "check-and-set -e compares bytes given with escapes"
run -d "$D" get t r6 --column b:raw --versions 1
out_has '\x01' "... and sets the bytes given with escapes"
snapshot before
run -d "$D" check-and-set --expect 6 t r6 n:count abc
refused 'table t, row r6, column n:count: "abc" is not a valid i64' \
	"check-and-set with a bad value is refused even when the check holds"
run -d "$D" check-and-set --expect 6 t r6 nosuch:count 1
refused 'table t has no column family nosuch' "check-and-set in an undeclared family is refused"
run -d "$D" check-and-set t r6 n:count 1
usage_error "check-and-set without --expect or --expect-absent is a usage error"
run -d "$D" check-and-set --expect 1 --expect-absent t r6 n:count 1
usage_error "--expect and --expect-absent together are a usage error"

echo "# filters on get and scan: time range and qualifier prefix"
for ts in 100 200 300; do
	run -d "$D" set --timestamp $ts other f1 n:abc $ts
	run -d "$D" set --timestamp $ts other f1 n:abd $((ts + 1))
	run -d "$D" set --timestamp $ts other f1 n:xyz $((ts + 2))
done
run -d "$D" set --timestamp 50 other f2 n:abc 50
run -d "$D" set --timestamp 400 other f3 n:xyz 400
run -d "$D" get other f1 --column n:abc --since 200
out_is "get --since: versions at or after it" <<'EOF'
f1
  family  qualifier  timestamp  time (UTC)                   type  value
  n       abc              300  1970-01-01T00:00:00.000300Z  i64   300
  n       abc              200  1970-01-01T00:00:00.000200Z  i64   200
EOF
run -d "$D" get other f1 --column n:abc --before 200
out_is "get --before: versions before it (not at it)" <<'EOF'
f1
  family  qualifier  timestamp  time (UTC)                   type  value
  n       abc              100  1970-01-01T00:00:00.000100Z  i64   100
EOF
run -d "$D" get other f1 --since 150 --before 250 --json
out_is "get --since --before: the versions inside the range, of every column" <<'EOF'
{"table":"other","row":"f1","cells":[{"family":"n","qualifier":"abc","ts":200,"type":"i64","value":200},{"family":"n","qualifier":"abd","ts":200,"type":"i64","value":201},{"family":"n","qualifier":"xyz","ts":200,"type":"i64","value":202}]}
EOF
run -d "$D" get other f1 --since 301
error_naming 'table other: no row f1 with cells matching the options' \
	"get with no version in the range says so"
run -d "$D" get other f1 --qualifier-prefix ab --versions 1 --json
out_is "get --qualifier-prefix: only the columns it begins" <<'EOF'
{"table":"other","row":"f1","cells":[{"family":"n","qualifier":"abc","ts":300,"type":"i64","value":300},{"family":"n","qualifier":"abd","ts":300,"type":"i64","value":301}]}
EOF
run -d "$D" get other f1 --qualifier-prefix abz
error_naming 'table other: no row f1 with cells matching the options' \
	"get --qualifier-prefix that matches no column says so"
run -d "$D" get -e other f1 --qualifier-prefix 'x\x79' --since 300 --json
out_is "get --qualifier-prefix with escapes, with a time range" <<'EOF'
{"table":"other","row":"f1","cells":[{"family":"n","qualifier":"xyz","ts":300,"type":"i64","value":302}]}
EOF
run -d "$D" scan other --since 100 --before 300 --keys-only
usage_error "scan --keys-only with --since is a usage error"
run -d "$D" scan other --since 100 --before 300 --json
out_is "scan --since --before: rows with versions outside the range only are skipped" <<'EOF'
{"table":"other","row":"f1","cells":[{"family":"n","qualifier":"abc","ts":200,"type":"i64","value":200},{"family":"n","qualifier":"abc","ts":100,"type":"i64","value":100},{"family":"n","qualifier":"abd","ts":200,"type":"i64","value":201},{"family":"n","qualifier":"abd","ts":100,"type":"i64","value":101},{"family":"n","qualifier":"xyz","ts":200,"type":"i64","value":202},{"family":"n","qualifier":"xyz","ts":100,"type":"i64","value":102}]}
EOF
run -d "$D" scan other --since 350 --json
out_is "scan --since: only the row with a version at or after it" <<'EOF'
{"table":"other","row":"f3","cells":[{"family":"n","qualifier":"xyz","ts":400,"type":"i64","value":400}]}
EOF
run -d "$D" scan other --qualifier-prefix abc --versions 1 --json
out_is "scan --qualifier-prefix: the rows with such a column, only those columns" <<'EOF'
{"table":"other","row":"f1","cells":[{"family":"n","qualifier":"abc","ts":300,"type":"i64","value":300}]}
{"table":"other","row":"f2","cells":[{"family":"n","qualifier":"abc","ts":50,"type":"i64","value":50}]}
EOF
run -d "$D" scan other --qualifier-prefix nothing
status_is 0 "scan --qualifier-prefix that matches nothing succeeds"
out_is "... and prints nothing" </dev/null
run -d "$D" get other f1 --since 300 --before 200
usage_error "an empty time range is a usage error"
run -d "$D" get other f1 --before 0
usage_error "--before 0 is a usage error"
run -d "$D" get other f1 --column n:abc --qualifier-prefix a
usage_error "--column with --qualifier-prefix is a usage error"

echo "# help"
for cmd in set delete-version delete-cell delete-family delete-row increment check-and-set; do
	run help
	grep "^  $cmd " "$T/out" >/dev/null
	check $? "smolctl help lists $cmd"
	run "$cmd" --help
	if [ "$status" -eq 0 ] && grep "^usage: smolctl \[-d DATADIR\] $cmd " "$T/out" >/dev/null; then
		ok "$cmd --help shows its usage"
	else
		not_ok "$cmd --help shows its usage"
		diag_file "$T/out"
	fi
done
run -d "$D" check
status_is 0 "smolctl check finds the database sound after all the writes"

done_testing
