#!/bin/sh
# Generate configure and the Makefile templates.  automake's TAP driver is
# taken from the installed automake rather than kept in the repository.
set -e
cd "$(dirname "$0")"
mkdir -p build-aux m4
autoreconf -fi
cp -f "$(automake --print-libdir)/tap-driver.sh" build-aux/tap-driver.sh
