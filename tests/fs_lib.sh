# fs_lib.sh -- what the filesystem's test scripts (tests/fs_*.sh) share: a
# fresh data directory and mount point in a scratch directory, the daemon
# started and waited for, an unmount that always happens (even when a script
# fails or is interrupted), the fs_op helper that reports errnos by name, and
# TAP assertions with a fixed plan.  Sourced, not run.  POSIX sh.
#
# The scripts run from `make check`, whose TESTS_ENVIRONMENT sets
# SMOLFS_BUILDDIR (the built smolfs, smolctl and tests/fs_op) and
# SMOLFS_SRCDIR; run by hand, they fall back to the current directory.
#
# A script sources this file, calls `plan N`, then `fs_mount` (which starts
# `smolfs -f DATADIR MNT` in the background and waits for the mount), and
# ends with `fs_unmount` (an assertion of its own: the daemon exits 0 and
# printed no sanitizer report) and `done_testing`.  If anything stops the
# script early, the EXIT trap unmounts with fusermount3 -u (lazily if the
# mount is busy), kills the daemon if it outlives its mount, unmounts the
# file systems named in $fs_extra_fs (a tmpfs of the script's), and removes the
# scratch directory.

LC_ALL=C
export LC_ALL
unset SMOLFS_DATADIR

B=${SMOLFS_BUILDDIR:-.}
S=${SMOLFS_SRCDIR:-.}
SMOLFS=$B/smolfs
SMOLCTL=$B/smolctl
FS_OP=$B/tests/fs_op
FS_OP_DIR=$B/tests

# Only a machine without FUSE skips; a missing daemon is a failure.
if [ ! -c /dev/fuse ]; then
	echo "1..0 # SKIP no /dev/fuse"
	exit 0
fi
if ! command -v fusermount3 >/dev/null 2>&1; then
	echo "1..0 # SKIP no /dev/fuse (fusermount3 is not installed)"
	exit 0
fi
for _p in "$SMOLFS" "$SMOLCTL" "$FS_OP"; do
	if [ ! -x "$_p" ]; then
		echo "Bail out! $_p is not built (set SMOLFS_BUILDDIR)"
		exit 1
	fi
done

# Seconds to wait for a mount to appear or a daemon to exit (the sanitizer
# build starts slowly).
FS_TIMEOUT=${SMOLFS_TEST_TIMEOUT:-30}

T=$(mktemp -d "${TMPDIR:-/tmp}/smolfs-test.XXXXXX") || exit 1
DATADIR=$T/data
MNT=$T/mnt
mkdir "$MNT" || exit 1

fs_pid=        # the running daemon's process id, empty when none
FS_WRAPPER=${FS_WRAPPER:-}   # words fs_mount puts before the daemon (fs_valgrind.sh: valgrind)
FS_DAEMON=$SMOLFS   # the daemon fs_mount starts (fs_ioerr.sh: the test build on the fault env)
fs_mounted=    # the mount point currently mounted by this script
nplan=
ntest=0
nfail=0
fs_nlog=0      # daemon logs kept so far ($T/daemon.N.log)

# ---------------------------------------------------------------- TAP

# plan N: the number of assertions this script makes, printed first
plan() {
	nplan=$1
	echo "1..$1"
}

# tap_name TEXT: TEXT as a TAP description ('#' and '\' escaped, one line)
tap_name() {
	printf '%s' "$1" | tr '\n' ' ' | sed -e 's/\\/\\\\/g' -e 's/#/\\#/g'
}

ok() {
	ntest=$((ntest + 1))
	printf "ok %d - %s\n" "$ntest" "$(tap_name "$1")"
}

not_ok() {
	ntest=$((ntest + 1))
	nfail=$((nfail + 1))
	printf "not ok %d - %s\n" "$ntest" "$(tap_name "$1")"
	fs_check_alive
}

# fs_check_alive: a daemon that died makes every later assertion fail:
# stop there, with the end of its log
fs_check_alive() {
	if [ -n "$fs_pid" ] && ! kill -0 "$fs_pid" 2>/dev/null; then
		wait "$fs_pid" 2>/dev/null
		_st=$?
		echo "# the daemon died (exit status $_st); its log:"
		fs_show_log
		echo "Bail out! smolfs died during the test"
		fs_pid=
		exit 1
	fi
}

# skip REASON DESCRIPTION: an assertion that cannot run here
skip() {
	ntest=$((ntest + 1))
	printf "ok %d - %s # SKIP %s\n" "$ntest" "$(tap_name "$2")" "$1"
}

diag() {
	printf '%s\n' "$*" | sed 's/^/# /'
}

# diag_file FILE: a file's first lines as TAP comments
diag_file() {
	[ -f "$1" ] && head -n 40 "$1" | sed 's/^/#   /'
}

# ---------------------------------------------------------------- running

# run CMD ARGS...: stdout in $T/out, stderr in $T/err, status in $status
run() {
	"$@" >"$T/out" 2>"$T/err"
	status=$?
}

# sh_run SCRIPT: the same for a shell command line (redirections, globs)
sh_run() {
	sh -c "$1" >"$T/out" 2>"$T/err"
	status=$?
}

_show_run() {
	echo "# exit status $status"
	echo "# stdout:"
	diag_file "$T/out"
	echo "# stderr:"
	diag_file "$T/err"
}

# check STATUS DESCRIPTION: ok when STATUS is 0; on failure the last run's output
check() {
	if [ "$1" -eq 0 ]; then
		ok "$2"
	else
		not_ok "$2"
		_show_run
	fi
}

# succeeds DESCRIPTION: the last run exited 0
succeeds() {
	check "$status" "$1"
}

# fails DESCRIPTION: the last run exited non-zero
fails() {
	if [ "$status" -ne 0 ]; then
		ok "$1"
	else
		not_ok "$1"
		_show_run
	fi
}

# out_is DESCRIPTION < EXPECTED: the last run exited 0 and its stdout is exactly EXPECTED
out_is() {
	cat >"$T/expected"
	if [ "$status" -eq 0 ] && cmp -s "$T/expected" "$T/out"; then
		ok "$1"
	else
		not_ok "$1"
		echo "# exit status $status; stdout against the expected text:"
		diff -u "$T/expected" "$T/out" | sed 's/^/#   /'
		echo "# stderr:"
		diag_file "$T/err"
	fi
}

# out_has TEXT DESCRIPTION: the last run exited 0 and stdout holds TEXT (fixed string)
out_has() {
	if [ "$status" -eq 0 ] && grep -F -e "$1" "$T/out" >/dev/null; then
		ok "$2"
	else
		not_ok "$2"
		echo "# expected to find: $1"
		_show_run
	fi
}

# file_is PATH DESCRIPTION < EXPECTED: cat PATH prints exactly EXPECTED
file_is() {
	_f=$1
	shift
	run cat "$_f"
	out_is "$@"
}

# type_is PATH DESCRIPTION < EXPECTED: getfattr's user.smolfs.type of PATH
# (getfattr --only-values prints no newline; EXPECTED has one)
type_is() {
	_f=$1
	shift
	getfattr --only-values -n user.smolfs.type "$_f" >"$T/out" 2>"$T/err"
	status=$?
	echo >>"$T/out"
	out_is "$@"
}

# same_files A B DESCRIPTION: two files have identical bytes
same_files() {
	if cmp "$1" "$2" >"$T/cmp" 2>&1; then
		ok "$3"
	else
		not_ok "$3"
		diag_file "$T/cmp"
		diff -u "$1" "$2" 2>&1 | head -n 40 | sed 's/^/#   /'
	fi
}

# op_is EXPECTED DESCRIPTION FS_OP-ARGS...: tests/fs_op prints EXPECTED
# ("ok", or "STEP ERRNO-NAME", e.g. "write EINVAL")
op_is() {
	_want=$1
	_desc=$2
	shift 2
	"$FS_OP" "$@" >"$T/out" 2>"$T/err"
	status=$?
	_got=$(cat "$T/out")
	if [ "$_got" = "$_want" ]; then
		ok "$_desc"
	else
		not_ok "$_desc"
		echo "# fs_op $*: got '$_got', expected '$_want'"
		diag_file "$T/err"
	fi
}

# op_errno ERRNO DESCRIPTION FS_OP-ARGS...: tests/fs_op fails with ERRNO, at
# whichever step (for the cases where the contract names no step)
op_errno() {
	_want=$1
	_desc=$2
	shift 2
	"$FS_OP" "$@" >"$T/out" 2>"$T/err"
	status=$?
	_got=$(cat "$T/out")
	case $_got in
	*" $_want") ok "$_desc" ;;
	*) not_ok "$_desc"
	   echo "# fs_op $*: got '$_got', expected $_want"
	   diag_file "$T/err" ;;
	esac
}

# acked_read_back DESCRIPTION: every cell named in $T/acked (one a line) of
# the family directory $K/r/f holds "NAME:$pad" (fs_enospc.sh, fs_ioerr.sh:
# the writes whose close() returned 0), and there is at least one
acked_read_back() {
	: >"$T/got"
	while read -r c; do
		cat "$K/r/f/$c" >>"$T/got" 2>&1
		echo >>"$T/got"
	done <"$T/acked"
	awk -v pad="$pad" '{ print $0 ":" pad }' "$T/acked" >"$T/want"
	if [ -s "$T/acked" ] && cmp -s "$T/want" "$T/got"; then
		ok "$1 ($(wc -l <"$T/acked") cells)"
	else
		not_ok "$1 ($(wc -l <"$T/acked") cells)"
		cmp "$T/want" "$T/got" 2>&1 | sed 's/^/# /'
		cut -c 1-40 "$T/want" >"$T/want40"
		cut -c 1-40 "$T/got" | diff "$T/want40" - | head -n 10 | sed 's/^/#   /'
	fi
}

# ---------------------------------------------------------------- the mount

# seeded_rnd SEED N LO HI: a number in LO..HI, the N-th draw from SEED.
# Not awk's srand(SEED + N): mawk seeds neighbouring values alike, and with
# some seeds every draw of a run came out the same.  A multiplicative
# generator (modulus 2^31 - 1) stirred with N, added and as a multiplier,
# so that neighbouring draws are not a fixed step apart; every product stays
# below 2^53, so awk's doubles hold it exactly.
seeded_rnd() {
	awk -v s="$1" -v n="$2" -v lo="$3" -v hi="$4" 'BEGIN {
		m = 2147483647
		x = s % m + 1
		for (i = 0; i < 4; i++) {
			x = (x * 48271 + n) % m
			x = (x * (16807 + n % 4093)) % m
		}
		print lo + x % (hi - lo + 1)
	}'
}

# The daemon's request counts, from .smolfs/stats of the mount at $MNT:
# req_snap prints "lookup getattr open read paged" (paged: page-cache
# opens); req_base what one snap costs, as the next one counts it;
# req_delta BEFORE AFTER BASE the requests between two snaps, without the
# snap's own.
req_snap() {
	awk '/^requests /{ printf "%s %s %s %s ", $3, $5, $7, $9 } /^page cache opens /{ print $4 }' \
		"$MNT/.smolfs/stats"
}
req_base() {
	_b1=$(req_snap)
	_b2=$(req_snap)
	echo "$_b1 $_b2" |
		awk '{ for (i = 1; i <= 5; i++) printf "%d%s", $(i + 5) - $i, i < 5 ? " " : "\n" }'
}
req_delta() {
	echo "$1 $2 $3" |
		awk '{ for (i = 1; i <= 5; i++) printf "%d%s", $(i + 5) - $i - $(i + 10), i < 5 ? " " : "\n" }'
}

_daemon_log() {
	echo "$T/daemon.$fs_nlog.log"
}

# fs_mount [SMOLFS-ARGS...]: start `smolfs -f ARGS DATADIR MNT` ($FS_DAEMON;
# fs_try_mount always starts the real smolfs) and wait for the mount.  Prints nothing; on failure it bails out with the daemon's log.
fs_mount() {
	fs_nlog=$((fs_nlog + 1))
	$FS_WRAPPER "$FS_DAEMON" -f "$@" "$DATADIR" "$MNT" >"$(_daemon_log)" 2>&1 &
	fs_pid=$!
	fs_mounted=$MNT
	if ! fs_wait_mounted "$MNT"; then
		echo "Bail out! smolfs $* $DATADIR $MNT did not mount in ${FS_TIMEOUT}s"
		diag_file "$(_daemon_log)"
		exit 1
	fi
}

# fs_try_mount DESCRIPTION: mount as fs_mount does, but a daemon that does not
# mount is a failed assertion (with its log), not the end of the script
fs_try_mount() {
	fs_nlog=$((fs_nlog + 1))
	"$SMOLFS" -f "$DATADIR" "$MNT" >"$(_daemon_log)" 2>&1 &
	fs_pid=$!
	fs_mounted=$MNT
	if fs_wait_mounted "$MNT"; then
		ok "$1"
		return 0
	fi
	kill -KILL "$fs_pid" 2>/dev/null
	wait "$fs_pid" 2>/dev/null
	fs_pid=
	fs_force_unmount "$MNT"
	fs_mounted=
	not_ok "$1"
	echo "# free space in DATADIR: $(df -k "$DATADIR" | awk 'NR == 2 { print $4 }') KiB; the daemon's log:"
	diag_file "$(_daemon_log)"
	return 1
}

# fs_wait_mounted MNT: 0 once MNT is a mount point answered by a daemon,
# 1 after the timeout or if the daemon exits first
fs_wait_mounted() {
	_n=0
	while [ "$_n" -lt $((FS_TIMEOUT * 10)) ]; do
		if fs_is_mounted "$1" && stat "$1/." >/dev/null 2>&1; then
			return 0
		fi
		if [ -n "$fs_pid" ] && ! kill -0 "$fs_pid" 2>/dev/null; then
			return 1
		fi
		sleep 0.1
		_n=$((_n + 1))
	done
	return 1
}

# fs_wait_exit PID: wait for a daemon to exit; its status in $fs_status
# (124 if it outlived the timeout and was killed)
fs_wait_exit() {
	_n=0
	while kill -0 "$1" 2>/dev/null; do
		if [ "$_n" -ge $((FS_TIMEOUT * 10)) ]; then
			kill -KILL "$1" 2>/dev/null
			wait "$1" 2>/dev/null
			fs_status=124
			return
		fi
		sleep 0.1
		_n=$((_n + 1))
	done
	wait "$1" 2>/dev/null
	fs_status=$?
}

# fs_log_clean: the current daemon log holds no sanitizer or leak report
fs_log_clean() {
	! grep -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|WARNING: ThreadSanitizer' \
		"$(_daemon_log)" >/dev/null 2>&1
}

# fs_show_log: the daemon log as TAP comments: a sanitizer's report from its
# first line, else the log's last lines
fs_show_log() {
	if grep -q -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$(_daemon_log)" 2>/dev/null; then
		sed -n -E '/ERROR: (Address|Leak)Sanitizer|runtime error:/,$p' "$(_daemon_log)" |
			head -n 40 | sed 's/^/#   /'
	else
		tail -n 30 "$(_daemon_log)" 2>/dev/null | sed 's/^/#   /'
	fi
}

# fs_unmount [DESCRIPTION]: fusermount3 -u, then one assertion: the unmount
# worked, the daemon exited 0, and its log holds no sanitizer report
fs_unmount() {
	_desc=${1:-unmount: fusermount3 -u succeeds, the daemon exits 0 with no sanitizer report}
	fusermount3 -u "$MNT" >"$T/umount.err" 2>&1
	_ust=$?
	if [ "$_ust" -ne 0 ]; then
		# a process of ours may still be in the tree: retry once
		sleep 1
		fusermount3 -u "$MNT" >>"$T/umount.err" 2>&1
		_ust=$?
	fi
	fs_status=0
	[ -n "$fs_pid" ] && fs_wait_exit "$fs_pid"
	fs_pid=
	fs_mounted=
	if [ "$_ust" -eq 0 ] && [ "$fs_status" -eq 0 ] && fs_log_clean; then
		ok "$_desc"
	else
		not_ok "$_desc"
		echo "# fusermount3 -u status $_ust, daemon exit status $fs_status"
		diag_file "$T/umount.err"
		echo "# daemon log:"
		fs_show_log
	fi
}

# fs_cycle_end LABEL: the end of one cycle of a crash or power-cut loop
# (fs_crash.sh, fs_powercut.sh): fusermount3 -u, then `smolctl check`; an
# unmount that fails, a daemon that exits non-zero or with a sanitizer
# report adds one to $nunmount, a check that fails one to $ncheck, each told
# with LABEL
fs_cycle_end() {
	fusermount3 -u "$MNT" >"$T/umount.err" 2>&1
	_ust=$?
	fs_wait_exit "$fs_pid"
	fs_pid=
	fs_mounted=
	if [ "$_ust" -ne 0 ] || [ "$fs_status" -ne 0 ] || ! fs_log_clean; then
		nunmount=$((nunmount + 1))
		diag "$1: unmount status $_ust, daemon exit status $fs_status"
		fs_show_log
	fi
	run "$SMOLCTL" -d "$DATADIR" check
	if [ "$status" -ne 0 ]; then
		ncheck=$((ncheck + 1))
		diag "$1: smolctl check failed:"
		_show_run
	fi
}

# fs_is_mounted DIR: DIR is in the mount table (a dead daemon's mount too,
# which stat and mountpoint(1) cannot see through)
fs_is_mounted() {
	awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/self/mounts
}

# fs_force_unmount DIR: unmount, lazily if something still holds it
fs_force_unmount() {
	fs_is_mounted "$1" || return 0
	fusermount3 -u "$1" 2>/dev/null || fusermount3 -u -z "$1" 2>/dev/null
}

# fs_cleanup: the EXIT trap's work: no mount and no daemon left behind
fs_cleanup() {
	cd / || :
	[ -n "$fs_mounted" ] && fs_force_unmount "$fs_mounted"
	if [ -n "$fs_pid" ] && kill -0 "$fs_pid" 2>/dev/null; then
		kill -TERM "$fs_pid" 2>/dev/null
		sleep 1
		kill -KILL "$fs_pid" 2>/dev/null
	fi
	for _m in ${fs_extra_mounts:-}; do
		fs_force_unmount "$_m"
	done
	for _p in ${fs_extra_pids:-}; do
		kill -KILL "$_p" 2>/dev/null
	done
	# file systems a script mounted itself (a small tmpfs for DATADIR)
	for _m in ${fs_extra_fs:-}; do
		umount "$_m" 2>/dev/null || umount -l "$_m" 2>/dev/null
	done
	# never remove a directory that is still a mount point
	if ! fs_is_mounted "$MNT" && ! fs_is_mounted "$T/mnt2"; then
		rm -rf "$T"
	else
		echo "# a mount is still in place under $T; left as it is"
	fi
}

_fs_exit() {
	_st=$1
	trap - EXIT
	trap '' PIPE        # a reader that went away must not stop the cleanup
	fs_cleanup
	if [ -n "$nplan" ] && [ "$ntest" -ne "$nplan" ]; then
		echo "# planned $nplan assertions, ran $ntest"
		_st=1
	fi
	[ "$nfail" -eq 0 ] || _st=1
	exit "$_st"
}
trap '_fs_exit $?' EXIT
trap 'exit 1' INT TERM HUP PIPE

# done_testing: the end of a script (the plan was printed first)
done_testing() {
	exit 0
}
