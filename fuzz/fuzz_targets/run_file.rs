//! Import runs (docs/FORMAT.md §8.4) read from arbitrary bytes: `RunReader::from_reader`, then
//! every entry to the end, under the chess codec. Tried as given and with the run magic put in
//! front (so the fuzzer spends its time on the model frame, the blocks and the end frame).
//! Nothing may panic; the entries a reader yields before it stops are in strictly increasing
//! (key, position) order, and a reader that reaches the end without an error has yielded as
//! many entries as the end frame says (the reader checks it; here, that it ends at all).
#![no_main]

use bookdb::store::run::RunReader;
use libfuzzer_sys::fuzz_target;

/// Entries read per input at most (a valid run of many blocks is read in full below this).
const MAX_ENTRIES: usize = 1 << 16;

fn read(bytes: Vec<u8>) {
    let Ok(reader) = RunReader::from_reader(
        "fuzz".into(),
        Box::new(std::io::Cursor::new(bytes)),
        bookdb::chess_codec(),
    ) else {
        return;
    };
    let mut last: Option<(u64, Option<Vec<u8>>)> = None;
    for e in reader.take(MAX_ENTRIES) {
        let Ok(e) = e else { return };
        let id = (e.key, e.pos.clone());
        if let Some(prev) = &last {
            assert!(*prev < id, "run entries out of order: {prev:?} then {id:?}");
        }
        last = Some(id);
    }
}

fuzz_target!(|data: &[u8]| {
    read(data.to_vec());
    let mut with_magic = b"BDBRUN02".to_vec();
    with_magic.extend_from_slice(data);
    read(with_magic);
});
