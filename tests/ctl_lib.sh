# ctl_lib.sh -- what smolctl's test scripts (tests/ctl_*.sh) share: where
# smolctl is, a scratch directory removed at exit, running a command with its
# output, errors and status kept, and TAP assertions that explain a failure.
# Sourced, not run.  POSIX sh.
#
# The scripts run from `make check`, whose TESTS_ENVIRONMENT sets
# SMOLFS_BUILDDIR (the built smolctl) and SMOLFS_SRCDIR; run by hand, they
# fall back to the current directory.

SMOLCTL=${SMOLFS_BUILDDIR:-.}/smolctl
if [ ! -x "$SMOLCTL" ]; then
	echo "1..0 # SKIP no smolctl at $SMOLCTL (set SMOLFS_BUILDDIR)"
	exit 0
fi
unset SMOLFS_DATADIR
LC_ALL=C
export LC_ALL

T=$(mktemp -d "${TMPDIR:-/tmp}/smolctl-test.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM

ntest=0
nfail=0

# run ARGS...: smolctl with ARGS; stdout in $T/out, stderr in $T/err, status in $status
run() {
	"$SMOLCTL" "$@" >"$T/out" 2>"$T/err"
	status=$?
}

# run_in INPUT-FILE ARGS...: the same with standard input from a file
run_in() {
	_in=$1
	shift
	"$SMOLCTL" "$@" <"$_in" >"$T/out" 2>"$T/err"
	status=$?
}

ok() {
	ntest=$((ntest + 1))
	echo "ok $ntest - $1"
}

not_ok() {
	ntest=$((ntest + 1))
	nfail=$((nfail + 1))
	echo "not ok $ntest - $1"
}

# diag FILE: a file's lines as TAP comments
diag_file() {
	sed 's/^/#   /' "$1"
}

# check CONDITION-STATUS DESCRIPTION: ok when the status is 0
check() {
	if [ "$1" -eq 0 ]; then
		ok "$2"
	else
		not_ok "$2"
		echo "# stdout:"
		diag_file "$T/out"
		echo "# stderr:"
		diag_file "$T/err"
	fi
}

# status_is N DESCRIPTION: the last run's exit status
status_is() {
	if [ "$status" -eq "$1" ]; then
		ok "$2"
	else
		not_ok "$2"
		echo "# exit status $status, expected $1"
		echo "# stdout:"
		diag_file "$T/out"
		echo "# stderr:"
		diag_file "$T/err"
	fi
}

# out_is DESCRIPTION < EXPECTED: stdout is exactly the expected text
out_is() {
	cat >"$T/expected"
	if cmp -s "$T/expected" "$T/out"; then
		ok "$1"
	else
		not_ok "$1"
		diff -u "$T/expected" "$T/out" | sed 's/^/#   /'
		echo "# stderr:"
		diag_file "$T/err"
	fi
}

# err_is DESCRIPTION < EXPECTED: stderr is exactly the expected text
err_is() {
	cat >"$T/expected"
	if cmp -s "$T/expected" "$T/err"; then
		ok "$1"
	else
		not_ok "$1"
		diff -u "$T/expected" "$T/err" | sed 's/^/#   /'
	fi
}

# out_has / err_has TEXT DESCRIPTION: the text (fixed string) is in stdout / stderr
out_has() {
	grep -F -e "$1" "$T/out" >/dev/null
	check $? "$2"
}

err_has() {
	grep -F -e "$1" "$T/err" >/dev/null
	check $? "$2"
}

# err_empty DESCRIPTION
err_empty() {
	test ! -s "$T/err"
	check $? "$1"
}

# usage_error DESCRIPTION: status 2, a "smolctl: " message and the usage line
usage_error() {
	if [ "$status" -eq 2 ] && grep '^smolctl: ' "$T/err" >/dev/null &&
	   grep '^usage: smolctl' "$T/err" >/dev/null && test ! -s "$T/out"; then
		ok "$1"
	else
		not_ok "$1"
		echo "# exit status $status, expected 2 with a message and the usage"
		diag_file "$T/err"
	fi
}

# error_naming TEXT DESCRIPTION: status 1, one "smolctl: " message that holds TEXT
error_naming() {
	if [ "$status" -eq 1 ] && grep -F -e "$1" "$T/err" | grep '^smolctl: ' >/dev/null; then
		ok "$2"
	else
		not_ok "$2"
		echo "# exit status $status, expected 1 with a message naming $1"
		diag_file "$T/err"
	fi
}

done_testing() {
	echo "1..$ntest"
	[ "$nfail" -eq 0 ]
	exit $?
}
