#!/bin/sh
# ctl_readonly.sh -- smolctl's read commands (list-tables, describe, get,
# scan, stats, export, check, import --dry-run) change nothing in the
# database directory.  The directory is made read-only with chmod -R a-w,
# but that stops no write when the tests run as root, so after every
# command the directory is compared with a listing taken before: every
# name with its size, mode, mtime (to the nanosecond) and a checksum of its
# bytes.  The database tempts every write an open for writing would do: a
# log not yet in tables, a second tree (a locality group), stray files.
# shellcheck source=tests/ctl_lib.sh
. "$(dirname "$0")/ctl_lib.sh"

D=$T/db

cat >"$T/seed.jsonl" <<'EOF'
{"table":"webtable","families":{"anchor":{"type":"string","max_versions":0,"ttl":0,"locality_group":"default","compression":1},"contents":{"type":"string","max_versions":3,"ttl":0,"locality_group":"contents","compression":3}}}
{"table":"webtable","row":"com.github/","cells":[{"family":"anchor","qualifier":"news.ycombinator.com","ts":4,"type":"string","value":"GitHub"},{"family":"contents","qualifier":"","ts":4,"type":"string","value":"<html>home"}]}
{"table":"webtable","row":"com.github/about","cells":[{"family":"contents","qualifier":"","ts":7,"type":"string","value":"<html>about v2"},{"family":"contents","qualifier":"","ts":5,"type":"string","value":"<html>about v1"}]}
EOF
cat >"$T/more.jsonl" <<'EOF'
{"table":"webtable","row":"org.example/","cells":[{"family":"anchor","qualifier":"example.net","ts":9,"type":"string","value":"Example"}]}
EOF

# listing DIR: one line per name (sorted): size, mode, mtime, and the bytes' checksum
listing() {
	find "$1" | sort | while IFS= read -r f; do
		stat -c '%n %F %s %a %y' "$f"
		if [ -f "$f" ]; then cksum <"$f"; fi
	done
}

"$SMOLCTL" -d "$D" import --create "$T/seed.jsonl" >/dev/null 2>&1 &&
	"$SMOLCTL" -d "$D" compact >/dev/null 2>&1 &&
	"$SMOLCTL" -d "$D" import "$T/more.jsonl" >/dev/null 2>&1
check $? "a database with tables, a locality group and a log not yet in tables"
# strays an open for writing would delete: a table no manifest names, a CURRENT.tmp
sst=$(cd "$D" && ls ./*.sst | head -n 1)
cp "$D/$sst" "$D/999990.sst" && printf 'MANIFEST-000001\n' >"$D/CURRENT.tmp"
check $? "stray files placed"
chmod -R a-w "$D"
listing "$D" >"$T/before"

# unchanged DESCRIPTION: the directory is as it was before
unchanged() {
	listing "$D" >"$T/after"
	if cmp -s "$T/before" "$T/after"; then
		ok "$1"
	else
		not_ok "$1"
		diff "$T/before" "$T/after" | sed 's/^/#   /'
	fi
}

run -d "$D" list-tables
status_is 0 "list-tables works on a read-only directory"
out_has "webtable" "and lists the table"
unchanged "list-tables changed nothing"

run -d "$D" describe webtable
status_is 0 "describe works"
unchanged "describe changed nothing"
run -d "$D" describe --scan webtable
status_is 0 "describe --scan works"
unchanged "describe --scan changed nothing"

run -d "$D" get webtable org.example/
status_is 0 "get works"
out_has "Example" "get finds the row that is only in the log"
unchanged "get changed nothing"

run -d "$D" scan webtable
status_is 0 "scan works"
out_has "com.github/about" "scan shows the rows in tables"
out_has "org.example/" "and the row in the log"
unchanged "scan changed nothing"

run -d "$D" stats
status_is 0 "stats works"
unchanged "stats changed nothing"
run -d "$D" stats --scan
status_is 0 "stats --scan works"
unchanged "stats --scan changed nothing"

run -d "$D" export
status_is 0 "export to standard output works"
test "$(grep -c '"row"' "$T/out")" -eq 3
check $? "export writes the three rows"
unchanged "export changed nothing"
run -d "$D" export -o "$T/backup.jsonl"
status_is 0 "export -o FILE (outside the database) works"
unchanged "export -o changed nothing in the database"

run -d "$D" import --dry-run "$T/more.jsonl"
status_is 0 "import --dry-run works"
unchanged "import --dry-run changed nothing"

run -d "$D" check
status_is 0 "check finds no problem"
out_has "$D/999990.sst: stray file, not part of the database" "check reports the stray table"
out_has "$D/CURRENT.tmp: stray file" "and the stray CURRENT.tmp"
out_has "2 stray files left as they are" "and says it left them"
unchanged "check changed nothing, and deleted no stray file"

# an open for writing is what deletes the strays (and flushes the log)
chmod -R u+w "$D"
run -d "$D" compact
status_is 0 "compact (a writer) works once the directory is writable"
test ! -e "$D/999990.sst" && test ! -e "$D/CURRENT.tmp"
check $? "the writer deleted the strays that check only reported"
run -d "$D" check
status_is 0 "check is clean afterwards"
if grep -F "stray file" "$T/out" >/dev/null; then
	not_ok "and reports no stray file"
else
	ok "and reports no stray file"
fi

done_testing
