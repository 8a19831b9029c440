#!/bin/bash
# verify of the 7.3M-position book (the large set at --max-ply 400), the binary of main before
# issue 16 (bb6fa48) against this branch's, interleaved, in one run (docs/PERFORMANCE.md,
# "verify (issue 16)"). Usage: benches/verify_side_by_side.sh OLD NEW BOOK [ROUNDS]
# ONE_THREAD=1 adds a run of the new binary on one thread without redb's check.
# The book is only read (verify opens it read-only; redb's check runs on a copy in $TMPDIR).
set -e
OLD=${1:?old binary}; NEW=${2:?new binary}; BOOK=${3:?book}; ROUNDS=${4:-5}
cat "$BOOK" > /dev/null   # into the page cache
for i in $(seq 1 "$ROUNDS"); do
  /usr/bin/time -f "old $i %e s wall %U user %S sys" "$OLD" verify --book "$BOOK" > /dev/null
  /usr/bin/time -f "new $i %e s wall %U user %S sys" "$NEW" verify --book "$BOOK" > /dev/null
  /usr/bin/time -f "new-no-redb-check $i %e s wall %U user %S sys" "$NEW" verify --book "$BOOK" --no-redb-check > /dev/null
  if [ -n "$ONE_THREAD" ]; then
    /usr/bin/time -f "new-1-thread $i %e s wall %U user %S sys" "$NEW" verify --book "$BOOK" --no-redb-check --jobs 1 > /dev/null
  fi
done
