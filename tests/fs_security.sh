#!/bin/sh
# fs_security.sh -- the threat model of smolfs(1)'s SECURITY section: the
# data directory is the daemon's alone (0700, its files 0600, whatever the
# umask of the smolfs or smolctl that wrote it); without allow_other no
# other user reaches the mount (the kernel answers EACCES, and
# default_permissions is off: it would check only the owner); with
# allow_other default_permissions is on, so the owner and modes the tree
# shows are enforced by the kernel: another user reads a world-readable cell but cannot
# write, create, rename or remove anything; and no name written through the
# mount, with ".." or an escaped "/" (%2F) in it, makes anything outside the
# data directory, since the engine never builds a file path from a key.
# The other user is `nobody`, through setpriv(1); the script runs as root.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP needs root, to act as nobody and mount with allow_other"
	exit 0
fi
if ! command -v setpriv >/dev/null 2>&1 || ! id nobody >/dev/null 2>&1; then
	echo "1..0 # SKIP needs setpriv(1) and a user nobody"
	exit 0
fi

plan 24

NOBODY_UID=$(id -u nobody)
NOBODY_GID=$(id -g nobody)
# nobody may pass through the scratch directory (as through /home) to
# reach the mount point; DATADIR in it stays 0700
chmod 0711 "$T"

# as_nobody CMD ARGS...: run CMD as nobody, with nobody's group alone
as_nobody() {
	setpriv --reuid="$NOBODY_UID" --regid="$NOBODY_GID" --clear-groups -- "$@"
}

# nobody_op_is EXPECTED DESCRIPTION FS_OP-ARGS...: op_is, as nobody
nobody_op_is() {
	_want=$1
	_desc=$2
	shift 2
	as_nobody "$FS_OP" "$@" >"$T/out" 2>"$T/err"
	_got=$(cat "$T/out")
	if [ "$_got" = "$_want" ]; then
		ok "$_desc"
	else
		not_ok "$_desc"
		echo "# as nobody, fs_op $*: got '$_got', expected '$_want'"
		diag_file "$T/err"
	fi
}

# modes_are_private DESCRIPTION: DATADIR is 0700, every directory in it
# 0700 and every file 0600
modes_are_private() {
	find "$DATADIR" \( -type d ! -perm 0700 \) -o \( ! -type d ! -perm 0600 \) \
		>"$T/loose" 2>&1
	if [ "$(stat -c %a "$DATADIR")" = 700 ] && [ ! -s "$T/loose" ]; then
		ok "$1"
	else
		not_ok "$1"
		echo "# DATADIR mode $(stat -c %a "$DATADIR"); files and directories with other modes:"
		while read -r f; do
			echo "#   $(stat -c '%a %n' "$f")"
		done <"$T/loose"
	fi
}

K=$MNT/t

# ---------------------------------------------------------------- the data directory
# a daemon and a smolctl started with umask 000 still keep the data private
umask_was=$(umask)
umask 000
fs_mount
umask "$umask_was"
sh_run "mkdir '$K' '$K/.families/f' && mkdir -p '$K/r/f' && echo public >'$K/r/f/c' &&
	echo other >'$K/r/f/d'"
succeeds "a table t, row r, cells c and d written"
fs_unmount "unmount of the umask 000 daemon: it exits 0 with no sanitizer report"
modes_are_private "under umask 000 smolfs makes DATADIR 0700 and its files 0600"
(umask 000 && "$SMOLCTL" -d "$DATADIR" set t r f:e 1 && "$SMOLCTL" -d "$DATADIR" compact) \
	>"$T/out" 2>"$T/err"
status=$?
succeeds "smolctl set and compact under umask 000"
modes_are_private "under umask 000 smolctl keeps DATADIR 0700 and its files 0600"

# ---------------------------------------------------------------- without allow_other
fs_mount
# the kernel lets no one but the owner in, so it need check no mode (the
# owner's checks are the daemon's: fs_requests.sh)
if grep -E "^[^ ]+ $MNT fuse" /proc/self/mounts | grep -q 'default_permissions'; then
	not_ok "without allow_other the mount has no default_permissions"
	grep " $MNT " /proc/self/mounts | sed 's/^/#   /'
else
	ok "without allow_other the mount has no default_permissions"
fi
nobody_op_is "stat EACCES" "without allow_other nobody cannot stat the mount point" ino "$MNT"
nobody_op_is "stat EACCES" "without allow_other nobody cannot stat a cell" ino "$K/r/f/c"
nobody_op_is "open EACCES" "without allow_other nobody cannot open a cell" write "$K/r/f/c" mine
fs_unmount

# ---------------------------------------------------------------- with allow_other
fs_mount -o allow_other
if grep -E "^[^ ]+ $MNT fuse" /proc/self/mounts | grep 'allow_other' |
   grep -q 'default_permissions'; then
	ok "with allow_other the mount has default_permissions"
else
	not_ok "with allow_other the mount has default_permissions"
	grep " $MNT " /proc/self/mounts | sed 's/^/#   /'
fi
run stat -c '%u %a %n' "$K" "$K/r" "$K/r/f" "$K/r/f/c"
out_is "the tree shows the daemon's owner, directories 0755 and cells 0644" <<EOF
0 755 $K
0 755 $K/r
0 755 $K/r/f
0 644 $K/r/f/c
EOF
as_nobody cat "$K/r/f/c" >"$T/out" 2>"$T/err"
status=$?
out_is "nobody reads a world-readable cell" <<'EOF'
public
EOF
nobody_op_is "open EACCES" "nobody cannot write a cell (mode 0644, owner root)" write "$K/r/f/c" mine
nobody_op_is "open EACCES" "nobody cannot create a cell in a family directory (0755)" \
	write "$K/r/f/new" mine
nobody_op_is "unlink EACCES" "nobody cannot unlink a cell" unlink "$K/r/f/c"
nobody_op_is "rename EACCES" "nobody cannot rename a cell" rename "$K/r/f/c" "$K/r/f/d" exchange
nobody_op_is "mkdir EACCES" "nobody cannot make a row" mkdir "$K/r2"
nobody_op_is "rmdir EACCES" "nobody cannot remove a table" rmdir "$K"
run cat "$K/r/f/c" "$K/r/f/d"
out_is "the cells nobody tried to change hold their values" <<'EOF'
public
other
EOF

# ---------------------------------------------------------------- hostile names
# "..", escaped "/" and keys beginning with "." are key bytes, never path
# components: each lands in the table and nothing appears outside DATADIR
sh_run "mkdir '$K/%2E%2E' && mkdir '$K/%2E%2E/f' && echo up >'$K/%2E%2E/f/q' &&
	echo a >'$K/r/f/%2E%2E%2F%2E%2E%2F%2E%2E%2Fevil1' &&
	echo b >'$K/r/f/x%2F..%2F..%2F..%2F..%2Fevil2' &&
	mkdir '$K/%2E%2E%2F%2E%2E%2Fevil3' && mkdir '$K/%2E%2E%2F%2E%2E%2Fevil3/f' &&
	echo c >'$K/%2E%2E%2F%2E%2E%2Fevil3/f/%2E%2E' &&
	cat '$K/%2E%2E/f/q' '$K/r/f/%2E%2E%2F%2E%2E%2F%2E%2E%2Fevil1' \
		'$K/r/f/x%2F..%2F..%2F..%2F..%2Fevil2' '$K/%2E%2E%2F%2E%2E%2Fevil3/f/%2E%2E'"
out_is "rows and cells whose keys hold '..' and '/' are made and read back" <<'EOF'
up
a
b
c
EOF
fs_unmount
# after the unmount (the engine's files written) nothing named after a key
# exists outside DATADIR or in it
find "$T" "$(dirname "$T")" -maxdepth 3 -xdev -name '*evil*' 2>/dev/null >"$T/found"
# (the engine's only directories are its locality groups' trees, lg-N)
find "$DATADIR" -mindepth 1 \( \( -type d ! -name 'lg-[0-9]*' \) -o -name '*evil*' \
	-o -name '*..*' \) >>"$T/found"
if [ ! -s "$T/found" ]; then
	ok "no file or directory named by a key exists outside DATADIR or in it"
else
	not_ok "no file or directory named by a key exists outside DATADIR or in it"
	diag_file "$T/found"
fi
modes_are_private "after every mount DATADIR is still 0700 and its files 0600"
done_testing
