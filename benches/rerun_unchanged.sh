#!/bin/bash
# Re-run of an import whose inputs the book already holds, before/after the file identity of
# issue 18 (docs/PERFORMANCE.md): /tmp/bookdb-before is a build of 88e9a94, /tmp/bookdb-after
# of the ops branch; /tmp/perf/large-136k.pgn is the large set decompressed.
set -e
cd /tmp/perf
Z=/work/shared/data/pgn/large-136k.pgn.zst
P=/tmp/perf/large-136k.pgn
for which in before after; do
  rm -f $which.db $which.db.lock
  /tmp/bookdb-$which import $Z $P --book $which.db --quiet
done
for i in 1 2 3 4 5 6 7; do
  for which in before after; do
    /usr/bin/time -f "$which %e s wall %U user %S sys" /tmp/bookdb-$which import $Z $P --book $which.db --quiet
  done
  /usr/bin/time -f "after--rehash %e s wall %U user %S sys" /tmp/bookdb-after import $Z $P --book after.db --quiet --rehash
done
