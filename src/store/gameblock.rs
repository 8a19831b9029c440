//! Game blocks (docs/FORMAT.md §15, draft): a game store's unit of storage, holding a run of
//! games column by column (their ids, then each field's lengths and bytes: the names of all
//! games together, the moves of all games together, ...) in one zstd frame with a crc32. The
//! store knows no game: a game is an id (below 2^48) and a fixed number of opaque fields that
//! the game's layer defines (for chess: the kept tags and the mainline as move ranks,
//! `ops::games`).
//!
//! Block (all integers little-endian):
//! `version u8 (1) | games u32 | fields u8 | raw length u32 | crc32 u32 | zstd frame`, where the
//! crc32 covers the first 10 bytes and the frame, and the frame holds
//! `ids (games × 6 bytes) | per field: games varint lengths, then their bytes`.

use super::varint;

/// The block version this build writes.
pub const GAME_BLOCK_VERSION: u8 = 1;
/// Bytes before the zstd frame.
const HEADER: usize = 14;
/// The most games a block holds (the decoder refuses more: a damaged count cannot make it
/// reserve memory for billions).
pub const MAX_BLOCK_GAMES: usize = 1 << 16;
/// The most raw bytes a block's frame may expand to.
pub const MAX_BLOCK_RAW: usize = 64 << 20;
/// The fields a game store orders its games by, the first of them that holds a date as PGN
/// writes it (`YYYY.MM.DD`, `?` for unknown digits; any other text sorts as undated): for
/// chess `UTCDate`, then `Date`.
pub const DATE_FIELDS: [usize; 2] = [12, 2];
/// The `Date` field (the second of [`DATE_FIELDS`]).
pub const DATE_FIELD: usize = DATE_FIELDS[1];

/// A game's date as a sortable number `yyyymmdd` from the first of [`DATE_FIELDS`] that holds
/// one (unknown parts 0; 0 for an undated game or a game with fewer fields).
pub fn date_key(g: &StoredGame) -> u32 {
    let shaped = |d: &&Vec<u8>| d.len() == 10 && d[4] == b'.' && d[7] == b'.';
    let Some(d) = DATE_FIELDS
        .iter()
        .filter_map(|&i| g.fields.get(i))
        .find(shaped)
    else {
        return 0;
    };
    let part = |r: std::ops::Range<usize>| -> u32 {
        d.get(r)
            .and_then(|b| std::str::from_utf8(b).ok())
            .and_then(|t| t.parse::<u32>().ok())
            .unwrap_or(0)
    };
    if d.len() != 10 || d[4] != b'.' || d[7] != b'.' {
        return 0;
    }
    let (y, m, day) = (part(0..4), part(5..7), part(8..10));
    if y == 0 {
        return 0;
    }
    y * 10_000 + m.min(12) * 100 + day.min(31)
}

/// The order of a game store: by date, then id, then the fields (so that the numbers of a
/// set of games do not depend on the order they were added in).
pub fn store_order(a: &StoredGame, b: &StoredGame) -> std::cmp::Ordering {
    (date_key(a), a.id, &a.fields).cmp(&(date_key(b), b.id, &b.fields))
}

/// Ids are held in 6 bytes.
pub const MAX_GAME_ID: u64 = (1 << 48) - 1;

/// One game as the store holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredGame {
    pub id: u64,
    pub fields: Vec<Vec<u8>>,
}

/// A game block that does not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GameBlockError {
    #[error("game block truncated ({0} bytes)")]
    Truncated(usize),
    #[error("game block version {0} is not one this build reads")]
    Version(u8),
    #[error("game block checksum mismatch: stored {stored:08x}, computed {computed:08x}")]
    Checksum { stored: u32, computed: u32 },
    #[error("game block claims {0} games, more than a block holds")]
    TooManyGames(u64),
    #[error("game block claims {0} raw bytes, more than a block holds")]
    TooLarge(u64),
    #[error("game block payload does not decompress: {0}")]
    Zstd(String),
    #[error("game block payload: {0}")]
    Payload(&'static str),
}

/// Encodes games into one block (every game with the same number of fields, ids at most
/// [`MAX_GAME_ID`]; at most [`MAX_BLOCK_GAMES`] games).
pub fn encode(games: &[StoredGame], level: i32) -> std::io::Result<Vec<u8>> {
    let invalid = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, m.to_string());
    let nfields = games.first().map_or(0, |g| g.fields.len());
    if games.len() > MAX_BLOCK_GAMES || nfields > usize::from(u8::MAX) {
        return Err(invalid("too many games or fields for one block"));
    }
    if games
        .iter()
        .any(|g| g.fields.len() != nfields || g.id > MAX_GAME_ID)
    {
        return Err(invalid(
            "games with different field counts or an id past 48 bits",
        ));
    }
    let mut raw = Vec::new();
    for g in games {
        raw.extend_from_slice(&g.id.to_le_bytes()[..6]);
    }
    for f in 0..nfields {
        for g in games {
            varint::put(&mut raw, g.fields[f].len() as u64);
        }
        for g in games {
            raw.extend_from_slice(&g.fields[f]);
        }
    }
    if raw.len() > MAX_BLOCK_RAW {
        return Err(invalid("block past its raw size limit"));
    }
    let frame = zstd::bulk::compress(&raw, level)?;
    let mut out = Vec::with_capacity(HEADER + frame.len());
    out.push(GAME_BLOCK_VERSION);
    out.extend_from_slice(&(games.len() as u32).to_le_bytes());
    out.push(nfields as u8);
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&out);
    h.update(&frame);
    out.extend_from_slice(&h.finalize().to_le_bytes());
    out.extend_from_slice(&frame);
    Ok(out)
}

/// Decodes a block written by [`encode`]; every damage is an error, never a panic.
pub fn decode(bytes: &[u8]) -> Result<Vec<StoredGame>, GameBlockError> {
    if bytes.len() < HEADER {
        return Err(GameBlockError::Truncated(bytes.len()));
    }
    let u32_at =
        |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    if bytes[0] != GAME_BLOCK_VERSION {
        return Err(GameBlockError::Version(bytes[0]));
    }
    let (n, nfields, raw_len, stored) = (
        u32_at(1) as usize,
        usize::from(bytes[5]),
        u32_at(6) as usize,
        u32_at(10),
    );
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..10]);
    h.update(&bytes[HEADER..]);
    let computed = h.finalize();
    if computed != stored {
        return Err(GameBlockError::Checksum { stored, computed });
    }
    if n > MAX_BLOCK_GAMES {
        return Err(GameBlockError::TooManyGames(n as u64));
    }
    if raw_len > MAX_BLOCK_RAW {
        return Err(GameBlockError::TooLarge(raw_len as u64));
    }
    let raw = zstd::bulk::decompress(&bytes[HEADER..], raw_len)
        .map_err(|e| GameBlockError::Zstd(e.to_string()))?;
    if raw.len() != raw_len {
        return Err(GameBlockError::Payload(
            "raw length differs from the header's",
        ));
    }
    let ids_end = n
        .checked_mul(6)
        .filter(|&e| e <= raw.len())
        .ok_or(GameBlockError::Payload("ids past the end"))?;
    let mut games: Vec<StoredGame> = raw[..ids_end]
        .chunks_exact(6)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..6].copy_from_slice(c);
            StoredGame {
                id: u64::from_le_bytes(b),
                fields: Vec::new(),
            }
        })
        .collect();
    let mut at = ids_end;
    let mut lens = Vec::with_capacity(n);
    for _ in 0..nfields {
        lens.clear();
        for _ in 0..n {
            let l = varint::get(&raw, &mut at).ok_or(GameBlockError::Payload("bad length"))?;
            lens.push(usize::try_from(l).map_err(|_| GameBlockError::Payload("bad length"))?);
        }
        for (g, &l) in games.iter_mut().zip(&lens) {
            let end = at
                .checked_add(l)
                .filter(|&e| e <= raw.len())
                .ok_or(GameBlockError::Payload("field past the end"))?;
            g.fields.push(raw[at..end].to_vec());
            at = end;
        }
    }
    if at != raw.len() {
        return Err(GameBlockError::Payload("trailing bytes"));
    }
    Ok(games)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_games() -> impl Strategy<Value = Vec<StoredGame>> {
        (0usize..5).prop_flat_map(|nf| {
            proptest::collection::vec(
                (
                    0..=MAX_GAME_ID,
                    proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), nf),
                )
                    .prop_map(|(id, fields)| StoredGame { id, fields }),
                0..50,
            )
        })
    }

    proptest! {
        #[test]
        fn blocks_round_trip(games in arb_games()) {
            let b = encode(&games, 3).unwrap();
            prop_assert_eq!(decode(&b).unwrap(), games);
        }

        #[test]
        fn junk_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn any_flipped_bit_is_an_error(games in arb_games(), at in any::<usize>(), bit in 0u8..8) {
            let mut b = encode(&games, 3).unwrap();
            let i = at % b.len();
            b[i] ^= 1 << bit;
            prop_assert!(decode(&b).is_err());
        }
    }

    #[test]
    fn encode_refuses_what_it_cannot_store() {
        let g = |id, nf| StoredGame {
            id,
            fields: vec![vec![]; nf],
        };
        assert!(encode(&[g(MAX_GAME_ID + 1, 1)], 3).is_err());
        assert!(encode(&[g(1, 1), g(2, 2)], 3).is_err());
        assert_eq!(decode(&encode(&[], 3).unwrap()).unwrap(), vec![]);
    }
}
