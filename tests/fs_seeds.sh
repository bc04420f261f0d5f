#!/bin/sh
# fs_seeds.sh -- the seeds' scenarios on a real mount, typed as a user would:
# the aircraft and webtable tables loaded with smolctl and then read and
# extended with ls, cat, echo, mkdir and setfattr; the buses table and a
# sensor series built entirely through the mount (mkdir of the table, its
# family declared in .families/, cells written with echo).
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 78

run "$SMOLCTL" -d "$DATADIR" import --create "$S/examples/aircraft.jsonl"
check "$status" "smolctl import of examples/aircraft.jsonl before mounting"
run "$SMOLCTL" -d "$DATADIR" import --create "$S/examples/webtable.jsonl"
check "$status" "smolctl import of examples/webtable.jsonl before mounting"
fs_mount
cd "$MNT" || exit 1

# ---------------------------------------------------------------- aircraft
run ls
out_is "ls of the mount lists the tables" <<'EOF'
aircraft
webtable
EOF
run ls aircraft
out_is "ls aircraft lists the row keys" <<'EOF'
flight#TF-FIR#2023-12-31#FI204
flight#TF-FIR#2024-01-25#FI318
flight#TF-FIR#2024-01-26#FI319
flight#TF-FIR#2024-02-01#FI450
plane#TF-FIR
EOF
run ls -U aircraft
out_is "ls -U aircraft (the daemon's own order) is key order" <<'EOF'
flight#TF-FIR#2023-12-31#FI204
flight#TF-FIR#2024-01-25#FI318
flight#TF-FIR#2024-01-26#FI319
flight#TF-FIR#2024-02-01#FI450
plane#TF-FIR
EOF
run ls -a aircraft
out_has ".families" "ls -a aircraft shows .families"
run ls aircraft/.families
out_is "ls aircraft/.families lists the declared families" <<'EOF'
flight
meta
EOF
run cat aircraft/.families/meta/type aircraft/.families/meta/max_versions \
	aircraft/.families/meta/ttl aircraft/.families/meta/locality_group
out_is "cat of .families/meta/{type,max_versions,ttl,locality_group}" <<'EOF'
string
0
0
default
EOF
run ls 'aircraft/.prefix/plane#'
out_is "ls aircraft/.prefix/plane# lists the plane rows only" <<'EOF'
plane#TF-FIR
EOF
run ls 'aircraft/.prefix/flight#TF-FIR#2024-01-'
out_is "ls aircraft/.prefix/flight#TF-FIR#2024-01- lists January 2024's flights" <<'EOF'
flight#TF-FIR#2024-01-25#FI318
flight#TF-FIR#2024-01-26#FI319
EOF
run ls aircraft/.prefix
out_is ".prefix itself lists nothing" </dev/null
run ls 'aircraft/plane#TF-FIR'
out_is "ls of a row lists its families" <<'EOF'
meta
EOF
run ls 'aircraft/plane#TF-FIR/meta'
out_is "ls of a family lists its qualifiers" <<'EOF'
airline
miles
model
EOF
file_is 'aircraft/plane#TF-FIR/meta/airline' "cat of a string cell: its text and a newline" <<'EOF'
Icelandair
EOF
file_is 'aircraft/plane#TF-FIR/meta/miles' "cat of an i64 cell: its decimal text and a newline" <<'EOF'
51000000
EOF
run stat -c '%s %Y' 'aircraft/plane#TF-FIR/meta/miles'
out_is "stat of the i64 cell: size 9 (what cat prints), mtime the version's timestamp" <<'EOF'
9 1706785200
EOF
file_is 'aircraft/flight#TF-FIR#2024-01-25#FI318/flight/route' "cat of a flight's route" <<'EOF'
KEF-OSL
EOF
file_is 'aircraft/.prefix/plane#/plane#TF-FIR/meta/model' "a cell read through .prefix/plane#/" <<'EOF'
A321neo
EOF
sh_run 'cat aircraft/*/meta/model'
out_is "cat aircraft/*/meta/model reads the one model" <<'EOF'
A321neo
EOF

# a second plane, typed by hand
run mkdir -p 'aircraft/plane#TF-ABC/meta'
succeeds "mkdir -p of a new row and its family"
sh_run "echo B737-800 > 'aircraft/plane#TF-ABC/meta/model' &&
	echo Loftleidir > 'aircraft/plane#TF-ABC/meta/airline' &&
	echo 1200 > 'aircraft/plane#TF-ABC/meta/miles'"
succeeds "echo of three cells into the new row"
run setfattr -n user.smolfs.type -v i64 'aircraft/plane#TF-ABC/meta/miles'
succeeds "setfattr user.smolfs.type i64 on the string cell 1200"
type_is 'aircraft/plane#TF-ABC/meta/miles' "getfattr shows the new type" <<'EOF'
i64
EOF
file_is 'aircraft/plane#TF-ABC/meta/miles' "the converted cell reads 1200" <<'EOF'
1200
EOF
sh_run 'cat aircraft/*/meta/model'
out_is "cat aircraft/*/meta/model reads both models, in row order" <<'EOF'
B737-800
A321neo
EOF
run ls 'aircraft/.prefix/plane#'
out_is "ls aircraft/.prefix/plane# lists both planes" <<'EOF'
plane#TF-ABC
plane#TF-FIR
EOF
run mkdir -p 'aircraft/flight#TF-FIR#2024-01-27#FI320/flight'
succeeds "mkdir -p of a new flight row"
sh_run "echo KEF-CPH > 'aircraft/flight#TF-FIR#2024-01-27#FI320/flight/route'"
succeeds "echo of its route"
run ls 'aircraft/.prefix/flight#TF-FIR#2024-01-'
out_is "the new flight shows in the January prefix" <<'EOF'
flight#TF-FIR#2024-01-25#FI318
flight#TF-FIR#2024-01-26#FI319
flight#TF-FIR#2024-01-27#FI320
EOF
run ls aircraft
out_is "ls aircraft lists the new rows in key order" <<'EOF'
flight#TF-FIR#2023-12-31#FI204
flight#TF-FIR#2024-01-25#FI318
flight#TF-FIR#2024-01-26#FI319
flight#TF-FIR#2024-01-27#FI320
flight#TF-FIR#2024-02-01#FI450
plane#TF-ABC
plane#TF-FIR
EOF

# ---------------------------------------------------------------- webtable
run ls webtable
out_is "ls webtable: row keys with '/' escaped as %2F" <<'EOF'
com.cnn.www
com.github%2F
com.github%2Fabout
org.example%2F
EOF
run ls webtable/.prefix/com.github%2F
out_is "ls webtable/.prefix/com.github%2F: the escaped prefix finds both github rows" <<'EOF'
com.github%2F
com.github%2Fabout
EOF
run ls webtable/com.github%2Fabout
out_is "ls webtable/com.github%2Fabout lists its families" <<'EOF'
contents
language
EOF
# the seeds' contents cells have the empty qualifier: find its file name
Q=$(ls webtable/com.github%2Fabout/contents 2>/dev/null | grep -v @)
if [ "$Q" = "%" ]; then
	ok "the empty qualifier is written % (a lone percent sign)"
else
	not_ok "the empty qualifier is written % (a lone percent sign)"
	ls -la webtable/com.github%2Fabout/contents 2>&1 | sed 's/^/#   /'
	Q=missing
fi
run ls webtable/com.github%2Fabout/contents
out_is "ls of contents: the newest version and the older one as q@ts" <<EOF
$Q
$Q@1700000005000000
EOF
file_is "webtable/com.github%2Fabout/contents/$Q" "cat of contents: the newest version" <<'EOF'
<html>about v2
EOF
file_is "webtable/com.github%2Fabout/contents/$Q@1700000005000000" "cat of q@ts: the older version" <<'EOF'
<html>about v1
EOF
run stat -c %Y "webtable/com.github%2Fabout/contents/$Q@1700000005000000"
out_is "stat of q@ts: mtime is that version's timestamp" <<'EOF'
1700000005
EOF
run cat webtable/.families/contents/max_versions webtable/.families/contents/locality_group
out_is "contents keeps 3 versions in locality group contents" <<'EOF'
3
contents
EOF
run ls webtable/com.cnn.www/contents
out_is "com.cnn.www's contents: three versions" <<EOF
$Q
$Q@1700000003000000
$Q@1700000005000000
EOF
sh_run "echo '<html>cnn t7' > 'webtable/com.cnn.www/contents/$Q'"
succeeds "echo of a fourth version of com.cnn.www's contents"
file_is "webtable/com.cnn.www/contents/$Q" "cat shows the new version" <<'EOF'
<html>cnn t7
EOF
run ls webtable/com.cnn.www/contents
out_is "max_versions 3: the oldest version is gone, the previous newest shows as q@ts" <<EOF
$Q
$Q@1700000005000000
$Q@1700000006000000
EOF
file_is "webtable/com.cnn.www/contents/$Q@1700000006000000" "the previous newest reads back by name" <<'EOF'
<html>cnn t6
EOF
run cat "webtable/com.cnn.www/contents/$Q@1700000003000000"
fails "the version beyond max_versions can no longer be read by name"
run ls webtable/com.cnn.www/anchor
out_is "anchors are qualifiers: ls of the anchor family" <<'EOF'
cnnsi.com
my.look.ca
EOF
sh_run "echo 'CNN Money' > webtable/com.cnn.www/anchor/money.cnn.com"
succeeds "echo of a new anchor"
sh_run 'cat webtable/com.cnn.www/anchor/*'
out_is "cat of every anchor" <<'EOF'
CNN
CNN Money
CNN.com
EOF
sh_run "echo IS > 'webtable/com.github%2Fabout/language/$Q'"
succeeds "echo of a new language (max_versions 1)"
run ls webtable/com.github%2Fabout/language
out_is "language keeps one version: no q@ts" <<EOF
$Q
EOF
file_is "webtable/com.github%2Fabout/language/$Q" "the language reads the new value" <<'EOF'
IS
EOF

# ---------------------------------------------------------------- buses, by hand
run mkdir buses
succeeds "mkdir buses creates a table"
run mkdir buses/.families/loc
succeeds "mkdir buses/.families/loc declares a family"
sh_run 'echo f64 > buses/.families/loc/type && echo 1 > buses/.families/loc/max_versions'
succeeds "echo f64 > type, echo 1 > max_versions"
run cat buses/.families/loc/type buses/.families/loc/max_versions
out_is "the family's schema reads back" <<'EOF'
f64
1
EOF
sh_run 'set -e
	for r in "STC#22#173 37.9838 23.7275" "STC#22#174 37.9755 23.7348" \
		 "STC#221#9 38.0012 23.7001" "STC#23#12 37.9421 23.6467"; do
		set -- $r
		mkdir -p "buses/$1/loc"
		echo "$2" > "buses/$1/loc/lat"
		echo "$3" > "buses/$1/loc/lon"
	done'
succeeds "mkdir -p and echo of the four buses' positions"
run ls buses
out_is "ls buses: key order (STC#22#... before STC#221#...)" <<'EOF'
STC#22#173
STC#22#174
STC#221#9
STC#23#12
EOF
run ls 'buses/.prefix/STC#22#'
out_is "ls buses/.prefix/STC#22# excludes STC#221#9" <<'EOF'
STC#22#173
STC#22#174
EOF
run ls 'buses/.prefix/STC#22'
out_is "ls buses/.prefix/STC#22 includes STC#221#9" <<'EOF'
STC#22#173
STC#22#174
STC#221#9
EOF
sh_run "cat 'buses/.prefix/STC#22#'/*/loc/lat"
out_is "cat of the latitudes through the prefix: f64 in shortest form" <<'EOF'
37.9838
37.9755
EOF
type_is 'buses/STC#23#12/loc/lon' "a cell written into an f64 family has type f64" <<'EOF'
f64
EOF
sh_run "echo ' 37.99000 ' > 'buses/STC#22#173/loc/lat'"
succeeds "echo of a new latitude with surrounding spaces"
file_is 'buses/STC#22#173/loc/lat' "the f64 is stored as a number and shown in shortest form" <<'EOF'
37.99
EOF
run ls 'buses/STC#22#173/loc'
out_is "max_versions 1: no older version is listed" <<'EOF'
lat
lon
EOF

# ---------------------------------------------------------------- a sensor series with a TTL
now=$(date +%s)
old=$(( (now - 7200) * 1000000 ))
recent=$(( (now - 60) * 1000000 ))
run mkdir sensors
succeeds "mkdir sensors"
sh_run 'mkdir sensors/.families/reading && echo f64 > sensors/.families/reading/type &&
	echo 3600 > sensors/.families/reading/ttl'
succeeds "a family reading of f64 with a TTL of one hour"
file_is sensors/.families/reading/ttl "cat ttl" <<'EOF'
3600
EOF
sh_run "mkdir -p 'sensors/temp#kitchen/reading' &&
	echo 21.5 > 'sensors/temp#kitchen/reading/celsius' &&
	echo 20.25 > 'sensors/temp#kitchen/reading/celsius@$recent'"
succeeds "echo of the current reading and of one from a minute ago (q@ts)"
# a reading two hours old is beyond the TTL as soon as it is written
sh_run "echo 18 > 'sensors/temp#kitchen/reading/celsius@$old'"
run ls 'sensors/temp#kitchen/reading'
out_is "ls shows the current and the recent reading, not the expired one" <<EOF
celsius
celsius@$recent
EOF
file_is "sensors/temp#kitchen/reading/celsius@$recent" "the recent reading reads back by name" <<'EOF'
20.25
EOF
run cat "sensors/temp#kitchen/reading/celsius@$old"
fails "the expired reading cannot be read by name"
sh_run 'echo 2 > sensors/.families/reading/ttl'
succeeds "echo 2 > ttl shortens the TTL to two seconds"
sleep 3
run cat 'sensors/temp#kitchen/reading/celsius'
fails "after the TTL the current reading is gone too"
sh_run "ls 'sensors/temp#kitchen/reading' 2>/dev/null | grep -c celsius || true"
out_is "and no version is listed" <<'EOF'
0
EOF

# A name the kernel holds goes when its version expires: nothing invalidates
# it then, so its entry and attributes are given only until that moment
# (the mount's timeout is an hour).  Another family, with a ttl of 2 s from
# the start, so that no ttl change invalidates anything.
sh_run "mkdir sensors/.families/gauge && echo 2 > sensors/.families/gauge/ttl &&
	mkdir -p 'sensors/temp#hall/gauge' && echo 7 > 'sensors/temp#hall/gauge/level' &&
	stat 'sensors/temp#hall/gauge/level' >/dev/null && ls -l 'sensors/temp#hall/gauge' >/dev/null"
succeeds "a cell in a family with a ttl of 2 s, stat'ed and listed (the kernel caches its name)"
sleep 3
run stat -c %s 'sensors/temp#hall/gauge/level'
fails "after 2 s stat finds no cell: the kernel's entry ended with the version"
sh_run "test -e 'sensors/temp#hall/gauge/level' || echo gone"
out_is "and test -e says it is gone" <<'EOF'
gone
EOF

cd / || exit 1
fs_unmount
done_testing
