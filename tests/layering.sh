#!/bin/sh
# layering.sh -- the layers stay visible: front-ends (tools/, fs/) include
# only the engine's public headers (the files directly in engine/) and their
# own folder's headers; each public header compiles on its own with nothing
# but -I engine; and a public header includes only public headers.  An
# offending include is listed as FILE:LINE with the header it names.
#
# Before checking the tree, the checks are run on planted offences in a
# scratch copy, so a check that has stopped catching anything fails too.
# POSIX sh; TAP.  Run by `make check` (SMOLFS_SRCDIR, SMOLFS_CC); by hand:
#   SMOLFS_SRCDIR=. SMOLFS_CC=cc sh tests/layering.sh

S=${SMOLFS_SRCDIR:-.}
CC=${SMOLFS_CC:-cc}
LC_ALL=C
export LC_ALL

T=$(mktemp -d "${TMPDIR:-/tmp}/smolfs-layering.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM

ntest=0
nfail=0
ok() {
	ntest=$((ntest + 1))
	echo "ok $ntest - $1"
}
not_ok() {
	ntest=$((ntest + 1))
	nfail=$((nfail + 1))
	echo "not ok $ntest - $1"
}
diag_file() {
	sed 's/^/#   /' "$1"
}

# includes FILE...: "FILE:LINE:q:NAME" (#include "NAME") or "FILE:LINE:a:NAME" (<NAME>)
includes() {
	awk '
	/^[ \t]*#[ \t]*include[ \t]*"/ {
		s = $0; sub(/^[^"]*"/, "", s); sub(/".*$/, "", s)
		print FILENAME ":" FNR ":q:" s; next
	}
	/^[ \t]*#[ \t]*include[ \t]*</ {
		s = $0; sub(/^[^<]*</, "", s); sub(/>.*$/, "", s)
		print FILENAME ":" FNR ":a:" s
	}' "$@"
}

# public ROOT NAME: is NAME one of ROOT's public headers (a file directly in ROOT/engine)?
public() {
	case $2 in
	*/*) return 1 ;;
	esac
	case $2 in
	*.h) test -f "$1/engine/$2" ;;
	*) return 1 ;;
	esac
}

# frontend_offences ROOT: every include in ROOT/tools and ROOT/fs that is not a
# public header, a header of the front-end's own folder, config.h or a system
# header, as "FILE:LINE: includes NAME, which is not a public header"
frontend_offences() {
	_root=$1
	_files=$(find "$_root/tools" "$_root/fs" -type f \( -name '*.c' -o -name '*.h' \) \
		2>/dev/null | sort)
	[ -n "$_files" ] || return 0
	# shellcheck disable=SC2086
	includes $_files | while IFS=: read -r file line kind name; do
		dir=$(dirname "$file")
		top=${file#"$_root"/}
		top=$_root/${top%%/*}
		if [ "$kind" = a ]; then
			# a system header, unless -I engine would find an engine file under that name
			if [ -f "$_root/engine/$name" ] && ! public "$_root" "$name"; then
				echo "$file:$line: includes <$name>, which is not a public header"
			fi
			continue
		fi
		[ "$name" = config.h ] && continue
		public "$_root" "$name" && continue
		if [ -f "$dir/$name" ]; then
			# the front-end's own header: it must stay inside its folder
			real=$(cd "$(dirname "$dir/$name")" && pwd -P)
			troot=$(cd "$top" && pwd -P)
			case $real/ in
			"$troot"/*) continue ;;
			esac
		fi
		echo "$file:$line: includes \"$name\", which is not a public header"
	done
}

# header_offences ROOT: includes in ROOT/engine/*.h that name anything but a
# public header or a system header
header_offences() {
	includes "$1"/engine/*.h | while IFS=: read -r file line kind name; do
		if [ "$kind" = a ]; then
			[ -f "$1/engine/$name" ] || continue
		fi
		public "$1" "$name" && continue
		echo "$file:$line: a public header includes \"$name\", which is not public"
	done
}

# build_offences ROOT: programs of ROOT/Makefile.am (not the engine's libraries or
# its tests) whose CPPFLAGS reach the private folders engine/kv, engine/table
build_offences() {
	awk '
	{ line = line $0 }
	/\\$/ { sub(/\\$/, "", line); next }
	{
		if (line ~ /^[a-z0-9_]+_CPPFLAGS[ \t]*\+?=/ && line !~ /^(lib|tests_)/ &&
		    line ~ /engine\/(kv|table)|ENGINE_CPPFLAGS/)
			print FILENAME ": " line
		line = ""
	}' "$1/Makefile.am"
}

# compiles ROOT HEADER: a C file that includes just that header, twice (the
# guard), compiles with only ROOT/engine on the include path; output in $T/cc
compiles() {
	printf '#include "%s"\n#include "%s"\nint layering_check;\n' "$2" "$2" >"$T/one.c"
	"$CC" -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -fsyntax-only \
		-I "$1/engine" "$T/one.c" >"$T/cc" 2>&1
}

# offences_are DESCRIPTION FILE PATTERN: FILE lists an offence matching PATTERN
expect_listed() {
	if grep -q "$3" "$2"; then
		ok "$1"
	else
		not_ok "$1"
		echo "# expected a line matching $3 in:"
		diag_file "$2"
	fi
}

# ---- the checks catch what they must, on a scratch copy with planted offences
P=$T/plant
mkdir -p "$P/engine/kv" "$P/tools" "$P/fs/sub"
cp "$S"/engine/*.h "$P/engine/"
cp "$S"/engine/kv/*.h "$P/engine/kv/"
printf '/* a private header */\nint private_thing;\n' >"$P/engine/kv/private.h"
cat >"$P/tools/good.c" <<'EOF'
#include "config.h"
#include <stdio.h>
#include "kv.h"
#include "table.h"
#include "own.h"
EOF
printf '#include "cell.h"\n' >"$P/tools/own.h"
cat >"$P/tools/bad.c" <<'EOF'
#include "kv.h"
  #  include "util.h"
#include "kv/private.h"
#include <kv/private.h>
#include "../engine/kv/private.h"
EOF
printf '#include "sub/inner.h"\n#include "../tools/own.h"\n' >"$P/fs/main.c"
printf 'int inner;\n' >"$P/fs/sub/inner.h"
frontend_offences "$P" >"$T/planted"
expect_listed "a planted quoted include of a private header is listed with file and line" \
	"$T/planted" "tools/bad.c:2: includes \"util.h\""
expect_listed "... and one through the private folder's path" "$T/planted" \
	"tools/bad.c:3: includes \"kv/private.h\""
expect_listed "... and one in angle brackets that -I engine would find" "$T/planted" \
	"tools/bad.c:4: includes <kv/private.h>"
expect_listed "... and one by a relative path into engine/" "$T/planted" \
	"tools/bad.c:5: includes \"../engine/kv/private.h\""
expect_listed "... and a front-end reaching into another front-end's folder" "$T/planted" \
	"fs/main.c:2: includes \"../tools/own.h\""
if [ "$(wc -l <"$T/planted")" -eq 5 ]; then
	ok "public headers, own-folder headers, config.h and system headers are not listed"
else
	not_ok "public headers, own-folder headers, config.h and system headers are not listed"
	diag_file "$T/planted"
fi
cat >"$P/Makefile.am" <<'EOF'
AM_CPPFLAGS = -I$(top_srcdir)/engine
libkv_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/engine/kv
tests_kv_db_CPPFLAGS = $(ENGINE_CPPFLAGS)
smolctl_CPPFLAGS = $(AM_CPPFLAGS)
smolfs_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/engine/kv
EOF
build_offences "$P" >"$T/planted"
expect_listed "a program given a private folder in Makefile.am is listed" "$T/planted" \
	"smolfs_CPPFLAGS"
if [ "$(wc -l <"$T/planted")" -eq 1 ]; then
	ok "the engine's libraries and tests may see the private folders"
else
	not_ok "the engine's libraries and tests may see the private folders"
	diag_file "$T/planted"
fi
printf '#include <stddef.h>\n#include "util.h"\n' >"$P/engine/leaky.h"
header_offences "$P" >"$T/planted"
expect_listed "a public header that includes a private one is listed" "$T/planted" \
	"engine/leaky.h:2: a public header includes \"util.h\""
if compiles "$P" leaky.h; then
	not_ok "a public header that needs a private one does not compile with -I engine alone"
else
	ok "a public header that needs a private one does not compile with -I engine alone"
fi

# ---- the tree
frontend_offences "$S" >"$T/front"
if [ -s "$T/front" ]; then
	not_ok "tools/ and fs/ include only public headers and their own"
	diag_file "$T/front"
else
	ok "tools/ and fs/ include only public headers and their own"
fi
build_offences "$S" >"$T/build"
if [ -s "$T/build" ]; then
	not_ok "Makefile.am gives front-ends only engine/ (the public headers)"
	diag_file "$T/build"
else
	ok "Makefile.am gives front-ends only engine/ (the public headers)"
fi
header_offences "$S" >"$T/hdr"
if [ -s "$T/hdr" ]; then
	not_ok "the public headers include only public headers"
	diag_file "$T/hdr"
else
	ok "the public headers include only public headers"
fi
for h in "$S"/engine/*.h; do
	h=$(basename "$h")
	if compiles "$S" "$h"; then
		ok "engine/$h compiles on its own with only -I engine (and twice)"
	else
		not_ok "engine/$h compiles on its own with only -I engine (and twice)"
		diag_file "$T/cc"
	fi
done

echo "1..$ntest"
[ "$nfail" -eq 0 ]
