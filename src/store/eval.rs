//! Engine evaluations kept per exact position (docs/FORMAT.md §13): a small set of search
//! results, each a depth, a node count, the engine's name and 1–5 lines (a move list and a
//! score from White's point of view), kept by lila's eval-cache selector ([`select`]), and
//! their byte coding ([`encode`], [`decode`]). The store knows moves only as opaque `u16`
//! codes; the chess layer gives them their meaning.

use crate::store::varint;

/// Most lines (principal variations) a result holds.
pub const MAX_LINES: usize = 5;
/// Most moves a line holds.
pub const MAX_LINE_MOVES: usize = 64;
/// Longest engine name kept, in bytes.
pub const MAX_ENGINE_BYTES: usize = 64;
/// Version byte of a coded evaluation set (`EVAL_VERSION`).
pub const EVAL_VERSION: u8 = 1;
/// Largest `cp` score kept (larger ones are clamped by the producers).
pub const MAX_CP: i32 = 100_000;
/// Largest `mate` distance kept, in moves.
pub const MAX_MATE: i32 = 1_000;

/// A line's score, from White's point of view: centipawns, or mate in n moves (positive:
/// White mates; never 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Score {
    Cp(i32),
    Mate(i32),
}

impl Score {
    /// The same score from the other side's point of view.
    pub fn negate(self) -> Score {
        match self {
            Score::Cp(c) => Score::Cp(-c),
            Score::Mate(m) => Score::Mate(-m),
        }
    }
}

/// One line of a result: the moves (opaque codes of the book's game) and its score.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EvalLine {
    pub score: Score,
    pub moves: Vec<u16>,
}

/// One search result: its depth, thousands of nodes searched, the engine that searched and
/// its lines (best first).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EvalResult {
    pub depth: u32,
    pub knodes: u64,
    pub engine: String,
    pub lines: Vec<EvalLine>,
}

/// Why coded evaluations were rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalDecodeError {
    #[error("empty value")]
    Empty,
    #[error("unknown version {0}")]
    Version(u8),
    #[error("truncated: {0}")]
    Truncated(&'static str),
    #[error("checksum mismatch (stored crc32 {expected:08x}, computed {found:08x})")]
    Checksum { expected: u32, found: u32 },
    #[error("{0} results (1 to {MAX_LINES} allowed)")]
    ResultCount(u64),
    #[error("{0} lines in a result (1 to {MAX_LINES} allowed)")]
    LineCount(u64),
    #[error("a line of {0} moves (1 to {MAX_LINE_MOVES} allowed)")]
    MoveCount(u64),
    #[error("engine name of {0} bytes ({MAX_ENGINE_BYTES} at most)")]
    EngineLength(u64),
    #[error("engine name is not UTF-8")]
    EngineText,
    #[error("score out of range ({0})")]
    Score(String),
    #[error("{0} bytes after the last result")]
    Trailing(usize),
    #[error("results not as the selector keeps them")]
    NotCanonical,
}

impl EvalResult {
    /// The ranking of the selector: depth, then nodes, then the result's content (a total
    /// order, so that the choice between equal (depth, nodes) does not depend on the order
    /// results arrive in).
    fn rank(&self) -> (u32, u64, &String, &Vec<EvalLine>) {
        (self.depth, self.knodes, &self.engine, &self.lines)
    }

    /// Checks what the coding can hold: 1–5 lines of 1–64 moves, scores in range, the engine
    /// name's length.
    pub fn check(&self) -> Result<(), EvalDecodeError> {
        if self.lines.is_empty() || self.lines.len() > MAX_LINES {
            return Err(EvalDecodeError::LineCount(self.lines.len() as u64));
        }
        if self.engine.len() > MAX_ENGINE_BYTES {
            return Err(EvalDecodeError::EngineLength(self.engine.len() as u64));
        }
        for l in &self.lines {
            if l.moves.is_empty() || l.moves.len() > MAX_LINE_MOVES {
                return Err(EvalDecodeError::MoveCount(l.moves.len() as u64));
            }
            check_score(l.score)?;
        }
        Ok(())
    }
}

fn check_score(s: Score) -> Result<(), EvalDecodeError> {
    match s {
        Score::Cp(c) if c.abs() <= MAX_CP => Ok(()),
        Score::Mate(m) if m != 0 && m.abs() <= MAX_MATE => Ok(()),
        other => Err(EvalDecodeError::Score(format!("{other:?}"))),
    }
}

/// lila's eval-cache selector (docs/FORMAT.md §13): of the results with the same number of
/// lines keep the best by (depth, knodes); then drop a result if a kept one has more lines and
/// at least its depth; order by depth, then knodes, descending. A pure function of the set of
/// results, so merging books with it is associative and commutative.
pub fn select(mut all: Vec<EvalResult>) -> Vec<EvalResult> {
    // Best first: per group, the first of its size is the one kept.
    all.sort_by(|a, b| b.rank().cmp(&a.rank()));
    let mut best: Vec<EvalResult> = Vec::new();
    for r in all {
        if !best.iter().any(|b| b.lines.len() == r.lines.len()) {
            best.push(r);
        }
    }
    best.sort_by_key(|r| std::cmp::Reverse(r.lines.len()));
    let mut kept: Vec<EvalResult> = Vec::new();
    for r in best {
        let obsolete = kept
            .iter()
            .any(|k| k.lines.len() > r.lines.len() && k.depth >= r.depth);
        if !obsolete {
            kept.push(r);
        }
    }
    kept.sort_by(|a, b| {
        (b.depth, b.knodes, b.lines.len()).cmp(&(a.depth, a.knodes, a.lines.len()))
    });
    kept
}

/// The union of two kept sets, kept by [`select`].
pub fn merge(a: Vec<EvalResult>, b: Vec<EvalResult>) -> Vec<EvalResult> {
    let mut all = a;
    all.extend(b);
    select(all)
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Codes the kept set of the position `pos` (key `key`; docs/FORMAT.md §13.2): version,
/// crc32 (over the key, the position and the body, so a damaged table key is caught too),
/// the results. The caller passes what [`select`] returned; results that
/// [`EvalResult::check`] refuses are an error.
pub fn encode(key: u64, pos: &[u8], results: &[EvalResult]) -> Result<Vec<u8>, EvalDecodeError> {
    if results.is_empty() || results.len() > MAX_LINES {
        return Err(EvalDecodeError::ResultCount(results.len() as u64));
    }
    let mut body = Vec::with_capacity(16 + 24 * results.len());
    body.push(results.len() as u8);
    for r in results {
        r.check()?;
        varint::put(&mut body, u64::from(r.depth));
        varint::put(&mut body, r.knodes);
        body.push(r.engine.len() as u8);
        body.extend_from_slice(r.engine.as_bytes());
        body.push(r.lines.len() as u8);
        for l in &r.lines {
            let (mate, v) = match l.score {
                Score::Cp(c) => (0, c),
                Score::Mate(m) => (1, m),
            };
            varint::put(&mut body, zigzag(i64::from(v)) << 1 | mate);
            body.push(l.moves.len() as u8);
            for m in &l.moves {
                body.extend_from_slice(&m.to_le_bytes());
            }
        }
    }
    Ok(seal_body(key, pos, &body))
}

/// Reads bytes of the body at `*at`, advancing it.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self, what: &'static str) -> Result<u64, EvalDecodeError> {
        varint::get(self.data, &mut self.at).ok_or(EvalDecodeError::Truncated(what))
    }
    fn byte(&mut self, what: &'static str) -> Result<u8, EvalDecodeError> {
        let b = *self
            .data
            .get(self.at)
            .ok_or(EvalDecodeError::Truncated(what))?;
        self.at += 1;
        Ok(b)
    }
    fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], EvalDecodeError> {
        let s = self
            .data
            .get(self.at..self.at.saturating_add(n))
            .ok_or(EvalDecodeError::Truncated(what))?;
        self.at += n;
        Ok(s)
    }
}

/// The checksum of a row: crc32 of the key (LE), the packed position and the body.
fn row_crc(key: u64, pos: &[u8], body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&key.to_le_bytes());
    h.update(pos);
    h.update(body);
    h.finalize()
}

/// Codes `body` (a set's bytes after the checksum) with its version and checksum: what a
/// fuzzer feeds [`decode`] to get past the checksum.
#[doc(hidden)]
pub fn seal_body(key: u64, pos: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 5);
    out.push(EVAL_VERSION);
    out.extend_from_slice(&row_crc(key, pos, body).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// Decodes the coded set of `pos` (key `key`); rejects (never panics on) any bytes
/// [`encode`] does not produce for a set [`select`] keeps, and a checksum that does not
/// cover this key and position.
pub fn decode(key: u64, pos: &[u8], bytes: &[u8]) -> Result<Vec<EvalResult>, EvalDecodeError> {
    let (&version, rest) = bytes.split_first().ok_or(EvalDecodeError::Empty)?;
    if version != EVAL_VERSION {
        return Err(EvalDecodeError::Version(version));
    }
    let crc = rest
        .get(..4)
        .ok_or(EvalDecodeError::Truncated("checksum"))?;
    let expected = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    let body = &rest[4..];
    let found = row_crc(key, pos, body);
    if expected != found {
        return Err(EvalDecodeError::Checksum { expected, found });
    }
    let mut r = Reader { data: body, at: 0 };
    let n = r.byte("result count")?;
    if n == 0 || usize::from(n) > MAX_LINES {
        return Err(EvalDecodeError::ResultCount(u64::from(n)));
    }
    let mut out = Vec::with_capacity(usize::from(n));
    for _ in 0..n {
        out.push(decode_result(&mut r)?);
    }
    if r.at != body.len() {
        return Err(EvalDecodeError::Trailing(body.len() - r.at));
    }
    // One coding per set: the selector's set, written as `encode` writes it (no padded
    // varints).
    if select(out.clone()) != out || encode(key, pos, &out).as_deref() != Ok(bytes) {
        return Err(EvalDecodeError::NotCanonical);
    }
    Ok(out)
}

fn decode_result(r: &mut Reader) -> Result<EvalResult, EvalDecodeError> {
    let depth = r.varint("depth")?;
    let depth = u32::try_from(depth).map_err(|_| EvalDecodeError::Truncated("depth"))?;
    let knodes = r.varint("knodes")?;
    let elen = r.byte("engine name length")?;
    if usize::from(elen) > MAX_ENGINE_BYTES {
        return Err(EvalDecodeError::EngineLength(u64::from(elen)));
    }
    let engine = std::str::from_utf8(r.bytes(usize::from(elen), "engine name")?)
        .map_err(|_| EvalDecodeError::EngineText)?
        .to_string();
    let nl = r.byte("line count")?;
    if nl == 0 || usize::from(nl) > MAX_LINES {
        return Err(EvalDecodeError::LineCount(u64::from(nl)));
    }
    let mut lines = Vec::with_capacity(usize::from(nl));
    for _ in 0..nl {
        let s = r.varint("score")?;
        let v =
            i32::try_from(unzigzag(s >> 1)).map_err(|_| EvalDecodeError::Score(format!("{s}")))?;
        let score = if s & 1 == 1 {
            Score::Mate(v)
        } else {
            Score::Cp(v)
        };
        check_score(score)?;
        let nm = r.byte("move count")?;
        if nm == 0 || usize::from(nm) > MAX_LINE_MOVES {
            return Err(EvalDecodeError::MoveCount(u64::from(nm)));
        }
        let raw = r.bytes(2 * usize::from(nm), "moves")?;
        let moves = raw
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        lines.push(EvalLine { score, moves });
    }
    Ok(EvalResult {
        depth,
        knodes,
        engine,
        lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const K: u64 = 0x463b_9618_1691_fc9c;
    const P: &[u8] = &[0xfe, 0x09, 0xeb, 0x60];

    fn arb_result() -> impl Strategy<Value = EvalResult> {
        let line = (
            prop_oneof![
                (-MAX_CP..=MAX_CP).prop_map(Score::Cp),
                (1..=MAX_MATE).prop_map(Score::Mate),
                (1..=MAX_MATE).prop_map(|m| Score::Mate(-m)),
            ],
            proptest::collection::vec(any::<u16>(), 1..=8),
        )
            .prop_map(|(score, moves)| EvalLine { score, moves });
        (
            0u32..40,
            0u64..5_000,
            prop_oneof![Just(String::new()), Just("Stockfish 15.1".to_string())],
            proptest::collection::vec(line, 1..=MAX_LINES),
        )
            .prop_map(|(depth, knodes, engine, lines)| EvalResult {
                depth,
                knodes,
                engine,
                lines,
            })
    }

    fn arb_set() -> impl Strategy<Value = Vec<EvalResult>> {
        proptest::collection::vec(arb_result(), 0..8)
    }

    proptest! {
        /// Coding round-trips every kept set.
        #[test]
        fn round_trip(set in arb_set()) {
            let kept = select(set);
            if !kept.is_empty() {
                let bytes = encode(K, P, &kept).unwrap();
                prop_assert_eq!(decode(K, P, &bytes).unwrap(), kept);
            }
        }

        /// Merging with the selector is associative and commutative and keeps a kept set.
        #[test]
        fn merge_is_associative_and_commutative(a in arb_set(), b in arb_set(), c in arb_set()) {
            let (a, b, c) = (select(a), select(b), select(c));
            prop_assert_eq!(merge(a.clone(), b.clone()), merge(b.clone(), a.clone()));
            prop_assert_eq!(
                merge(merge(a.clone(), b.clone()), c.clone()),
                merge(a.clone(), merge(b.clone(), c.clone()))
            );
            prop_assert_eq!(merge(a.clone(), a.clone()), a.clone());
            let all: Vec<EvalResult> = a.iter().chain(&b).chain(&c).cloned().collect();
            prop_assert_eq!(merge(merge(a, b), c), select(all));
        }

        /// No body makes the decoder panic (sealed, so that it gets past the checksum);
        /// what it accepts codes back to itself.
        #[test]
        fn decoder_never_panics(body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let bytes = seal_body(K, P, &body);
            if let Ok(set) = decode(K, P, &bytes) {
                prop_assert_eq!(encode(K, P, &set).unwrap(), bytes);
            }
        }

        /// Every truncation and every changed body byte of a valid coding is rejected or
        /// decodes to a set that codes back to those bytes.
        #[test]
        fn damaged_bodies_are_rejected_or_canonical(set in arb_set(), at in any::<usize>(), x in 1u8..) {
            let kept = select(set);
            if !kept.is_empty() {
                let bytes = encode(K, P, &kept).unwrap();
                let mut body = bytes[5..].to_vec();
                let i = at % body.len();
                body[i] ^= x;
                if let Ok(again) = decode(K, P, &seal_body(K, P, &body)) {
                    prop_assert_eq!(encode(K, P, &again).unwrap(), seal_body(K, P, &body));
                }
                prop_assert!(decode(K, P, &bytes[..bytes.len() - 1]).is_err());
            }
        }
    }

    fn r(depth: u32, knodes: u64, lines: usize) -> EvalResult {
        EvalResult {
            depth,
            knodes,
            engine: "e".into(),
            lines: (0..lines)
                .map(|i| EvalLine {
                    score: Score::Cp(i as i32),
                    moves: vec![0x070c],
                })
                .collect(),
        }
    }

    /// lila's rule: best per number of lines; one with more lines and at least the depth
    /// makes a shallower one obsolete; ordered by depth, then knodes.
    #[test]
    fn selector_keeps_what_lila_keeps() {
        let kept = select(vec![r(20, 100, 1), r(22, 50, 1), r(24, 10, 3), r(30, 5, 2)]);
        assert_eq!(kept, vec![r(30, 5, 2), r(24, 10, 3)]);
        let kept = select(vec![r(20, 100, 1), r(18, 500, 3)]);
        assert_eq!(kept, vec![r(20, 100, 1), r(18, 500, 3)]);
        let kept = select(vec![r(20, 100, 1), r(20, 200, 1), r(20, 1, 5)]);
        assert_eq!(kept, vec![r(20, 1, 5)]);
    }

    #[test]
    fn decoder_rejects_damage() {
        let bytes = encode(K, P, &[r(20, 100, 2)]).unwrap();
        assert!(decode(K ^ 1, P, &bytes).is_err(), "another key");
        assert!(decode(K, &P[1..], &bytes).is_err(), "another position");
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            assert!(decode(K, P, &b).is_err(), "byte {i}");
        }
        for n in 0..bytes.len() {
            assert!(decode(K, P, &bytes[..n]).is_err());
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(decode(K, P, &long).is_err());
        // Not canonical: two results the selector would not keep together.
        let two = [r(20, 100, 1), r(20, 1, 5)];
        let coded = encode(K, P, &two).unwrap();
        assert_eq!(decode(K, P, &coded), Err(EvalDecodeError::NotCanonical));
    }
}
