//! Game blocks (docs/FORMAT.md §15.1): a game store's unit of storage, holding a run of
//! games column by column (their ids, then each field's lengths and bytes: the names of all
//! games together, the moves of all games together, ...) with a crc32. The store knows no
//! game: a game is an id (below 2^48) and a fixed number of opaque fields that the game's layer
//! defines (for chess: the kept tags and the mainline as move ranks, `ops::games`).
//!
//! Block version 2 (all integers little-endian):
//! `version u8 (2) | games u32 | fields u8 | split u8 | head raw u32 | head frame bytes u32 |
//! body raw u32 | crc32 u32 | head frame | body frame`, where the crc32 covers the first 19
//! bytes and both frames. The head frame (zstd) holds `ids (games × 6 bytes) | per field below
//! split: games varint lengths, then their bytes`; the body frame, the fields from split on,
//! likewise (absent, and body raw 0, when split = fields). An explorer answer reads the heads
//! (names, ratings, dates) and never decompresses the moves.
//!
//! Version 1 (format 6 and 7 books; still read): `version u8 (1) | games u32 | fields u8 |
//! raw length u32 | crc32 u32 | zstd frame` with every field in the one frame.

use super::varint;

/// The block version this build writes (version 1, one frame, is still read).
pub const GAME_BLOCK_VERSION: u8 = 2;
/// Bytes before the zstd frames.
const HEADER: usize = 23;
/// Bytes before the zstd frame of a version-1 block.
const V1_HEADER: usize = 14;
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

/// Whether `a` and `b` are one game counted to different depths: the same date, id and
/// fields but for field `plies` (the counted plies, [`crate::store::PositionCodec::counted_plies_field`]),
/// which differs. Such records are adjacent in the [`store_order`].
pub fn same_game_but_plies(a: &StoredGame, b: &StoredGame, plies: Option<usize>) -> bool {
    let Some(p) = plies else { return false };
    a.id == b.id
        && a.fields.len() == b.fields.len()
        && p < a.fields.len()
        && a.fields[p] != b.fields[p]
        && a.fields
            .iter()
            .zip(&b.fields)
            .enumerate()
            .all(|(i, (x, y))| i == p || x == y)
}

/// The plies a record counted, from its field `plies` (a varint); 0 when unreadable.
pub fn counted_plies_of(g: &StoredGame, plies: usize) -> u64 {
    let Some(f) = g.fields.get(plies) else {
        return 0;
    };
    let mut at = 0;
    match crate::store::varint::get(f, &mut at) {
        Some(v) if at == f.len() => v,
        _ => 0,
    }
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

/// Encodes games into one block with every field in one frame (version 2, no body frame).
pub fn encode(games: &[StoredGame], level: i32) -> std::io::Result<Vec<u8>> {
    let nfields = games.first().map_or(0, |g| g.fields.len());
    encode_split(games, level, nfields)
}

/// The raw bytes of a frame: for each field of `fields`, the games' varint lengths, then their
/// bytes (after the ids, when `ids`).
fn columns(games: &[StoredGame], fields: std::ops::Range<usize>, ids: bool) -> Vec<u8> {
    let mut raw = Vec::new();
    if ids {
        for g in games {
            raw.extend_from_slice(&g.id.to_le_bytes()[..6]);
        }
    }
    for f in fields {
        for g in games {
            varint::put(&mut raw, g.fields[f].len() as u64);
        }
        for g in games {
            raw.extend_from_slice(&g.fields[f]);
        }
    }
    raw
}

/// Encodes games into one block (every game with the same number of fields, ids at most
/// [`MAX_GAME_ID`]; at most [`MAX_BLOCK_GAMES`] games): the ids and fields `..split` in the
/// head frame, fields `split..` in the body frame (absent when there are none), so that a
/// reader of the heads decompresses only them.
pub fn encode_split(games: &[StoredGame], level: i32, split: usize) -> std::io::Result<Vec<u8>> {
    let invalid = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, m.to_string());
    let nfields = games.first().map_or(0, |g| g.fields.len());
    if games.len() > MAX_BLOCK_GAMES || nfields > usize::from(u8::MAX) || split > nfields {
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
    let head = columns(games, 0..split, true);
    let body = columns(games, split..nfields, false);
    if head.len() + body.len() > MAX_BLOCK_RAW {
        return Err(invalid("block past its raw size limit"));
    }
    let head_frame = zstd::bulk::compress(&head, level)?;
    let body_frame = if body.is_empty() {
        Vec::new()
    } else {
        zstd::bulk::compress(&body, level)?
    };
    let mut out = Vec::with_capacity(HEADER + head_frame.len() + body_frame.len());
    out.push(GAME_BLOCK_VERSION);
    out.extend_from_slice(&(games.len() as u32).to_le_bytes());
    out.push(nfields as u8);
    out.push(split as u8);
    out.extend_from_slice(&(head.len() as u32).to_le_bytes());
    out.extend_from_slice(&(head_frame.len() as u32).to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&out);
    h.update(&head_frame);
    h.update(&body_frame);
    out.extend_from_slice(&h.finalize().to_le_bytes());
    out.extend_from_slice(&head_frame);
    out.extend_from_slice(&body_frame);
    Ok(out)
}

/// Decodes a block written by [`encode`] or [`encode_split`] (or a version-1 block): every
/// game with all its fields; every damage is an error, never a panic.
pub fn decode(bytes: &[u8]) -> Result<Vec<StoredGame>, GameBlockError> {
    let v = BlockView::open(bytes, false)?;
    Ok((0..v.len()).map(|i| v.game(i)).collect())
}

/// zstd-decompresses a frame that must expand to exactly `raw_len` bytes.
fn unzstd(frame: &[u8], raw_len: usize) -> Result<Vec<u8>, GameBlockError> {
    let raw = super::unzstd::decompress(frame, raw_len).map_err(GameBlockError::Zstd)?;
    if raw.len() != raw_len {
        return Err(GameBlockError::Payload(
            "raw length differs from the header's",
        ));
    }
    Ok(raw)
}

/// Checks a sealed block's version and crc32 alone, without decompressing it: what copying a
/// store as it is needs, so that a damaged block is not carried into a new file.
pub fn check_sealed(bytes: &[u8]) -> Result<(), GameBlockError> {
    let u32_at = |i: usize| -> Result<u32, GameBlockError> {
        bytes
            .get(i..i + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or(GameBlockError::Truncated(bytes.len()))
    };
    // (the crc's offset, the header's length: the crc covers what is before and after it)
    let (at, header) = match bytes.first() {
        None => return Err(GameBlockError::Truncated(0)),
        Some(1) => (10, V1_HEADER),
        Some(&GAME_BLOCK_VERSION) => (19, HEADER),
        Some(&v) => return Err(GameBlockError::Version(v)),
    };
    if bytes.len() < header {
        return Err(GameBlockError::Truncated(bytes.len()));
    }
    let stored = u32_at(at)?;
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..at]);
    h.update(&bytes[header..]);
    check_crc(stored, h.finalize())
}

/// A decoded block, its fields kept as offsets into the decompressed frames: a game is
/// materialized only when asked for ([`BlockView::game`]). Opened for its heads only, the body
/// frame is neither decompressed nor checked beyond the block's crc32.
#[derive(Debug)]
pub struct BlockView {
    ids: Vec<u64>,
    nfields: usize,
    /// The fields present: all, or `split` (the heads).
    present: usize,
    split: usize,
    head: Vec<u8>,
    body: Vec<u8>,
    /// Per present field, per game, its bytes' span (in the head frame for fields below
    /// `split`, else in the body frame).
    spans: Vec<(u32, u32)>,
}

impl BlockView {
    /// Opens a block; with `heads_only`, only the ids and the fields below its split are
    /// read (a version-1 block has all of them in one frame, and gives them all).
    pub fn open(bytes: &[u8], heads_only: bool) -> Result<BlockView, GameBlockError> {
        let Some(&version) = bytes.first() else {
            return Err(GameBlockError::Truncated(0));
        };
        let u32_at = |i: usize| -> Result<u32, GameBlockError> {
            bytes
                .get(i..i + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .ok_or(GameBlockError::Truncated(bytes.len()))
        };
        // (games, fields, split, head raw, head frame, body raw, body frame)
        let (n, nfields, split, head_raw, head_frame, body_raw, body_frame) = match version {
            1 => {
                check_sealed(bytes)?;
                let nfields = usize::from(bytes[5]);
                let raw = u32_at(6)? as usize;
                (
                    u32_at(1)? as usize,
                    nfields,
                    nfields,
                    raw,
                    &bytes[V1_HEADER..],
                    0,
                    &bytes[bytes.len()..],
                )
            }
            GAME_BLOCK_VERSION => {
                check_sealed(bytes)?;
                let (nfields, split) = (usize::from(bytes[5]), usize::from(bytes[6]));
                if split > nfields {
                    return Err(GameBlockError::Payload("split past the fields"));
                }
                let head_len = u32_at(11)? as usize;
                let rest = &bytes[HEADER..];
                if head_len > rest.len() {
                    return Err(GameBlockError::Payload("head frame past the end"));
                }
                let body_raw = u32_at(15)? as usize;
                if (body_raw == 0) != (head_len == rest.len()) {
                    return Err(GameBlockError::Payload(
                        "body frame and its length disagree",
                    ));
                }
                (
                    u32_at(1)? as usize,
                    nfields,
                    split,
                    u32_at(7)? as usize,
                    &rest[..head_len],
                    body_raw,
                    &rest[head_len..],
                )
            }
            v => return Err(GameBlockError::Version(v)),
        };
        if n > MAX_BLOCK_GAMES {
            return Err(GameBlockError::TooManyGames(n as u64));
        }
        if head_raw > MAX_BLOCK_RAW || body_raw > MAX_BLOCK_RAW {
            return Err(GameBlockError::TooLarge(head_raw.max(body_raw) as u64));
        }
        let head = unzstd(head_frame, head_raw)?;
        let with_body = !heads_only && split < nfields;
        let body = if with_body {
            unzstd(body_frame, body_raw)?
        } else {
            Vec::new()
        };
        let ids_end = n
            .checked_mul(6)
            .filter(|&e| e <= head.len())
            .ok_or(GameBlockError::Payload("ids past the end"))?;
        let ids = head[..ids_end]
            .chunks_exact(6)
            .map(|c| {
                let mut b = [0u8; 8];
                b[..6].copy_from_slice(c);
                u64::from_le_bytes(b)
            })
            .collect();
        let present = if with_body { nfields } else { split };
        let mut spans = Vec::with_capacity(present * n);
        let mut at = ids_end;
        columns_at(&head, &mut at, n, split, &mut spans)?;
        if at != head.len() {
            return Err(GameBlockError::Payload("trailing bytes"));
        }
        if with_body {
            let mut at = 0;
            columns_at(&body, &mut at, n, nfields - split, &mut spans)?;
            if at != body.len() {
                return Err(GameBlockError::Payload("trailing bytes"));
            }
        }
        Ok(BlockView {
            ids,
            nfields,
            present,
            split,
            head,
            body,
            spans,
        })
    }

    /// Games in the block.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether every field was read (not only the heads).
    pub fn complete(&self) -> bool {
        self.present == self.nfields
    }

    /// Game `i` (below [`BlockView::len`]) with the fields read: all, or the heads.
    pub fn game(&self, i: usize) -> StoredGame {
        let n = self.ids.len();
        let fields = (0..self.present)
            .map(|f| {
                let frame = if f < self.split {
                    &self.head
                } else {
                    &self.body
                };
                let (a, b) = self.spans[f * n + i];
                frame[a as usize..b as usize].to_vec()
            })
            .collect();
        StoredGame {
            id: self.ids[i],
            fields,
        }
    }
}

fn check_crc(stored: u32, computed: u32) -> Result<(), GameBlockError> {
    if computed != stored {
        return Err(GameBlockError::Checksum { stored, computed });
    }
    Ok(())
}

/// Reads `fields` columns of `n` games from `raw` at `at`: pushes each field's games' spans.
fn columns_at(
    raw: &[u8],
    at: &mut usize,
    n: usize,
    fields: usize,
    spans: &mut Vec<(u32, u32)>,
) -> Result<(), GameBlockError> {
    let mut lens = Vec::with_capacity(n);
    for _ in 0..fields {
        lens.clear();
        for _ in 0..n {
            let l = varint::get(raw, at).ok_or(GameBlockError::Payload("bad length"))?;
            lens.push(usize::try_from(l).map_err(|_| GameBlockError::Payload("bad length"))?);
        }
        for &l in &lens {
            let end = at
                .checked_add(l)
                .filter(|&e| e <= raw.len())
                .ok_or(GameBlockError::Payload("field past the end"))?;
            spans.push((*at as u32, end as u32));
            *at = end;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One game counted to different depths is known as one (adjacent in the store's order,
    /// the deeper one read back); any other difference makes them two games.
    #[test]
    fn same_game_but_plies_needs_everything_else_equal() {
        let g = |id: u64, date: &str, plies: u64| {
            let mut p = Vec::new();
            crate::store::varint::put(&mut p, plies);
            StoredGame {
                id,
                fields: vec![
                    b"Event".to_vec(),
                    date.as_bytes().to_vec(),
                    vec![1, 2, 3],
                    p,
                ],
            }
        };
        let (a, b) = (g(7, "2020.01.02", 20), g(7, "2020.01.02", 300));
        assert!(same_game_but_plies(&a, &b, Some(3)));
        assert!(same_game_but_plies(&b, &a, Some(3)));
        assert_eq!(
            (counted_plies_of(&a, 3), counted_plies_of(&b, 3)),
            (20, 300)
        );
        assert!(
            !same_game_but_plies(&a, &a, Some(3)),
            "equal records are equal, not copies"
        );
        assert!(!same_game_but_plies(&a, &b, None));
        assert!(!same_game_but_plies(&a, &b, Some(2)));
        assert!(!same_game_but_plies(&a, &g(8, "2020.01.02", 300), Some(3)));
        assert!(!same_game_but_plies(&a, &g(7, "2020.01.03", 300), Some(3)));
        assert!(!same_game_but_plies(&a, &b, Some(9)));
        assert_eq!(counted_plies_of(&a, 9), 0);
    }

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

        /// The crc check alone (what a store's copy makes) passes every sealed block, version 1
        /// or 2, and fails it at any flipped bit or any truncation; junk never panics it.
        #[test]
        fn a_sealed_block_is_checked_without_decoding(
            games in arb_games(),
            at in any::<usize>(),
            bit in 0u8..8,
            junk in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            for b in [encode(&games, 3).unwrap(), encode_v1(&games)] {
                prop_assert!(check_sealed(&b).is_ok());
                let mut bad = b.clone();
                bad[at % b.len()] ^= 1 << bit;
                prop_assert!(check_sealed(&bad).is_err());
                prop_assert!(check_sealed(&b[..at % b.len()]).is_err());
            }
            let _ = check_sealed(&junk);
        }
    }

    /// A version-1 block as format 6 and 7 wrote it (one frame with every field).
    fn encode_v1(games: &[StoredGame]) -> Vec<u8> {
        let nfields = games.first().map_or(0, |g| g.fields.len());
        let raw = columns(games, 0..nfields, true);
        let frame = zstd::bulk::compress(&raw, 3).unwrap();
        let mut out = vec![1u8];
        out.extend_from_slice(&(games.len() as u32).to_le_bytes());
        out.push(nfields as u8);
        out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        let mut h = crc32fast::Hasher::new();
        h.update(&out);
        h.update(&frame);
        out.extend_from_slice(&h.finalize().to_le_bytes());
        out.extend_from_slice(&frame);
        out
    }

    fn heads(games: &[StoredGame], split: usize) -> Vec<StoredGame> {
        games
            .iter()
            .map(|g| StoredGame {
                id: g.id,
                fields: g.fields[..split].to_vec(),
            })
            .collect()
    }

    fn opened(b: &[u8], heads_only: bool) -> Vec<StoredGame> {
        let v = BlockView::open(b, heads_only).unwrap();
        (0..v.len()).map(|i| v.game(i)).collect()
    }

    proptest! {
        #[test]
        fn split_blocks_round_trip_and_give_their_heads(games in arb_games(), cut in any::<usize>()) {
            let nf = games.first().map_or(0, |g| g.fields.len());
            let split = cut % (nf + 1);
            let b = encode_split(&games, 3, split).unwrap();
            prop_assert_eq!(decode(&b).unwrap(), games.clone());
            prop_assert_eq!(opened(&b, false), games.clone());
            prop_assert_eq!(opened(&b, true), heads(&games, split));
            let v = BlockView::open(&b, true).unwrap();
            prop_assert_eq!(v.complete(), split == nf);
        }

        #[test]
        fn version_1_blocks_still_decode(games in arb_games()) {
            let b = encode_v1(&games);
            prop_assert_eq!(decode(&b).unwrap(), games.clone());
            prop_assert_eq!(opened(&b, true), games);
        }

        #[test]
        fn any_flipped_bit_of_a_split_block_is_an_error_for_heads_too(
            games in arb_games(), cut in any::<usize>(), at in any::<usize>(), bit in 0u8..8,
        ) {
            let nf = games.first().map_or(0, |g| g.fields.len());
            let mut b = encode_split(&games, 3, cut % (nf + 1)).unwrap();
            let i = at % b.len();
            b[i] ^= 1 << bit;
            prop_assert!(BlockView::open(&b, true).is_err());
            prop_assert!(decode(&b).is_err());
        }

        #[test]
        fn truncated_blocks_are_errors(games in arb_games(), cut in any::<usize>()) {
            let b = encode_split(&games, 3, 0).unwrap();
            let n = cut % b.len();
            prop_assert!(BlockView::open(&b[..n], true).is_err());
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
        assert!(encode_split(&[g(1, 1)], 3, 2).is_err());
        assert_eq!(decode(&encode(&[], 3).unwrap()).unwrap(), vec![]);
    }
}
