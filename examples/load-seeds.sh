#!/bin/sh
# examples/load-seeds.sh DATADIR -- load the seeds' example tables (aircraft,
# webtable, buses) into a smolfs database with smolctl and show a prefix scan
# of each.  SMOLCTL names the binary (default: ./smolctl, then smolctl).
set -eu
dir=${1:?usage: load-seeds.sh DATADIR}
here=$(cd "$(dirname "$0")" && pwd)
ctl=${SMOLCTL:-}
if [ -z "$ctl" ]; then
	if [ -x ./smolctl ]; then ctl=./smolctl; else ctl=smolctl; fi
fi
set -x
"$ctl" -d "$dir" import --create "$here/aircraft.jsonl"
"$ctl" -d "$dir" import --create "$here/webtable.jsonl"
"$ctl" -d "$dir" create-table buses 2>/dev/null || true
"$ctl" -d "$dir" add-family buses loc --type f64 --max-versions 1 2>/dev/null || true
"$ctl" -d "$dir" import --table buses "$here/buses.json"
"$ctl" -d "$dir" scan aircraft --prefix 'flight#TF-FIR#2024-01-'
"$ctl" -d "$dir" scan webtable --prefix 'com.github/' --versions 2
"$ctl" -d "$dir" scan buses --prefix 'STC#22#'
"$ctl" -d "$dir" describe webtable
