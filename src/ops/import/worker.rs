//! The import workers: the messages between them and the coordinator ([`Msg`], [`Reply`]),
//! parsing chunks of PGN text into games, replaying and counting them into each worker's
//! [`Aggregator`], and spilling or handing over the aggregate when asked.

use std::collections::HashMap;
use std::path::PathBuf;

use crossbeam_channel::{Receiver, Sender, bounded};

use super::aggregate::{Aggregator, SortedAggregate};
use super::games::GameSink;
use super::options::InputKind;
use crate::error::Error;
use crate::ops::game::Game;
use crate::ops::gamereader::GameReader;
use crate::ops::othello::games::{self as othello_games, OthelloGame};
use crate::ops::pgn::{
    CountRules, GameResult, Ply, RawGame, SkipReason, game_fingerprint, game_result, replay_into,
    replay_keeping,
};
use crate::store::Entry;
use crate::store::run::{RunModels, RunWriter};

pub(super) enum Msg {
    /// Raw PGN text cut at game boundaries, with the line number it starts on.
    Chunk {
        input: usize,
        first_line: u64,
        data: Vec<u8>,
        /// What the text is (PGN, or Othello transcripts or WTHOR records).
        kind: InputKind,
    },
    /// `--dedupe`: parse a chunk, fingerprint its games and keep them until [`Msg::Count`]
    /// says which ones are not repeats. Only the coordinator sees every fingerprint in input
    /// order, so it decides; the parsing and the fingerprints stay on the workers.
    Parse {
        seq: u64,
        input: usize,
        first_line: u64,
        data: Vec<u8>,
    },
    /// `--dedupe`: count the games of parsed chunk `seq` whose `keep` flag is set.
    Count { seq: u64, keep: Vec<bool> },
    /// Spill the aggregate into a run at this path.
    Flush(PathBuf),
    /// Hand the aggregate over, sorted (no spill happened: the import fits in memory).
    Take,
}

pub(super) enum Reply {
    Batch {
        input: usize,
        read: u64,
        imported: u64,
        skipped: Vec<(u64, SkipReason)>,
        /// `--dedupe`: fingerprints of the games counted.
        counted: Vec<u128>,
        /// Games counted by facet.
        facet_games: crate::store::facet::FacetGames,
        full: bool,
        /// The chunk's text buffer, emptied, for the reader to fill again.
        spare: Option<Vec<u8>>,
    },
    /// `--dedupe`: the games of parsed chunk `seq` in order, each as (fingerprint, line);
    /// `None` for unparsable text (reported as skipped when the chunk is counted).
    Parsed {
        seq: u64,
        worker: usize,
        input: usize,
        games: ParsedGames,
        spare: Vec<u8>,
    },
    /// A run spilled: its path and entries, and the game run beside it (path, games), if
    /// the worker had games to store.
    Flushed(PathBuf, u64, Option<(PathBuf, u64)>),
    /// The aggregate, and the games to store (books that store games).
    Taken(SortedAggregate, Option<GameSink>),
    Failed(Error),
}

/// The games a worker counted and skipped while handling one message.
#[derive(Default)]
struct Tally {
    imported: u64,
    /// Games counted by facet (books with facets).
    facet_games: crate::store::facet::FacetGames,
    skipped: Vec<(u64, SkipReason)>,
}

/// Replays a game and adds it to the aggregate, or records why it is skipped; true if counted.
fn count_game(
    g: &RawGame,
    rules: &CountRules,
    agg: &mut Aggregator,
    plies: &mut Vec<Ply>,
    tally: &mut Tally,
    store: Option<(&mut GameSink, Option<u128>)>,
) -> bool {
    let replayed = match store {
        None => replay_into(g, rules, plies),
        Some((sink, fp)) => {
            let mut moves = std::mem::take(&mut sink.moves);
            let r = replay_keeping(g, rules, plies, Some(&mut moves));
            sink.moves = moves;
            r.and_then(|start| {
                sink.add(g, &start, rules.max_ply, || {
                    fp.unwrap_or_else(|| game_fingerprint(g))
                })
                .map_err(|e| SkipReason::Unreadable(format!("its mainline cannot be stored: {e}")))
            })
        }
    };
    match replayed {
        Ok(()) => {
            tally.imported += 1;
            let elos = [g.white_elo, g.black_elo];
            if rules.facets.is_none() {
                agg.add_game(game_result(g), elos, plies);
            } else {
                let cell = g.facets.cell(elos).masked(rules.facets);
                tally.facet_games.add(cell, 1);
                agg.add_game_in(game_result(g), elos, Some(cell.id()), plies);
            }
            true
        }
        Err(r) => {
            tally.skipped.push((g.line, r));
            false
        }
    }
}

/// Parses the games of a chunk of PGN text in order and calls `f` with each (its line made
/// absolute with `first_line`), or with the reason the rest of the chunk is unreadable. `f`
/// may hand a game back for its buffers to be reused. Returns the games read.
fn each_game(
    data: &[u8],
    first_line: u64,
    mut f: impl FnMut(std::result::Result<RawGame, (u64, SkipReason)>) -> Option<RawGame>,
) -> u64 {
    let mut read = 0;
    let mut games = GameReader::new(data);
    loop {
        match games.next_game() {
            Ok(Some(mut g)) => {
                read += 1;
                g.line += first_line - 1;
                if let Some(g) = f(Ok(g)) {
                    games.recycle(g);
                }
            }
            Ok(None) => break,
            Err(e) => {
                // Reading from memory fails only on unparsable text; count it as one
                // unreadable game and drop the rest of the chunk's text.
                read += 1;
                f(Err((
                    first_line,
                    SkipReason::Unreadable(crate::ops::gamereader::unreadable_reason(&e)),
                )));
                break;
            }
        }
    }
    read
}

/// The games of a parsed `--dedupe` chunk as the coordinator sees them, in order; `None` for
/// unparsable text.
pub(super) type ParsedGames = Vec<Option<ParsedGame>>;

/// What `--dedupe` knows a parsed game by.
#[derive(Clone, Copy, Debug)]
pub(super) struct ParsedGame {
    pub fingerprint: u128,
    /// The id its tags carry and the identity of that id's records (`ops::gameident`).
    pub tagged: Option<crate::ops::gameident::TaggedIdentity>,
    pub line: u64,
}

/// A `--dedupe` chunk parsed by a worker and waiting for the coordinator's decision.
type ParsedChunk = Vec<std::result::Result<(RawGame, Option<u128>), (u64, SkipReason)>>;

/// The fingerprint `--dedupe` knows a game by; `None` for a game the PGN reader could not
/// parse: it has no tags or moves to compare (all such games would look alike), and it is
/// reported as unreadable, never as a repeat.
pub(super) fn dedupe_fingerprint(g: &RawGame) -> Option<u128> {
    g.error.is_none().then(|| game_fingerprint(g))
}

/// Reads the Othello games of a chunk (transcript lines or WTHOR records), replays and counts
/// them; returns the games read.
fn count_othello_chunk(
    data: &[u8],
    first: u64,
    kind: InputKind,
    (max_ply, canonical): (usize, bool),
    agg: &mut Aggregator,
    plies: &mut Vec<Ply>,
    t: &mut Tally,
) -> u64 {
    let mut count =
        |number: u64, g: std::result::Result<OthelloGame, SkipReason>| match g.and_then(|g| {
            othello_games::replay_into(&g, max_ply, canonical, plies)?;
            Ok(g.result)
        }) {
            Ok(result) => {
                t.imported += 1;
                agg.add_game(result.unwrap_or(GameResult::Unknown), [None, None], plies);
            }
            Err(r) => t.skipped.push((number, r)),
        };
    match kind {
        InputKind::Wthor => othello_games::each_record(data, first, &mut count),
        _ => othello_games::each_line(data, first, &mut count),
    }
}

fn worker(
    id: usize,
    rx: Receiver<Msg>,
    tx: Sender<Reply>,
    (rules, models): ((CountRules, Game, bool), RunModels),
    budget: usize,
) {
    let mut w = Worker {
        id,
        rules: rules.0,
        game: rules.1,
        games: rules.2.then(GameSink::default),
        models,
        budget,
        // Vectors reserved for the budget (untouched capacity costs no memory), the hash
        // table sized for a typical mix and doubled as needed (Aggregator::for_budget).
        agg: Aggregator::for_budget(budget),
        plies: Vec::with_capacity(64),
        parsed: HashMap::new(),
    };
    while let Ok(msg) = rx.recv() {
        let (reply, go_on) = w.handle(msg);
        if tx.send(reply).is_err() || !go_on {
            return;
        }
    }
}

/// One import worker's state: its aggregate, a scratch buffer, the chunks it parsed for a
/// `--dedupe` import and is yet to count.
struct Worker {
    id: usize,
    rules: CountRules,
    game: Game,
    budget: usize,
    agg: Aggregator,
    /// The position model the import's runs share.
    models: RunModels,
    /// The games counted since the last spill, kept for the book's game store (`None`: the
    /// book stores no games).
    games: Option<GameSink>,
    plies: Vec<Ply>,
    parsed: HashMap<u64, (usize, ParsedChunk)>,
}

impl Worker {
    /// The answer to `msg`, and whether the worker goes on.
    fn handle(&mut self, msg: Msg) -> (Reply, bool) {
        let reply = match msg {
            Msg::Chunk {
                input,
                first_line,
                data,
                kind: kind @ (InputKind::OthelloLines | InputKind::Wthor),
            } => self.count_othello(input, first_line, data, kind),
            Msg::Chunk {
                input,
                first_line,
                data,
                kind: InputKind::Pgn,
            } => self.count_pgn(input, first_line, data),
            Msg::Parse {
                seq,
                input,
                first_line,
                data,
            } => self.parse(seq, input, first_line, data),
            Msg::Count { seq, keep } => match self.parsed.remove(&seq) {
                Some((input, games)) => self.count_parsed(input, games, keep),
                None => {
                    let e = Error::Internal(format!(
                        "import worker {} has no parsed chunk {seq}",
                        self.id
                    ));
                    return (Reply::Failed(e), false);
                }
            },
            Msg::Flush(path) => self.flush(path),
            Msg::Take => Reply::Taken(
                std::mem::take(&mut self.agg).into_sorted(),
                self.games.take(),
            ),
        };
        (reply, true)
    }

    /// The batch answer for a chunk counted at once; its buffer goes back for reuse.
    fn batch(
        &self,
        input: usize,
        read: u64,
        t: Tally,
        counted: Vec<u128>,
        spare: Option<Vec<u8>>,
    ) -> Reply {
        Reply::Batch {
            input,
            read,
            imported: t.imported,
            skipped: t.skipped,
            counted,
            facet_games: t.facet_games,
            // The games kept for the store take their share of the worker's budget.
            full: self.agg.full(
                self.budget
                    .saturating_sub(self.games.as_ref().map_or(0, GameSink::bytes)),
            ),
            spare: spare.map(|mut b| {
                b.clear();
                b
            }),
        }
    }

    fn count_othello(
        &mut self,
        input: usize,
        first_line: u64,
        data: Vec<u8>,
        kind: InputKind,
    ) -> Reply {
        let mut t = Tally::default();
        let canonical = matches!(self.game, Game::Othello { canonical: true });
        let read = count_othello_chunk(
            &data,
            first_line,
            kind,
            (self.rules.max_ply, canonical),
            &mut self.agg,
            &mut self.plies,
            &mut t,
        );
        self.batch(input, read, t, Vec::new(), Some(data))
    }

    fn count_pgn(&mut self, input: usize, first_line: u64, data: Vec<u8>) -> Reply {
        let mut t = Tally::default();
        let read = each_game(&data, first_line, |g| match g {
            Ok(g) => {
                let store = self.games.as_mut().map(|s| (s, None));
                count_game(
                    &g,
                    &self.rules,
                    &mut self.agg,
                    &mut self.plies,
                    &mut t,
                    store,
                );
                Some(g)
            }
            Err(s) => {
                t.skipped.push(s);
                None
            }
        });
        self.batch(input, read, t, Vec::new(), Some(data))
    }

    /// `--dedupe`: parses a chunk and fingerprints its games; they are counted on
    /// [`Msg::Count`] once the coordinator has decided which are repeats.
    fn parse(&mut self, seq: u64, input: usize, first_line: u64, mut data: Vec<u8>) -> Reply {
        let mut games = Vec::new();
        each_game(&data, first_line, |g| {
            games.push(g.map(|g| {
                let fp = dedupe_fingerprint(&g);
                (g, fp)
            }));
            None
        });
        let summary = games
            .iter()
            .map(|g| {
                let (g, fp) = g.as_ref().ok()?;
                Some(ParsedGame {
                    fingerprint: (*fp)?,
                    tagged: crate::ops::gameident::of_raw(g),
                    line: g.line,
                })
            })
            .collect();
        self.parsed.insert(seq, (input, games));
        data.clear();
        Reply::Parsed {
            seq,
            worker: self.id,
            input,
            games: summary,
            spare: data,
        }
    }

    fn count_parsed(&mut self, input: usize, games: ParsedChunk, keep: Vec<bool>) -> Reply {
        let mut t = Tally::default();
        let mut counted = Vec::new();
        for (g, keep) in games.into_iter().zip(keep) {
            match g {
                Ok((g, fp)) => {
                    let store = self.games.as_mut().map(|s| (s, fp));
                    if keep
                        && count_game(
                            &g,
                            &self.rules,
                            &mut self.agg,
                            &mut self.plies,
                            &mut t,
                            store,
                        )
                        && let Some(fp) = fp
                    {
                        counted.push(fp);
                    }
                }
                Err(s) => t.skipped.push(s),
            }
        }
        self.batch(input, 0, t, counted, None)
    }

    /// Spills the aggregate, sorted, as a run at `path`.
    fn flush(&mut self, path: std::path::PathBuf) -> Reply {
        if self.agg.is_empty() {
            return Reply::Flushed(path, 0, None);
        }
        // The game run first: a run recorded in the state implies its game run is durable.
        let games = match self.games.as_mut().filter(|g| g.len() > 0) {
            Some(sink) => {
                let gpath = path.with_extension("games");
                match sink.spill(&gpath) {
                    Ok(n) => Some((gpath, n)),
                    Err(e) => return Reply::Failed(e.into()),
                }
            }
            None => None,
        };
        let mut sorted = std::mem::take(&mut self.agg).into_sorted();
        let res =
            RunWriter::create_sharing(&path, self.game.codec(), &self.models).and_then(|mut w| {
                let mut e = Entry::default();
                while sorted.next_into(&mut e) {
                    w.push(&e)?;
                }
                w.finish()
            });
        // The same tables serve the next round: no fresh pages to fault in.
        self.agg = sorted.into_aggregator();
        match res {
            Ok(n) => Reply::Flushed(path, n, games),
            Err(e) => Reply::Failed(e.into()),
        }
    }
}

/// Starts worker `id` in `scope`, answering on `replies`; returns the sender of its messages.
pub(super) fn spawn<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    id: usize,
    rules: ((CountRules, Game, bool), RunModels),
    budget: usize,
    replies: &Sender<Reply>,
) -> Sender<Msg> {
    let (tx, rx) = bounded::<Msg>(2);
    let res_tx = replies.clone();
    // A panic (a bug) is reported like any failure: the coordinator may be waiting for this
    // worker's answer, which would otherwise never come.
    let panic_tx = replies.clone();
    scope.spawn(move || {
        let run = std::panic::AssertUnwindSafe(|| worker(id, rx, res_tx, rules, budget));
        if std::panic::catch_unwind(run).is_err() {
            let _ = panic_tx.send(Reply::Failed(Error::Internal(format!(
                "import worker {id} panicked"
            ))));
        }
    });
    tx
}
