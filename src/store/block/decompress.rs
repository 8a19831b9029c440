//! Section A decompression: the zstd contexts (one per dictionary) a block reader supplies.

use crate::store::error::DecompressError;

/// Reusable zstd decompression contexts, one per dictionary.
#[doc(hidden)]
pub trait Decompressors {
    fn decompress(
        &self,
        dict_id: u16,
        src: &[u8],
        capacity: usize,
    ) -> Result<Vec<u8>, DecompressError>;
}

/// No dictionaries; a fresh context per call (tests, tools).
#[doc(hidden)]
pub struct PlainDecompressor;

impl Decompressors for PlainDecompressor {
    fn decompress(
        &self,
        dict_id: u16,
        src: &[u8],
        capacity: usize,
    ) -> Result<Vec<u8>, DecompressError> {
        if dict_id != 0 {
            return Err(DecompressError::MissingDictionary(dict_id));
        }
        zstd::bulk::decompress(src, capacity).map_err(DecompressError::Zstd)
    }
}
