#!/bin/sh
# Nightly maintenance of a book: import new PGN archives, verify, compact (weekly).
# Run from cron or bookdb-nightly.service; docs/OPERATIONS.md explains the exit codes.
#   BOOKDB_BOOK     the book (default /var/lib/bookdb/games.book)
#   BOOKDB_ARCHIVE  directory of PGN archives (default /srv/pgn); archives imported before
#                   are recognised by path, size, mtime and inode without being read again
#   BOOKDB_WAIT     seconds to wait for another writer's lock (default 3600)
#   BOOKDB_COMPACT  days of the week to compact on, as `date +%u` numbers (default 7:
#                   Sundays), or `daily` or `never`; between compactions the folding
#                   policy keeps the book's files few and each night's rewrite small
#   BOOKDB          the bookdb binary (default: bookdb on PATH)
set -u
BOOKDB=${BOOKDB:-bookdb}
export BOOKDB_BOOK="${BOOKDB_BOOK:-/var/lib/bookdb/games.book}"
ARCHIVE=${BOOKDB_ARCHIVE:-/srv/pgn}
WAIT=${BOOKDB_WAIT:-3600}
COMPACT=${BOOKDB_COMPACT:-7}
status=0

set --
for f in "$ARCHIVE"/*.pgn "$ARCHIVE"/*.pgn.*; do
    [ -f "$f" ] && set -- "$@" "$f"
done
if [ $# -gt 0 ]; then
    "$BOOKDB" import "$@" --wait="$WAIT" --progress plain
    rc=$?
    case $rc in
        0) ;;
        # Another writer held the book for $WAIT seconds: nothing changed, try next run.
        75) echo "bookdb-nightly: book busy; trying again next run" >&2; exit 75 ;;
        # An input is not PGN (named above): the others were imported; go on, report it.
        1) status=1 ;;
        *) exit $rc ;;
    esac
fi

"$BOOKDB" verify
rc=$?
if [ $rc -ne 0 ]; then
    echo "bookdb-nightly: verify failed (exit $rc); not compacting; see docs/OPERATIONS.md" >&2
    exit $rc
fi

case " $COMPACT " in
    *" daily "*|*" $(date +%u) "*)
        "$BOOKDB" compact --wait="$WAIT" --quiet || exit $? ;;
esac
exit $status
