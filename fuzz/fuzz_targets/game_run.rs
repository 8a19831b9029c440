//! Game runs (docs/FORMAT.md §8.5) read from arbitrary bytes: `GameRunReader::from_reader`,
//! then every game to the end; tried as given and with the magic put in front (so that the
//! fuzzer spends its time on the frames, the game blocks and the end frame).
//!
//! Checks: no panics; the games a reader yields before it stops are in the game store's
//! order (`gameblock::store_order`).
#![no_main]

use bookdb::store::gameblock::store_order;
use bookdb::store::gamerun::GameRunReader;
use libfuzzer_sys::fuzz_target;

/// Games read per input at most.
const MAX_GAMES: usize = 1 << 16;

fn read(bytes: Vec<u8>) {
    let Ok(reader) = GameRunReader::from_reader("fuzz".into(), Box::new(std::io::Cursor::new(bytes)))
    else {
        return;
    };
    let mut last = None;
    for g in reader.take(MAX_GAMES) {
        let Ok(g) = g else { return };
        if let Some(prev) = &last {
            assert!(
                store_order(prev, &g) != std::cmp::Ordering::Greater,
                "games out of order"
            );
        }
        last = Some(g);
    }
}

fuzz_target!(|data: &[u8]| {
    read(data.to_vec());
    let mut with_magic = b"BDBGAM01".to_vec();
    with_magic.extend_from_slice(data);
    read(with_magic);
});
