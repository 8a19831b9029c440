#!/bin/sh
# A fake UCI engine for tests/analyse.rs. It shakes hands like an engine, then misbehaves
# on `go` as $FAKE_MODE says: crash (dies with a last word), hang (never answers), babble
# (says something that is not UCI), chatter (writes info lines for ever, never a bestmove),
# flaky (the first process crashes, later ones are $FAKE_ENGINE: state in the file
# $FAKE_STATE).
if [ "$FAKE_MODE" = flaky ]; then
    if [ -e "$FAKE_STATE" ]; then
        exec "$FAKE_ENGINE"
    fi
    : > "$FAKE_STATE"
    FAKE_MODE=crash
fi
while read -r line; do
    case "$line" in
        uci) echo "id name Fake $FAKE_MODE"; echo uciok ;;
        isready) echo readyok ;;
        go*)
            case "$FAKE_MODE" in
                crash) echo "info string about to fall over"; echo "fatal: segmentation fault" >&2; exit 139 ;;
                hang) echo "info string thinking forever"; sleep 3600 ;;
                babble) echo "The quick brown fox jumps over the lazy dog" ;;
                chatter) yes "info string still thinking" ;;
            esac ;;
        quit) exit 0 ;;
    esac
done
