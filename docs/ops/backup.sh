#!/bin/sh
# Backs up a single-file book while it is being served: the copy is taken under the book's
# writer lock (no import, merge or compaction can change the file meanwhile; readers go on),
# verified, then renamed into place.
#   backup.sh BOOK DEST_DIR   (BOOKDB: the bookdb binary, default bookdb on PATH)
set -eu
BOOKDB=${BOOKDB:-bookdb}
book=$1
dest=$2
name=$(basename "$book").$(date -u +%Y%m%dT%H%M%SZ)
flock --wait 3600 "$book.lock" cp -- "$book" "$dest/.$name.tmp"
"$BOOKDB" verify --book "$dest/.$name.tmp" >/dev/null
mv -- "$dest/.$name.tmp" "$dest/$name"
echo "$dest/$name"
