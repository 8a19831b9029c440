//! zstd decompression with one context per thread, for the decoders of small blocks read on
//! every explorer answer (game blocks, reference blocks): creating a context per block cost
//! ~5 % of an answer with games (`perf`, docs/PERFORMANCE.md "Game heads").

use std::cell::RefCell;

thread_local! {
    static DCTX: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Decompresses one zstd frame into at most `capacity` bytes (an error past it, or for bytes
/// that are not a frame), with this thread's context.
pub fn decompress(frame: &[u8], capacity: usize) -> Result<Vec<u8>, String> {
    DCTX.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_none() {
            *c = Some(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?);
        }
        let d = c.as_mut().ok_or("no zstd context")?;
        d.decompress(frame, capacity).map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn frames_round_trip_and_junk_is_an_error(
            data in proptest::collection::vec(any::<u8>(), 0..2000),
            junk in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let f = zstd::bulk::compress(&data, 3).unwrap();
            prop_assert_eq!(decompress(&f, data.len()).unwrap(), data.clone());
            // The context is reused after an error.
            let _ = decompress(&junk, 100);
            prop_assert_eq!(decompress(&f, data.len()).unwrap(), data);
        }
    }

    #[test]
    fn a_frame_past_the_capacity_is_an_error() {
        let f = zstd::bulk::compress(&[7u8; 100], 3).unwrap();
        assert!(decompress(&f, 99).is_err());
    }
}
