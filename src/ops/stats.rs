//! `stats`: what a book holds (games, positions, pairs, collisions) and what it costs on disk
//! (blocks, payload, dictionary, files, bytes per pair, segments).

use std::fmt;
use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::ops::game::Game;
use crate::store::Book;

#[derive(Clone, Debug, Serialize)]
pub struct Stats {
    pub path: String,
    /// The game the book holds (`chess`, `Othello`, `canonical Othello (--canonical)`).
    pub game: String,
    pub format_version: u32,
    pub games: u64,
    pub positions: u64,
    pub key_only: u64,
    pub pairs: u64,
    pub collisions: u64,
    pub blocks: u64,
    pub raw_bytes: u64,
    pub stored_bytes: u64,
    pub dictionary_bytes: u64,
    /// Game fingerprints recorded by `--dedupe` imports.
    pub dedupe_games: u64,
    /// Bytes of all the book's files (base and delta segments).
    pub file_bytes: u64,
    pub bytes_per_pair: f64,
    pub stored_bytes_per_pair: f64,
    /// The generation of the state shown (docs/FORMAT.md §10).
    pub generation: u64,
    /// Delta segments over the base, and the entries they hold (folded into the base by
    /// `compact` or automatically).
    pub segments: u64,
    pub segment_entries: u64,
    /// The facets the book splits its counts by (empty: none).
    pub facets: Vec<&'static str>,
    /// Games counted with facets, by speed, rating group and year.
    pub facet_games: crate::store::facet::FacetGames,
    /// Rows of the files' `evals` tables (docs/FORMAT.md §13): positions with engine
    /// evaluations, a position counted once per file that holds some of its results.
    pub evaluation_rows: u64,
    /// Games in the files' game stores (docs/FORMAT.md §15), which `bookdb pgn` gives back.
    pub stored_games: u64,
    /// Bytes of the files' game tables: blocks, id index, references, facts.
    pub game_bytes: crate::store::book::GameTableBytes,
}

pub fn stats(path: &Path) -> Result<Stats> {
    let (game, book) = Game::open(path)?;
    stats_of(path, game, &book)
}

/// [`stats`] of a book already open (a server's snapshot): `path` names it in the answer.
pub fn stats_of(path: &Path, game: Game, book: &Book) -> Result<Stats> {
    let m = book.meta();
    let file_bytes = book.file_bytes();
    let per = |b: u64| {
        if m.pairs == 0 {
            0.0
        } else {
            b as f64 / m.pairs as f64
        }
    };
    Ok(Stats {
        path: path.display().to_string(),
        game: game.to_string(),
        format_version: crate::store::book::FORMAT_VERSION,
        games: m.games,
        positions: m.positions,
        key_only: m.key_only,
        pairs: m.pairs,
        collisions: m.collisions,
        blocks: m.blocks,
        raw_bytes: m.raw_bytes,
        stored_bytes: m.stored_bytes,
        dictionary_bytes: book.dictionaries().values().map(|d| d.len() as u64).sum(),
        dedupe_games: book.game_fingerprint_count()?,
        file_bytes,
        bytes_per_pair: per(file_bytes),
        stored_bytes_per_pair: per(m.stored_bytes),
        generation: book.generation(),
        segments: book.files().len() as u64 - 1,
        segment_entries: m.delta_entries,
        facets: book.facets().names(),
        facet_games: book.facet_games(),
        evaluation_rows: book
            .files()
            .iter()
            .map(|f| f.eval_rows())
            .sum::<crate::store::error::Result<u64>>()?,
        stored_games: book.games_stored(),
        game_bytes: book
            .files()
            .iter()
            .try_fold(crate::store::book::GameTableBytes::default(), |a, f| {
                f.game_table_bytes().map(|b| a + b)
            })?,
    })
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self;
        writeln!(f, "book              {}", s.path)?;
        writeln!(f, "game              {}", s.game)?;
        writeln!(f, "format version    {}", s.format_version)?;
        writeln!(f, "games             {}", s.games)?;
        writeln!(f, "positions         {}", s.positions)?;
        writeln!(f, "key-only entries  {}", s.key_only)?;
        writeln!(f, "(position, move)  {}", s.pairs)?;
        writeln!(f, "key collisions    {}", s.collisions)?;
        writeln!(f, "blocks            {}", s.blocks)?;
        writeln!(f, "raw payload       {} bytes", s.raw_bytes)?;
        writeln!(
            f,
            "stored blocks     {} bytes ({:.2} per pair)",
            s.stored_bytes, s.stored_bytes_per_pair
        )?;
        writeln!(f, "dictionary        {} bytes", s.dictionary_bytes)?;
        writeln!(f, "--dedupe games    {}", s.dedupe_games)?;
        writeln!(
            f,
            "evaluations       {} rows (a position once per file holding its results: a \
             re-import adds rows until a compaction folds them)",
            s.evaluation_rows
        )?;
        writeln!(f, "stored games      {}", s.stored_games)?;
        if s.stored_games > 0 {
            let g = &s.game_bytes;
            writeln!(
                f,
                "game tables       {} bytes store, {} ids, {} references ({:.2} per pair), {} facts",
                g.store,
                g.ids,
                g.refs,
                if s.pairs == 0 {
                    0.0
                } else {
                    g.refs as f64 / s.pairs as f64
                },
                g.facts
            )?;
        }
        writeln!(
            f,
            "file              {} bytes ({:.2} per pair)",
            s.file_bytes, s.bytes_per_pair
        )?;
        writeln!(f, "generation        {}", s.generation)?;
        write!(
            f,
            "delta segments    {} ({} entries)",
            s.segments, s.segment_entries
        )?;
        let facets = match s.facets.is_empty() {
            true => "none".to_string(),
            false => s.facets.join(","),
        };
        write!(f, "\nfacets            {facets}")?;
        let g = &s.facet_games;
        for (name, map) in [
            ("games by speed", &g.speed),
            ("games by rating", &g.rating),
            ("games by year", &g.year),
        ] {
            if map.is_empty() {
                continue;
            }
            let list: Vec<String> = map.iter().map(|(k, v)| format!("{k} {v}")).collect();
            write!(f, "\n{name:<18}{}", list.join(", "))?;
        }
        Ok(())
    }
}
