# fs_backup.sh -- what the backup and restore tests (fs_roundtrip.sh,
# fs_restore_types.sh) share: a source database (the aircraft and webtable
# seeds, plus cells written through the mount: a bytes cell, older versions by
# name), its backups out of the mount with rsync -a, rsync -aX, cp -a, tar and
# tar --xattrs, and `restore`, which replays one into a fresh mount and
# compares.  Sourced after fs_lib.sh, not run.  POSIX sh.

# export DATADIR FILE: every table of DATADIR as JSON lines (unmounted)
export_all() {
	for _t in aircraft webtable; do
		"$SMOLCTL" -d "$1" export --table "$_t" || return 1
	done >"$2" 2>"$T/export.err"
}

# dump DIR FILE: every file under DIR with its mtime, size and checksum: what
# a user sees of every visible version, value and timestamp (and the schema)
dump() {
	(cd "$1" && find . -type f | sort | while IFS= read -r _f; do
		case $_f in
		./*/.families/*) _m=- ;;        # schema files: no timestamp of their own
		*) _m=$(stat -c %Y "$_f") ;;
		esac
		printf '%s %s %s %s\n' "$_f" "$_m" "$(stat -c %s "$_f")" "$(cksum <"$_f")"
	done) >"$2" 2>&1
}

# does the scratch directory keep user.* attributes (for cp -a and -X copies)?
xattr_ok=noxattr
: >"$T/xa" && setfattr -n user.smolfs.type -v i64 "$T/xa" 2>/dev/null && xattr_ok=yes

# make_source: the source database and its plain backups in $P (12 assertions)
make_source() {
	run "$SMOLCTL" -d "$DATADIR" import --create "$S/examples/aircraft.jsonl"
	check "$status" "import the aircraft seed"
	run "$SMOLCTL" -d "$DATADIR" import --create "$S/examples/webtable.jsonl"
	check "$status" "import the webtable seed"
	fs_mount
	sh_run "cd '$MNT' && mkdir aircraft/.families/blob && echo bytes > aircraft/.families/blob/type &&
		mkdir -p 'aircraft/plane#TF-FIR/blob' &&
		printf 'raw\\000bytes' > 'aircraft/plane#TF-FIR/blob/photo' &&
		echo 1699999999000000 > 'aircraft/plane#TF-FIR/blob/photo@1600000000000000' &&
		echo A320 > 'aircraft/plane#TF-FIR/meta/model@1600000000000000'"
	succeeds "through the mount: a bytes family, a bytes cell, and older versions by name"
	orig_src=$DATADIR

	P=$T/plain
	mkdir "$P" "$P/cp"
	if command -v rsync >/dev/null 2>&1; then
		run rsync -a "$MNT/aircraft" "$MNT/webtable" "$P/rsync/"
		succeeds "rsync -a of both tables out of the mount"
		run rsync -aX "$MNT/aircraft" "$MNT/webtable" "$P/rsyncX/"
		succeeds "rsync -aX of both tables out of the mount"
	else
		skip "rsync is not installed" "rsync -a of both tables out of the mount"
		skip "rsync is not installed" "rsync -aX of both tables out of the mount"
	fi
	run cp -a "$MNT/aircraft" "$MNT/webtable" "$P/cp/"
	succeeds "cp -a of both tables out of the mount"
	run tar -C "$MNT" -cf "$P/tables.tar" aircraft webtable
	succeeds "tar -c of both tables out of the mount"
	run tar -C "$MNT" --xattrs -cf "$P/tablesX.tar" aircraft webtable
	succeeds "tar --xattrs -c of both tables out of the mount"
	run cat "$P/cp/aircraft/plane#TF-FIR/meta/miles" "$P/cp/webtable/.families/contents/max_versions"
	out_is "the plain copies hold the cells as text and the schema" <<-'EOF'
	51000000
	3
	EOF
	run stat -c %Y "$P/cp/aircraft/plane#TF-FIR/meta/model@1600000000000000" \
		"$P/cp/aircraft/plane#TF-FIR/meta/model"
	out_is "and the versions' timestamps as mtimes" <<-'EOF'
	1600000000
	1706176800
	EOF
	dump "$MNT" "$T/orig.dump"
	fs_unmount
	export_all "$orig_src" "$T/orig.jsonl"
	check $? "smolctl export of the source tables"
}

# restore NAME DESCRIPTION COMMAND EXPORT: a fresh data directory, mounted;
# COMMAND restores into it (run in the mount); what the mount shows must equal
# the source (files, mtimes, bytes), and with EXPORT=yes (the copy kept the
# user.smolfs.type attribute, so every cell's type) so must `smolctl export`
restore() {
	case $1 in
	rsync*) if ! command -v rsync >/dev/null 2>&1; then
		skip "rsync is not installed" "$2"
		skip "rsync is not installed" "$1: every file, mtime and value is back"
		skip "rsync is not installed" "unmount after the $1 restore"
		[ "$4" = no ] ||
			skip "rsync is not installed" "$1: smolctl export of the restored tables equals the source's"
		return
	fi ;;
	esac
	DATADIR=$T/data-$1
	fs_mount
	sh_run "cd '$MNT' && $3"
	succeeds "$2"
	dump "$MNT" "$T/$1.dump"
	same_files "$T/orig.dump" "$T/$1.dump" "$1: every file, mtime and value is back"
	fs_unmount "unmount after the $1 restore"
	if [ "$4" = yes ]; then
		export_all "$DATADIR" "$T/$1.jsonl"
		same_files "$T/orig.jsonl" "$T/$1.jsonl" "$1: smolctl export of the restored tables equals the source's"
	elif [ "$4" = noxattr ]; then
		skip "$T does not keep user.* attributes" "$1: smolctl export of the restored tables equals the source's"
	fi
}

