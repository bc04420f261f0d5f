#!/bin/sh
# fs_restore_types.sh -- restores that carry the user.smolfs.type attribute
# (cp -a, tar --xattrs) give back every cell with its type: `smolctl export`
# of the restored tables equals the source's.
. "${SMOLFS_SRCDIR:-.}/tests/fs_lib.sh"
. "$S/tests/fs_backup.sh"

plan 20

make_source
restore cp "cp -a into a fresh mount, .families/ first" \
	"for t in aircraft webtable; do mkdir \$t &&
		cp -a '$P/cp/'\$t/.families/. \$t/.families/ &&
		cp -a '$P/cp/'\$t/. \$t/ || exit 1; done" "$xattr_ok"
restore tarX "tar --xattrs -x into a fresh mount, as archived" \
	"tar --xattrs --xattrs-include='user.*' -xf '$P/tablesX.tar'" yes
done_testing
