#!/bin/sh
# ctl_install.sh -- packaging: `make install` puts smolctl, smolbench and
# the manual pages where the prefix says, the installed smolctl works on its
# own (an import and export round trip of a seed), every installed page
# renders, and `make uninstall` takes it all away again.  Installs into a
# scratch DESTDIR with a made-up prefix, so it touches nothing of the system.
# shellcheck source=tests/ctl_lib.sh
. "$(dirname "$0")/ctl_lib.sh"

B=${SMOLFS_BUILDDIR:-.}
S=${SMOLFS_SRCDIR:-.}
P=/smolfs-install-test
R=$T/root
if ! command -v make >/dev/null 2>&1 || [ ! -f "$B/Makefile" ]; then
	echo "1..0 # SKIP no make, or no Makefile in $B"
	exit 0
fi

# run from inside `make check`: the parent make's job server is not ours
inst() {
	(cd "$B" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s "$@" prefix="$P" \
		DESTDIR="$R") >"$T/out" 2>"$T/err"
	status=$?
}

inst install
status_is 0 "make install into a DESTDIR"
for f in bin/smolctl bin/smolbench bin/smolfs share/man/man1/smolctl.1 \
	 share/man/man1/smolbench.1 share/man/man1/smolfs.1 share/man/man5/smolfs.5; do
	test -f "$R$P/$f"
	check $? "it installs $f"
done
test -x "$R$P/bin/smolctl" && test -x "$R$P/bin/smolbench" && test -x "$R$P/bin/smolfs"
check $? "the programs are executable"
"$R$P/bin/smolfs" --version >"$T/out" 2>"$T/err"
status=$?
status_is 0 "the installed smolfs runs"

run --version
want=$(cat "$T/out")
"$R$P/bin/smolctl" --version >"$T/out" 2>"$T/err"
status=$?
status_is 0 "the installed smolctl runs"
out_has "$want" "and is this build's ($want)"
"$R$P/bin/smolctl" -d "$T/db" import --create "$S/examples/aircraft.jsonl" >"$T/out" 2>"$T/err"
status=$?
status_is 0 "the installed smolctl imports a seed"
"$R$P/bin/smolctl" -d "$T/db" export >"$T/exp.jsonl" 2>"$T/err"
status=$?
status_is 0 "and exports it"
"$R$P/bin/smolctl" -d "$T/db2" import --create "$T/exp.jsonl" >"$T/out" 2>"$T/err" &&
	"$R$P/bin/smolctl" -d "$T/db2" export >"$T/exp2.jsonl" 2>"$T/err" &&
	cmp -s "$T/exp.jsonl" "$T/exp2.jsonl"
check $? "export -> import -> export with the installed smolctl: byte-identical"
"$R$P/bin/smolbench" --help >"$T/out" 2>"$T/err"
status=$?
status_is 0 "the installed smolbench runs"

if command -v man >/dev/null 2>&1; then
	for page in man1/smolctl.1 man1/smolbench.1 man1/smolfs.1 man5/smolfs.5; do
		MANWIDTH=80 man -l "$R$P/share/man/$page" >"$T/out" 2>"$T/err"
		test $? -eq 0 && test -s "$T/out" && test ! -s "$T/err"
		check $? "the installed $page renders without a warning"
	done
else
	ok "the installed pages render # SKIP no man(1)"
fi

inst uninstall
status_is 0 "make uninstall"
left=$(find "$R" -type f | head -5)
test -z "$left"
check $? "and it leaves no file behind${left:+ (left: $left)}"

done_testing
