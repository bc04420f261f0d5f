#!/bin/sh
# examples/demo.sh [DATADIR [MOUNTPOINT]] -- the seeds' tables (aircraft,
# webtable, buses), loaded with examples/load-seeds.sh and mounted with
# smolfs, with a few ls and cat lines to show the tree.  The mount stays up;
# the last line says how to take it down.  Run from the build directory (it
# uses ./smolfs and ./smolctl, else those on PATH).  Defaults:
# /tmp/smolfs-demo and /tmp/smolfs-mnt.
set -eu
data=${1:-/tmp/smolfs-demo}
mnt=${2:-/tmp/smolfs-mnt}
here=$(cd "$(dirname "$0")" && pwd)
if [ -x ./smolfs ]; then fs=./smolfs; else fs=smolfs; fi
if [ -x ./smolctl ]; then SMOLCTL=./smolctl; else SMOLCTL=smolctl; fi
export SMOLCTL

# a mount left by an earlier run holds the data directory: take it down first
if awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts; then
	fusermount3 -u "$mnt"
	sleep 1
fi
"$here/load-seeds.sh" "$data" >/dev/null 2>&1 || "$here/load-seeds.sh" "$data"
mkdir -p "$mnt"
"$fs" "$data" "$mnt"

show() { # show COMMAND...: the command as typed, then what it prints
	echo "\$ $*"
	"$@"
}
cd "$mnt"
show ls
show ls aircraft
show ls 'aircraft/.prefix/flight#TF-FIR#2024-01-'
show ls 'aircraft/plane#TF-FIR/meta'
show cat 'aircraft/plane#TF-FIR/meta/model' 'aircraft/plane#TF-FIR/meta/miles'
show ls webtable/com.cnn.www/contents
show cat 'buses/STC#22#173/loc/lat'
show getfattr --only-values -n user.smolfs.type 'buses/STC#22#173/loc/lat'
echo
echo
echo "$data is mounted at $mnt: try ls, cat, echo, mkdir and rm there (man -l man/smolfs.1)."
echo "Unmount with: fusermount3 -u $mnt"
