//! The block container: the 24-byte header, the checksum, sealing a built payload (section A
//! compressed or not, then section B) and opening a stored block (checksum verified, section A
//! decompressed).

use super::build::Payload;
use super::decompress::Decompressors;
use super::{BLOCK_VERSION, BLOCK_VERSION_CELLS, BLOCK_VERSION_GAME_CELLS};
use crate::store::error::Corruption;

pub const HEADER_LEN: usize = 24;
/// Largest raw payload a reader accepts (guards allocations against corrupt headers).
pub const MAX_RAW_LEN: usize = 64 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None = 0,
    Zstd = 1,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub version: u8,
    pub compression: Compression,
    /// zstd dictionary of section A (0 = none).
    pub dict_id: u16,
    /// Position model of section B (0 = identity).
    pub model_id: u16,
    pub count: u32,
    /// Section A length once decompressed.
    pub raw_len: u32,
    /// Section A length as stored.
    pub a_len: u32,
    pub crc: u32,
}

impl BlockHeader {
    pub(crate) fn parse(block_key: u64, bytes: &[u8]) -> Result<BlockHeader, Corruption> {
        let bad = |reason: String| Corruption::Header { block_key, reason };
        if bytes.len() < HEADER_LEN {
            return Err(bad(format!(
                "block is {} bytes, shorter than its header",
                bytes.len()
            )));
        }
        let u32_at =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let h = BlockHeader {
            version: bytes[0],
            compression: match bytes[1] {
                0 => Compression::None,
                1 => Compression::Zstd,
                c => return Err(bad(format!("unknown compression id {c}"))),
            },
            dict_id: u16::from_le_bytes([bytes[2], bytes[3]]),
            model_id: u16::from_le_bytes([bytes[4], bytes[5]]),
            count: u32_at(8),
            raw_len: u32_at(12),
            a_len: u32_at(16),
            crc: u32_at(20),
        };
        if !matches!(
            h.version,
            BLOCK_VERSION | BLOCK_VERSION_CELLS | BLOCK_VERSION_GAME_CELLS
        ) {
            return Err(bad(format!("unknown block version {}", h.version)));
        }
        if bytes[6] != 0 || bytes[7] != 0 {
            return Err(bad("reserved header bytes are not zero".into()));
        }
        if h.a_len as usize > bytes.len() - HEADER_LEN {
            return Err(bad(format!(
                "section A length {} exceeds the block ({} bytes)",
                h.a_len,
                bytes.len()
            )));
        }
        Ok(h)
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.push(self.version);
        out.push(self.compression as u8);
        out.extend_from_slice(&self.dict_id.to_le_bytes());
        out.extend_from_slice(&self.model_id.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.raw_len.to_le_bytes());
        out.extend_from_slice(&self.a_len.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
    }
}

fn block_crc(header: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header);
    h.update(payload);
    h.finalize()
}

/// Seals a payload into a block: header, (compressed) section A, section B, checksummed.
pub fn seal(
    p: &Payload,
    model_id: u16,
    compressor: Option<(&mut zstd::bulk::Compressor<'_>, u16)>,
) -> std::io::Result<Vec<u8>> {
    let (compression, dict_id, a) = match compressor {
        Some((c, dict_id)) => (Compression::Zstd, dict_id, c.compress(&p.a)?),
        None => (Compression::None, 0, p.a.clone()),
    };
    // The header's fields are u32: a block past them is refused, never truncated.
    let field = |n: usize, what: &str| {
        u32::try_from(n).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("a block's {what} of {n} is past the format's u32 limit"),
            )
        })
    };
    let mut header = BlockHeader {
        version: p.version,
        compression,
        dict_id,
        model_id,
        count: field(p.count, "entry count")?,
        raw_len: field(p.a.len(), "section A length")?,
        a_len: field(a.len(), "compressed section A length")?,
        crc: 0,
    };
    let mut out = Vec::with_capacity(HEADER_LEN + a.len() + p.b.len());
    header.write(&mut out);
    out.truncate(HEADER_LEN - 4);
    out.extend_from_slice(&a);
    out.extend_from_slice(&p.b);
    header.crc = block_crc(&out[..HEADER_LEN - 4], &out[HEADER_LEN - 4..]);
    let tail = out.split_off(HEADER_LEN - 4);
    out.extend_from_slice(&header.crc.to_le_bytes());
    out.extend_from_slice(&tail);
    Ok(out)
}

/// An opened block: checksum verified, section A decompressed, section B borrowed.
pub struct OpenBlock<'a> {
    pub header: BlockHeader,
    pub a: Vec<u8>,
    pub b: &'a [u8],
}

/// Checks the checksum and decompresses section A.
pub fn open_block<'a>(
    block_key: u64,
    bytes: &'a [u8],
    dec: &dyn Decompressors,
) -> Result<OpenBlock<'a>, Corruption> {
    let h = BlockHeader::parse(block_key, bytes)?;
    let found = block_crc(&bytes[..HEADER_LEN - 4], &bytes[HEADER_LEN..]);
    if found != h.crc {
        return Err(Corruption::Checksum {
            block_key,
            expected: h.crc,
            found,
        });
    }
    let raw_len = h.raw_len as usize;
    if raw_len > MAX_RAW_LEN {
        return Err(Corruption::Header {
            block_key,
            reason: format!("raw length {raw_len} exceeds the {MAX_RAW_LEN}-byte limit"),
        });
    }
    let bad = |reason: String| Corruption::Payload { block_key, reason };
    let a_end = HEADER_LEN + h.a_len as usize;
    let stored_a = &bytes[HEADER_LEN..a_end];
    let a = match h.compression {
        Compression::None => stored_a.to_vec(),
        Compression::Zstd => dec
            .decompress(h.dict_id, stored_a, raw_len)
            .map_err(|e| bad(format!("zstd: {e}")))?,
    };
    if a.len() != raw_len {
        return Err(bad(format!(
            "section A is {} bytes, header says {raw_len}",
            a.len()
        )));
    }
    Ok(OpenBlock {
        header: h,
        a,
        b: &bytes[a_end..],
    })
}
