#!/bin/sh
# source-version.sh <dir>: the source a build of <dir> comes from, for
# modinfo's "source" field: "git <commit>[-dirty]". A copy without .git
# (DKMS's, in /usr/src) carries it in .source-version.
d=${1:-.}
if [ -f "$d/.source-version" ]; then
	cat "$d/.source-version"
elif c=$(git -C "$d" rev-parse --short=12 HEAD 2>/dev/null); then
	# Tracked files only; --no-optional-locks keeps a read-only tree read-only.
	dirty=$(git --no-optional-locks -C "$d" status --porcelain --untracked-files=no 2>/dev/null | head -n 1)
	echo "git $c${dirty:+-dirty}"
else
	echo unknown
fi
