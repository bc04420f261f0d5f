#!/bin/sh
# fs_roundtrip.sh -- backups and restores with rsync -a, rsync -aX, cp -a and
# tar: out of a mount into a plain directory, and from there into a fresh
# mount, which must show every file the source showed with the same mtime and
# bytes (every visible version, value and timestamp, and the schema); the
# rsync -aX copy, which keeps user.smolfs.type, must also give the same
# `smolctl export` (every cell's type too).
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"
. "$S/tests/fs_backup.sh"

plan 25

make_source
restore rsync "rsync -a into a fresh mount, .families/ first" \
	"for t in aircraft webtable; do mkdir \$t &&
		rsync -a '$P/rsync/'\$t/.families/ \$t/.families/ &&
		rsync -a '$P/rsync/'\$t/ \$t/ || exit 1; done" no
restore rsyncX "rsync -aX into a fresh mount, .families/ first" \
	"for t in aircraft webtable; do mkdir \$t &&
		rsync -aX '$P/rsyncX/'\$t/.families/ \$t/.families/ &&
		rsync -aX '$P/rsyncX/'\$t/ \$t/ || exit 1; done" "$xattr_ok"
restore cp "cp -a into a fresh mount, .families/ first" \
	"for t in aircraft webtable; do mkdir \$t &&
		cp -a '$P/cp/'\$t/.families/. \$t/.families/ &&
		cp -a '$P/cp/'\$t/. \$t/ || exit 1; done" no
restore tar "tar -x into a fresh mount, as archived" \
	"tar -xf '$P/tables.tar'" no

done_testing
