#!/bin/sh
# fs_names.sh -- names through a real mount: row keys and qualifiers holding
# every byte value 1..255 (imported with smolctl, and made through the mount
# with the bytes written plainly) are listed by their escaped names and read
# back; the same key reached both ways is one row or cell; names of 254, 255
# and 256 bytes after escaping (q, q@ts, rows), including names short as
# typed but long once escaped, are made or refused with ENAMETOOLONG; a "%"
# not followed by two hex digits is EINVAL (ENOENT for a lookup), and nothing
# is made.  POSIX sh, TAP.

. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

plan 25

# raw B...: the bytes B (decimal) themselves
raw() {
	printf "$(for _b; do printf '\\%03o' "$_b"; done)"
}
# typed B...: a name for the bytes as a user types it: every byte plainly but
# "%" and "/" (which a file name cannot hold plainly)
typed() {
	printf "$(for _b; do
		case $_b in
		37) printf '\\045%s' 25 ;;
		47) printf '\\045%s' 2F ;;
		*) printf '\\%03o' "$_b" ;;
		esac
	done)"
}
# esc row|q B...: the name a listing gives the key B... (smolfs(1), Names);
# every chunk below is single bytes, so no byte >= 0x80 is valid UTF-8
esc() {
	awk -v kind="$1" 'BEGIN {
		for (i = 2; i < ARGC; i++) {
			b = ARGV[i] + 0
			if (b < 32 || b == 127 || b == 37 || b == 47 || b >= 128 ||
			    (kind == "q" && b == 64) || (i == 2 && b == 46))
				printf "%%%02X", b
			else
				printf "%c", b
		}
	}' "$@"
}
b64() {
	raw "$@" | base64 -w0
}
# rep N TEXT: TEXT N times
rep() {
	awk -v n="$1" -v s="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%s", s }'
}

c1=$(seq 1 63)
c2=$(seq 64 127)
c3=$(seq 128 191)
c4=$(seq 192 255)
ones86=$(seq 86 | sed 's/.*/1/')

# ---------------------------------------------------------------- imported
{
	echo '{"table":"t","families":{"f":{}}}'
	k=0
	for c in "$c1" "$c2" "$c3" "$c4"; do
		k=$((k + 1))
		# shellcheck disable=SC2086
		printf '{"table":"t","row_b64":"%s","cells":[{"family":"f","qualifier_b64":"%s","value":"i%d"}]}\n' \
			"$(b64 $c)" "$(b64 $c)" "$k"
	done
	# shellcheck disable=SC2086
	printf '{"table":"t","row_b64":"%s","cells":[{"family":"f","qualifier":"x","value":"long"}]}\n' \
		"$(b64 $ones86)"
	# shellcheck disable=SC2086
	printf '{"table":"t","row":"plain","cells":[{"family":"f","qualifier":"ok","value":"1"},{"family":"f","qualifier_b64":"%s","value":"2"}]}\n' \
		"$(b64 $ones86)"
} >"$T/names.jsonl"
run "$SMOLCTL" -d "$DATADIR" import --create "$T/names.jsonl"
check "$status" "import rows and qualifiers holding every byte 1..255"
fs_mount
M=$MNT

# shellcheck disable=SC2086
{ esc row $c1; echo; esc row $c2; echo; echo plain; esc row $c3; echo; esc row $c4; echo; } >"$T/rows"
run ls -U "$M/t"
out_is "ls lists the rows by their escaped names, in key order; a key whose name would exceed 255 bytes is left out" <"$T/rows"
k=0
for c in "$c1" "$c2" "$c3" "$c4"; do
	k=$((k + 1))
	# shellcheck disable=SC2086
	r=$(esc row $c)
	# shellcheck disable=SC2086
	q=$(esc q $c)
	sh -c "cd '$M/t' && ls \"\$1\"/f && cat \"\$1/f/\$2\"" sh "$r" "$q" >"$T/out" 2>"$T/err"
	status=$?
	printf '%s\ni%d\n' "$q" "$k" >"$T/want"
	# shellcheck disable=SC2086
	out_is "bytes $(echo $c | cut -d' ' -f1)..$(echo $c | awk '{print $NF}'): the qualifier is listed by its name and reads back" <"$T/want"
done
run ls "$M/t/plain/f"
out_is "a qualifier whose name would exceed 255 bytes is left out of the family's listing" <<'EOF'
ok
EOF

# ---------------------------------------------------------------- typed plainly
mkdir -p "$M/t/m/f"
bad=0
k=0
for c in "$c1" "$c2" "$c3" "$c4"; do
	k=$((k + 1))
	# shellcheck disable=SC2086
	"$FS_OP" write "$M/t/m/f/$(typed $c)" "m$k" >"$T/op" 2>&1 || { bad=$((bad + 1)); diag_file "$T/op"; }
done
check "$bad" "four cells made through names holding the bytes plainly"
# shellcheck disable=SC2086
{ esc q $c1; echo; esc q $c2; echo; esc q $c3; echo; esc q $c4; echo; } >"$T/quals"
run ls -U "$M/t/m/f"
out_is "they are listed by their escaped names" <"$T/quals"
: >"$T/vals"
while IFS= read -r q; do
	cat "$M/t/m/f/$q" >>"$T/vals" 2>&1
done <"$T/quals"
run cat "$T/vals"
out_is "each reads back through its escaped name" <<'EOF'
m1
m2
m3
m4
EOF
bad=0
for c in "$c1" "$c2" "$c3" "$c4"; do
	# shellcheck disable=SC2086
	got=$("$FS_OP" mkdir "$M/t/$(typed $c)")
	[ "$got" = "mkdir EEXIST" ] || { bad=$((bad + 1)); diag "mkdir: $got"; }
done
check "$bad" "a row typed with the bytes plainly is the imported row (mkdir: EEXIST)"

# ---------------------------------------------------------------- lengths
F=$M/t/n/f
mkdir -p "$F"
e85=$(rep 85 %01)
op_is "ok" "a qualifier of 255 bytes escaped (85 bytes 0x01) is made" write "$F/$e85" x255
op_is "open ENAMETOOLONG" "one of 256 bytes is ENAMETOOLONG" write "$F/${e85}a" x
op_is "ok" "a qualifier typed as 254 bytes is made" write "$F/$(rep 254 a)" x254
# shellcheck disable=SC2046
r85=$(raw $(seq 85 | sed 's/.*/1/'))
# shellcheck disable=SC2086
r86=$(raw $ones86)
"$FS_OP" write "$F/$r85" plain >"$T/out" 2>&1 && cat "$F/$e85" >>"$T/out" 2>&1
status=$?
out_is "the 85 bytes typed plainly are the same cell" <<'EOF'
ok
plain
EOF
op_is "open ENAMETOOLONG" "86 bytes 0x01 typed plainly (258 bytes escaped): ENAMETOOLONG" write "$F/$r86" x
op_is "mkdir ENAMETOOLONG" "so is a row of them" mkdir "$M/t/$r86"
op_is "ok" "q@ts of 255 bytes is made" write "$F/$(rep 238 a)@1600000000000000" v
op_is "open ENAMETOOLONG" "q@ts of 256 bytes is ENAMETOOLONG" write "$F/$(rep 239 a)@1600000000000000" v
# shellcheck disable=SC2046
op_is "open ENAMETOOLONG" "q@ts short as typed, 257 bytes escaped: ENAMETOOLONG" \
	write "$F/$(raw $(seq 80 | sed 's/.*/1/'))@1600000000000000" v
run ls "$F"
{ echo "$e85"; echo "$(rep 238 a)"; echo "$(rep 254 a)"; } >"$T/want"
out_is "the family holds exactly the names made" <"$T/want"

# ---------------------------------------------------------------- bad escapes
bad=0
for n in %zz a%4 a% %g1 'x%2'; do
	got=$("$FS_OP" write "$F/$n" x)
	[ "$got" = "open EINVAL" ] || { bad=$((bad + 1)); diag "write $n: $got"; }
	got=$("$FS_OP" mkdir "$M/t/$n")
	[ "$got" = "mkdir EINVAL" ] || { bad=$((bad + 1)); diag "mkdir $n: $got"; }
	got=$("$FS_OP" ino "$F/$n")
	[ "$got" = "stat ENOENT" ] || { bad=$((bad + 1)); diag "stat $n: $got"; }
done
check "$bad" "a % not followed by two hex digits: EINVAL to make, ENOENT to look up"
bad=0
for p in "$M/%00" "$M/t/.families/%00" "$M/t/.families/a%2Fb"; do
	got=$("$FS_OP" mkdir "$p")
	[ "$got" = "mkdir EINVAL" ] || { bad=$((bad + 1)); diag "mkdir $p: $got"; }
done
check "$bad" "%00 in a table or family name: EINVAL (their alphabet is [-_.a-zA-Z0-9])"
run ls -A "$M" "$M/t/.families" "$F"
{ echo "$M:"; echo t; echo; echo "$M/t/.families:"; echo f; echo; echo "$F:"; cat "$T/want"; } >"$T/want2"
out_is "nothing was made by the refused names" <"$T/want2"
fs_unmount
done_testing
