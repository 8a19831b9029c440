#!/bin/sh
# Backs up a live book while it is being served: its base, manifest and delta segments
# (docs/FORMAT.md §10) are copied under the book's writer lock (no import, merge or compaction
# publishes meanwhile; readers go on), verified, then the copy's directory is renamed into place.
#   backup.sh BOOK DEST_DIR   (BOOKDB: the bookdb binary, default bookdb on PATH)
# Prints the path of the copied book (DEST_DIR/<name>.<time>/<name>).
set -eu
BOOKDB=${BOOKDB:-bookdb}
book=$1
dest=$2
base=$(basename "$book")
name=$base.$(date -u +%Y%m%dT%H%M%SZ)
mkdir -- "$dest/.$name.tmp"
flock --wait 3600 "$book.lock" sh -c '
  cp -p -- "$1" "$2/"
  for f in "$1".live "$1".seg-*; do [ -e "$f" ] && cp -p -- "$f" "$2/"; done
  true' copy "$book" "$dest/.$name.tmp"
"$BOOKDB" verify --book "$dest/.$name.tmp/$base" >/dev/null
mv -- "$dest/.$name.tmp" "$dest/$name"
echo "$dest/$name/$base"
