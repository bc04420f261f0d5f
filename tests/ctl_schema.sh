#!/bin/sh
# ctl_schema.sh -- smolctl's help and usage errors, and the schema commands:
# create-table, list-tables, add-family, alter-family, drop-family,
# drop-table and the settings part of describe, with every error naming what
# it concerns.
# shellcheck source=tests/ctl_lib.sh
. "$(dirname "$0")/ctl_lib.sh"

D=$T/db

echo "# help"
run help
status_is 0 "smolctl help exits 0"
for c in create-table drop-table list-tables add-family alter-family drop-family describe \
	 get scan check compact stats export import help; do
	grep "^  $c " "$T/out" >/dev/null || missing="$missing $c"
done
test -z "$missing"
check $? "smolctl help lists every command${missing:+ (missing:$missing)}"
run --help
status_is 0 "smolctl --help exits 0"
for c in create-table drop-table list-tables add-family alter-family drop-family describe \
	 get scan check compact stats export import; do
	run "$c" --help
	if [ "$status" -eq 0 ] && grep "^usage: smolctl \[-d DATADIR\] $c" "$T/out" >/dev/null; then
		cp "$T/out" "$T/help1"
		run help "$c"
		cmp -s "$T/out" "$T/help1"
		check $? "$c --help prints its usage, exits 0, and equals smolctl help $c"
	else
		status_is 0 "$c --help prints its usage and exits 0"
	fi
done
run add-family --help
out_has "--max-versions N" "add-family --help names every option"
run --version
out_has "smolctl (smolfs)" "--version"

echo "# usage errors: status 2, before the database is opened"
run
usage_error "no command"
run frobnicate
test "$status" -eq 2 && grep -F "unknown command frobnicate" "$T/err" >/dev/null
check $? "an unknown command is a usage error naming it"
run list-tables
usage_error "no DATADIR: neither -d nor SMOLFS_DATADIR"
err_has "SMOLFS_DATADIR" "the message says how to give the directory"
run -d "$D" create-table
usage_error "create-table without TABLE"
err_has "missing TABLE" "the message names the missing argument"
run -d "$D" create-table a b
usage_error "create-table with an extra argument"
run -d "$D" add-family t
usage_error "add-family without FAMILY"
run -d "$D" list-tables extra
usage_error "list-tables takes no argument"
run -d "$D" list-tables --bogus
usage_error "an unknown long option"
err_has "--bogus" "the message names the option"
run -d "$D" drop-table -z t
usage_error "an unknown short option"
run -d "$D" add-family t f --type
usage_error "an option without its value"
run -d "$D" add-family t f --type text
usage_error "--type text: not a type"
err_has "--type text" "the message names the bad value"
run -d "$D" add-family t f --max-versions -1
usage_error "--max-versions -1"
run -d "$D" add-family t f --max-versions 4294967296
usage_error "--max-versions beyond 32 bits"
run -d "$D" add-family t f --ttl 10y
usage_error "--ttl with an unknown unit"
run -d "$D" add-family t f --compression 23
usage_error "--compression 23: beyond zstd's levels"
run -d "$D" add-family t f --compression fast
usage_error "--compression fast"
run -d "$D" alter-family t f
usage_error "alter-family with nothing to change"
run -d "$D" help frobnicate
usage_error "help for an unknown command"
test ! -e "$D"
check $? "no usage error created the database directory"

echo "# no database"
run -d "$D" list-tables
error_naming "$D: no such directory" "list-tables on a missing directory names it"
mkdir "$D"
run -d "$D" list-tables
error_naming "$D holds no smolfs database" "list-tables on an empty directory says it holds no database"
test -z "$(ls -A "$D")"
check $? "and leaves nothing in the directory"
run -d "$D" describe t
error_naming "$D holds no smolfs database" "so does describe"

echo "# tables"
run -d "$D" create-table aircraft
status_is 0 "create-table makes the database and the table"
test -f "$D/CURRENT"
check $? "the directory now holds a database"
SMOLFS_DATADIR=$D "$SMOLCTL" create-table webtable >"$T/out" 2>"$T/err"
status=$?
status_is 0 "SMOLFS_DATADIR names the directory when -d is not given"
run create-table -d "$D" buses
status_is 0 "-d may follow the command"
run -d "$D" list-tables
out_is "list-tables: the tables in byte order" <<EOF
aircraft
buses
webtable
EOF
run -d "$D" create-table aircraft
error_naming "aircraft" "creating an existing table fails naming it"
run -d "$D" create-table 'bad/name'
error_naming "bad/name" "a bad table name is refused, naming it"
run -d "$D" create-table ..
error_naming ".." "the table name .. is refused"

echo "# families"
run -d "$D" add-family aircraft flight
status_is 0 "add-family with the defaults"
run -d "$D" add-family aircraft meta --type string --max-versions 3 --ttl 2h \
	--compression none
status_is 0 "add-family with settings"
run -d "$D" add-family webtable contents --max-versions 3 --locality-group contents \
	--compression 5
status_is 0 "add-family in a locality group of its own"
run -d "$D" add-family webtable anchor --type bytes --ttl 1w
status_is 0 "add-family --type bytes --ttl 1w"
run -d "$D" add-family webtable language --max-versions unlimited --ttl forever
status_is 0 "add-family with the words unlimited and forever"
run -d "$D" add-family buses loc --type f64 --max-versions 1 --ttl 3600
status_is 0 "add-family --type f64 --max-versions 1 --ttl 3600"
run -d "$D" describe aircraft
sed -n '1,5p' "$T/out" >"$T/out1" && mv "$T/out1" "$T/out"
out_is "describe shows every setting of every family" <<EOF
table aircraft in $D

family  type     max_versions  ttl         locality_group  compression
flight  string   unlimited     forever     default         1
meta    string   3             7200        default         none
EOF
run -d "$D" describe webtable
sed -n '1,10p' "$T/out" >"$T/out1" && mv "$T/out1" "$T/out"
out_is "describe shows locality groups, their trees and families" <<EOF
table webtable in $D

family    type     max_versions  ttl         locality_group  compression
anchor    bytes    unlimited     604800      default         1
contents  string   3             forever     contents        5
language  string   unlimited     forever     default         1

locality group  tree      families
default         default   anchor, language
contents        lg-1      contents
EOF
run -d "$D" describe webtable
out_has "compressed at level 5 (the highest of its families)" \
	"describe gives a group's compression"
out_has "not this table's alone" "describe says the default tree is shared"
out_has "lg-1      " "describe lists the group tree's files"

run -d "$D" add-family aircraft flight
error_naming "flight" "declaring an existing family fails naming it"
run -d "$D" add-family aircraft 'a:b'
error_naming "a:b" "a bad family name is refused, naming it"
run -d "$D" add-family nosuch f
error_naming "nosuch" "a family for a missing table: the message names the table"
run -d "$D" add-family aircraft big --ttl 99999999999999999
error_naming "big" "a ttl beyond what the table layer takes fails naming the family"

echo "# alter-family changes only what is given"
run -d "$D" alter-family aircraft meta --max-versions 5
status_is 0 "alter-family --max-versions"
run -d "$D" alter-family aircraft meta --type i64 --compression 9
status_is 0 "alter-family --type --compression"
run -d "$D" describe aircraft
sed -n '5p' "$T/out" >"$T/out1" && mv "$T/out1" "$T/out"
out_is "the other settings are kept" <<EOF
meta    i64      5             7200        default         9
EOF
run -d "$D" alter-family aircraft meta --ttl 0 --max-versions 0
status_is 0 "alter-family back to forever and unlimited"
run -d "$D" describe aircraft
sed -n '5p' "$T/out" >"$T/out1" && mv "$T/out1" "$T/out"
out_is "0 shows as unlimited and forever" <<EOF
meta    i64      unlimited     forever     default         9
EOF
run -d "$D" alter-family aircraft meta --locality-group g2
status_is 0 "an empty family moves to another locality group"
run -d "$D" describe aircraft
out_has "g2              lg-2      meta" "describe shows the new group and its tree"
run -d "$D" alter-family aircraft nosuch --ttl 5
error_naming "nosuch" "altering a missing family names it"
run -d "$D" alter-family nosuch meta --ttl 5
error_naming "nosuch" "altering a family of a missing table names the table"

echo "# drop-family, drop-table"
run -d "$D" drop-family aircraft meta
status_is 0 "drop-family of an empty family"
run -d "$D" describe aircraft
grep '^meta ' "$T/out" >/dev/null
test $? -ne 0
check $? "the dropped family is gone from describe"
run -d "$D" drop-family aircraft meta
error_naming "meta" "dropping it again fails naming the family"
run -d "$D" drop-family nosuch meta
error_naming "nosuch" "drop-family on a missing table names it"
run -d "$D" describe nosuch
error_naming "nosuch" "describe of a missing table names it"
run -d "$D" drop-table buses
status_is 0 "drop-table of an empty table"
run -d "$D" drop-table buses
error_naming "buses" "dropping it again fails naming the table"
run -d "$D" list-tables
out_is "list-tables after the drop" <<EOF
aircraft
webtable
EOF

done_testing
