//! What a stored chess game counted, read back from the game store (docs/FORMAT.md §15.3): the
//! (key, move) pairs of its first counted plies and its cell and strength, by the same rules the
//! import counted it with (brief §2 and §8), so that a book's references can be rebuilt from its
//! games alone.

use shakmaty::{Chess, Position};

use super::gamefields::{
    BLACK_ELO_FIELD, DATE_FIELD, EVENT_FIELD, FEN_FIELD, FIELDS, MOVES_FIELD, PLIES_FIELD,
    RESULT_FIELD, TIME_CONTROL_FIELD, UTC_DATE_FIELD, WHITE_ELO_FIELD, counted_plies,
};
use super::{encode_move, key_and_pack, parse_fen};
use crate::store::error::CodecError;
use crate::store::facet::Cell;
use crate::store::gameblock::StoredGame;
use crate::store::gamerefs::GameFacts;
use crate::store::tags::{parse_date, parse_elo, parse_mode, parse_result, parse_speed};

/// The counted plies assumed for a game stored by format 6, which did not record them: the
/// import's default `max_ply` then.
pub const UPGRADED_PLIES: usize = 50;

/// A stored chess game's facts: its cell from its tags (`UTCDate` if it parses, else `Date`;
/// `TimeControl`; both Elos; `Event`) and its strength.
pub fn game_facts(g: &StoredGame) -> GameFacts {
    let f = |i: usize| g.fields.get(i).map_or(&[][..], Vec::as_slice);
    let elos = (parse_elo(f(WHITE_ELO_FIELD)), parse_elo(f(BLACK_ELO_FIELD)));
    let (group, strength) = match elos {
        (Some(w), Some(b)) => (Cell::group_of((w + b) / 2), (w + b) as u16),
        _ => (0, 0),
    };
    // Elos are below 5,000 (`parse_elo`): each fits a u16.
    let elo = |e: Option<u32>| e.map_or(0, |e| e as u16);
    GameFacts {
        white: elo(elos.0),
        black: elo(elos.1),
        result: parse_result(f(RESULT_FIELD)),
        cell: Cell {
            period: parse_date(f(UTC_DATE_FIELD))
                .or_else(|| parse_date(f(DATE_FIELD)))
                .unwrap_or_default(),
            speed: parse_speed(f(TIME_CONTROL_FIELD)),
            group,
            mode: parse_mode(f(EVENT_FIELD)),
        },
        strength,
    }
}

/// A stored game's start position and the ranks of its counted plies, or why it has none.
fn counted_ranks(g: &StoredGame) -> Result<(Chess, &[u8]), CodecError> {
    if g.fields.len() != FIELDS {
        return Err(format!(
            "game {:012x}: {} fields, not the {FIELDS} of a chess game",
            g.id,
            g.fields.len()
        )
        .into());
    }
    let fen = String::from_utf8_lossy(&g.fields[FEN_FIELD]);
    let start: Chess = if fen.trim().is_empty() {
        Chess::default()
    } else {
        parse_fen(fen.trim())
            .map_err(|e| CodecError::from(format!("game {:012x}: FEN {fen:?}: {e}", g.id)))?
    };
    let ranks = &g.fields[MOVES_FIELD];
    let counted = counted_plies(&g.fields[PLIES_FIELD]).unwrap_or(UPGRADED_PLIES);
    Ok((start, &ranks[..counted.min(ranks.len())]))
}

/// The pairs a stored game counted, sorted and each once, into `pairs`; and its facts.
pub fn index_game(
    g: &StoredGame,
    pairs: &mut Vec<(u64, u16)>,
) -> Result<Option<GameFacts>, CodecError> {
    pairs.clear();
    let (start, ranks) = counted_ranks(g)?;
    let moves = super::mainline::decode_mainline(&start, ranks)
        .map_err(|e| CodecError::from(format!("game {:012x}: {e}", g.id)))?;
    let mut pos = start;
    for m in moves {
        pairs.push((key_and_pack(&pos).0, encode_move(&m)));
        pos.play_unchecked(m);
    }
    pairs.sort_unstable();
    pairs.dedup();
    Ok(Some(game_facts(g)))
}

/// What [`index_game`] gives for one game: its facts and pairs, or why it does not decode.
pub type Indexed = Result<GameIndex, CodecError>;

/// A stored game's facts (`None`: a codec that keeps none) and its counted pairs.
pub type GameIndex = (Option<GameFacts>, Vec<(u64, u16)>);

/// [`index_game`] for each of `games`, in order, replaying the plies games have in common
/// once: the games are taken in order of their start and counted ranks, so that a game
/// continues from the longest prefix it shares with the one before (openings repeat: on the
/// bench set, about a third of the counted plies of 1,024 games are another's).
pub fn index_games(games: &[StoredGame]) -> Vec<Indexed> {
    let mut out: Vec<Option<Indexed>> = (0..games.len()).map(|_| None).collect();
    let mut todo = Vec::with_capacity(games.len());
    for (i, g) in games.iter().enumerate() {
        match counted_ranks(g) {
            Ok((start, ranks)) => todo.push((i, &g.fields[FEN_FIELD], start, ranks)),
            Err(e) => out[i] = Some(Err(e)),
        }
    }
    todo.sort_by(|a, b| (a.1, a.3).cmp(&(b.1, b.3)));
    let mut replay: Option<(&[u8], SharedReplay)> = None;
    for (i, fen, start, ranks) in todo {
        let r = match &mut replay {
            Some((f, r)) if *f == fen.as_slice() => r,
            _ => &mut replay.insert((fen, SharedReplay::new(start))).1,
        };
        let g = &games[i];
        out[i] = Some(match r.play(ranks) {
            Ok(pairs) => {
                let mut pairs = pairs.to_vec();
                pairs.sort_unstable();
                pairs.dedup();
                Ok((Some(game_facts(g)), pairs))
            }
            Err(e) => Err(CodecError::from(format!("game {:012x}: {e}", g.id))),
        });
    }
    out.into_iter()
        // Every game was taken above, refused or replayed.
        .map(|r| r.unwrap_or_else(|| Err(CodecError::from("a game was not indexed"))))
        .collect()
}

/// The plies of the last mainline replayed from one start position, kept so that the next
/// mainline replays only past the prefix the two share.
struct SharedReplay {
    /// The ranks replayed (those that decoded).
    ranks: Vec<u8>,
    /// The position before each replayed ply, and one more: the position after the last,
    /// each with the square the move before it went to.
    states: Vec<(Chess, Option<shakmaty::Square>)>,
    /// The (key, move code) pair of each replayed ply.
    pairs: Vec<(u64, u16)>,
    keys: Vec<u64>,
}

impl SharedReplay {
    fn new(start: Chess) -> SharedReplay {
        SharedReplay {
            ranks: Vec::new(),
            states: vec![(start, None)],
            pairs: Vec::new(),
            keys: Vec::with_capacity(64),
        }
    }

    /// The pairs of the mainline `ranks`, in ply order (what `decode_mainline` and keying
    /// each position give), or the error of its first rank that does not decode.
    fn play(&mut self, ranks: &[u8]) -> Result<&[(u64, u16)], super::mainline::MainlineError> {
        let common = self
            .ranks
            .iter()
            .zip(ranks)
            .take_while(|(a, b)| a == b)
            .count();
        self.ranks.truncate(common);
        self.pairs.truncate(common);
        self.states.truncate(common + 1);
        for (ply, &rank) in ranks.iter().enumerate().skip(common) {
            let (pos, last_to) = &self.states[ply];
            let (m, to) = super::mainline::decode_move(pos, *last_to, rank, ply, &mut self.keys)?;
            let key = key_and_pack(pos).0;
            let mut next = pos.clone();
            next.play_unchecked(m);
            self.pairs.push((key, encode_move(&m)));
            self.states.push((next, Some(to)));
            self.ranks.push(rank);
        }
        Ok(&self.pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::gamefields::PLIES_FIELD;
    use crate::chess::mainline::encode_mainline;
    use proptest::prelude::*;
    use shakmaty::Move;

    /// Plays `choices` from `start`, each picking a legal move by its index modulo their count.
    fn play(start: &Chess, choices: &[u8]) -> Vec<Move> {
        let mut pos = start.clone();
        let mut moves = Vec::new();
        for &c in choices {
            let legal = pos.legal_moves();
            if legal.is_empty() {
                break;
            }
            let m = legal[usize::from(c) % legal.len()];
            pos.play_unchecked(m);
            moves.push(m);
        }
        moves
    }

    const FEN: &str = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3";

    /// A stored game of `moves` from `fen` (empty: the start) that counted `counted` plies.
    fn stored(id: u64, fen: &str, moves: &[Move], counted: usize) -> StoredGame {
        let start = if fen.is_empty() {
            Chess::default()
        } else {
            parse_fen(fen).unwrap()
        };
        let mut fields = vec![Vec::new(); FIELDS];
        fields[FEN_FIELD] = fen.as_bytes().to_vec();
        fields[MOVES_FIELD] = encode_mainline(&start, moves).unwrap();
        crate::store::varint::put(&mut fields[PLIES_FIELD], counted as u64);
        StoredGame { id, fields }
    }

    proptest! {
        /// Games sharing openings (three trunks, two starts), some cut short by their counted
        /// plies, some with a bad rank, a bad FEN or too few fields: the batch gives what each
        /// game indexed alone gives, in order.
        #[test]
        fn a_batch_indexes_as_each_game_alone(
            trunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 3),
            games in proptest::collection::vec(
                (0usize..3, any::<bool>(), proptest::collection::vec(any::<u8>(), 0..30),
                 0usize..45, 0u8..8),
                0..40),
        ) {
            let mut batch = Vec::new();
            for (n, (trunk, from_fen, tail, counted, damage)) in games.into_iter().enumerate() {
                let fen = if from_fen { FEN } else { "" };
                let start = if from_fen { parse_fen(FEN).unwrap() } else { Chess::default() };
                let choices: Vec<u8> = trunks[trunk].iter().chain(&tail).copied().collect();
                let moves = play(&start, &choices);
                let mut g = stored(n as u64, fen, &moves, counted);
                match damage {
                    // A rank past the legal moves, at a ply a few games may share.
                    0 if !g.fields[MOVES_FIELD].is_empty() => {
                        let at = g.fields[MOVES_FIELD].len() / 2;
                        g.fields[MOVES_FIELD][at] = 250;
                    }
                    1 => g.fields[FEN_FIELD] = b"not a fen".to_vec(),
                    2 => { g.fields.pop(); }
                    _ => {}
                }
                batch.push(g);
            }
            let alone: Vec<_> = batch
                .iter()
                .map(|g| {
                    let mut pairs = Vec::new();
                    shown(index_game(g, &mut pairs).map(|f| (f, pairs)))
                })
                .collect();
            let together: Vec<_> = index_games(&batch).into_iter().map(shown).collect();
            prop_assert_eq!(together, alone);
        }
    }

    #[test]
    fn games_that_share_an_opening_share_its_pairs() {
        let start = Chess::default();
        let trunk = play(&start, &[3, 7, 1, 4, 9, 2]);
        let mut a = trunk.clone();
        a.extend(play(&after(&start, &trunk), &[5, 5, 5]));
        let mut b = trunk.clone();
        b.extend(play(&after(&start, &trunk), &[6, 1]));
        let batch = vec![
            stored(1, "", &a, 40),
            stored(2, "", &b, 40),
            stored(3, "", &trunk, 3),
        ];
        let got = index_games(&batch);
        for (g, r) in batch.iter().zip(&got) {
            let mut pairs = Vec::new();
            let facts = index_game(g, &mut pairs).unwrap();
            assert_eq!(r.as_ref().unwrap(), &(facts, pairs));
        }
        assert_eq!(got[2].as_ref().unwrap().1.len(), 3);
    }

    /// An index result with its error as text (errors compare by what they say).
    fn shown(r: Indexed) -> Result<GameIndex, String> {
        r.map_err(|e| e.to_string())
    }

    fn after(start: &Chess, moves: &[Move]) -> Chess {
        let mut pos = start.clone();
        for m in moves {
            pos.play_unchecked(*m);
        }
        pos
    }
}
