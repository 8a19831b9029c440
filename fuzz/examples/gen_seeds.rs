//! Writes the seed corpora under `fuzz/seeds/<target>/` (committed; `fuzz/corpus` is ignored).
//!
//!     cargo run --manifest-path fuzz/Cargo.toml --example gen_seeds [-- OUT_DIR]
//!
//! PGN seeds are copied from `$BOOKDB_DATA/pgn/edgecases` (default `../shared/data` beside
//! the main crate) when it exists; the synthetic PGN seeds are always written.

use std::path::{Path, PathBuf};

use arbitrary::Unstructured;
use bookdb::chess::{ChessCodec, PosState};
use bookdb::store::block::{self, PlainDecompressor};
use bookdb::store::{BookWriter, PositionModel, WriterOptions, varint};
use bookdb_fuzz::{arb_entries, loaded_model, model_for, samples, trained_model};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// Deterministic pseudo-random bytes (xorshift), for targets that read structure from bytes.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

struct Out {
    root: PathBuf,
    written: usize,
}

impl Out {
    fn put(&mut self, target: &str, name: &str, bytes: &[u8]) {
        let dir = self.root.join(target);
        std::fs::create_dir_all(&dir).expect("creating seed dir");
        std::fs::write(dir.join(name), bytes).expect("writing seed");
        self.written += 1;
    }
}

use bookdb::store::book::Manifest;

fn main() {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds"));
    let mut out = Out { root, written: 0 };
    let samples = samples();

    // manifest: a book without segments, one with two, and the largest the policy keeps.
    for (name, m) in [
        ("no-segments", Manifest { generation: 4, base: 4, segments: vec![] }),
        ("two-segments", Manifest { generation: 7, base: 3, segments: vec![5, 7] }),
        ("eight-segments", Manifest { generation: 20, base: 9, segments: (13..=20).collect() }),
    ] {
        out.put("manifest", name, &m.encode());
    }

    // packed_position: the start position (docs/CONTRACT.md §2 test vector), the e4 d5 e5 f5
    // en-passant vector, a few sample positions, plus trailing, truncated and padded forms.
    let start = hex("fe09eb6095a609ceb04eeec12fa609cb6095fe09e780");
    let ep = hex("fe09eb6095a609ceb10eee192fa621cb6095fe09e7e8");
    out.put("packed_position", "start", &start);
    out.put("packed_position", "ep-f6", &ep);
    for (i, s) in samples.iter().step_by(17).take(6).enumerate() {
        out.put("packed_position", &format!("sample-{i}"), &s.packed);
    }
    let mut trailing = start.clone();
    trailing.push(0);
    out.put("packed_position", "start-trailing", &trailing);
    out.put("packed_position", "start-truncated", &start[..15]);
    let mut padded = start.clone();
    *padded.last_mut().expect("non-empty") |= 1;
    out.put("packed_position", "start-bad-padding", &padded);
    let empty_board = PosState {
        squares: [0; 64],
        black_to_move: true,
        castling: 0xf,
        ep_file: Some(3),
    };
    out.put("packed_position", "empty-board", &empty_board.pack().0);

    // position_model: positions coded with the trained model (canonical codes) and 66-byte
    // plane-shaped inputs.
    let m = trained_model();
    for (i, s) in samples.iter().step_by(13).take(6).enumerate() {
        out.put("position_model", &format!("coded-{i}"), &m.encode_state(&s.state));
    }
    let mut planes = [0u8; bookdb::chess::PLANES];
    samples[0].state.to_planes(&mut planes);
    out.put("position_model", "planes-sample", &planes);
    out.put("position_model", "zeros-4", &[0; 4]);

    // othello_model: boards coded with the trained and untrained models, a model as bytes,
    // and boards as 17 bytes (black, white, side).
    let [trained, untrained] = bookdb_fuzz::othello_models();
    for (i, b) in bookdb_fuzz::othello_boards().iter().step_by(97).take(6).enumerate() {
        out.put("othello_model", &format!("coded-{i}"), &trained.encode_board(b));
        out.put("othello_model", &format!("untrained-{i}"), &untrained.encode_board(b));
        let mut raw = b.black().to_le_bytes().to_vec();
        raw.extend_from_slice(&b.white().to_le_bytes());
        raw.push(u8::from(b.white_to_move()));
        out.put("othello_model", &format!("board-{i}"), &raw);
    }
    out.put("othello_model", "zeros-4", &[0; 4]);
    out.put("othello_model", "model-trained", &trained.to_bytes());

    // varint: column-shaped sequences, the extremes and an overlong form.
    let mut v = Vec::new();
    for x in [0u64, 1, 127, 128, 300, 2500, 1 << 35, u64::MAX] {
        varint::put(&mut v, x);
    }
    out.put("varint", "mixed", &v);
    out.put("varint", "overlong", &[0xff; 11]);
    out.put("varint", "tenth-byte-2", &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]);
    out.put("varint", "padded-zero", &[0x80, 0x80, 0x00, 0x05]);

    // block (raw bytes) and block_structured (entry choices): sealed blocks of fuzz-style
    // entries under both models, with and without zstd; the raw target also gets the
    // "opened block" layout (count, A length, A, B) its third mode reads.
    let codec = ChessCodec;
    let mut zstd = zstd::bulk::Compressor::new(3).expect("zstd");
    for (i, (model_id, compress)) in [(0u16, false), (0, true), (1, false), (1, true)].into_iter().enumerate() {
        let raw = noise(i as u64 + 1, 600);
        let mut u = Unstructured::new(&raw);
        let entries = arb_entries(&mut u, 12).expect("entries from noise");
        let model: &dyn PositionModel = model_for(model_id);
        let payload = block::build_payload(&entries, &codec, model).expect("payload");
        let sealed = block::seal(&payload, model_id, compress.then_some((&mut zstd, 0))).expect("seal");
        // Self-check before writing: the seed must be a valid block.
        let blk = block::open_block(1, &sealed, &PlainDecompressor).expect("seed block opens");
        let view = block::BlockView::parse(1, &blk).expect("seed block parses");
        assert_eq!(view.entries(&codec, model).expect("seed block decodes"), entries);
        let tag = format!("{}-{}", if model_id == 0 { "identity" } else { "chess" }, if compress { "zstd" } else { "plain" });
        out.put("block", &format!("sealed-{tag}"), &sealed);
        if !compress && model_id == 0 {
            let mut opened = Vec::new();
            opened.extend_from_slice(&(payload.count as u16).to_le_bytes());
            opened.extend_from_slice(&(payload.a.len() as u16).to_le_bytes());
            opened.extend_from_slice(&payload.a);
            opened.extend_from_slice(&payload.b);
            out.put("block", "opened-identity", &opened);
        }
        if !compress {
            // The column layout of the block target's mode 4 (one length byte per column),
            // from the first few entries so that every column fits in 255 bytes.
            let few = &entries[..entries.len().min(3)];
            let p = block::build_payload(few, &codec, model).expect("payload");
            let ncols = match p.version {
                block::BLOCK_VERSION_GAME_CELLS => block::COLUMNS,
                block::BLOCK_VERSION_CELLS => block::V2_COLUMNS,
                _ => block::V1_COLUMNS,
            };
            let dir: Vec<usize> = (0..ncols)
                .map(|i| u32::from_le_bytes(p.a[4 * i..4 * i + 4].try_into().expect("4 bytes")) as usize)
                .collect();
            if dir.iter().all(|&l| l <= 255) {
                let lead = match ncols {
                    block::COLUMNS => 2,
                    block::V2_COLUMNS => 1,
                    _ => 0,
                };
                let mut cols: Vec<u8> = vec![lead];
                cols.extend(dir.iter().map(|&l| l as u8));
                cols.extend_from_slice(&p.a[4 * ncols..]);
                cols.extend_from_slice(&p.b);
                out.put("block", &format!("columns-{tag}"), &cols);
            }
        }
    }
    for i in 0..6u64 {
        out.put("block_structured", &format!("noise-{i}"), &noise(100 + i, 64 << i));
    }

    // pgn_import: synthetic edge cases and, where present, small real-world ones.
    let synthetic: [(&str, &str); 7] = [
        ("tags-variation-comment", "[Event \"a\"]\n[Result \"1-0\"]\n[WhiteElo \"2400\"]\n\n1. e4 e5 (1... c5 2. Nf3) 2. Nf3 {c} 1-0\n\n"),
        ("variant-and-tagless", "[Variant \"Crazyhouse\"]\n\n1. e4 *\n\n1. d4 d5 *\n"),
        ("fen-crlf", "[SetUp \"1\"]\r\n[FEN \"4k3/8/8/8/8/8/4P3/4K3 w - - 0 1\"]\r\n\r\n1. e4 Kd7 *\r\n"),
        ("bad-fen-illegal", "[FEN \"garbage\"]\n\n1. e4 *\n\n1. e4 e4 *\n"),
        ("ep-castle-promote", "1. e4 d5 2. e5 f5 3. exf6 Nc6 4. fxg7 Bd7 5. gxh8=Q Qc8 6. Qxg8 O-O-O 7. Nf3 a6 8. Bc4 a5 9. O-O *\n"),
        ("nags-nulls-nested", "1. e4! $1 e5?? {a {b} c} 2. -- Nc6 (2... d6 (2... f6)) 3. Z0 ; line comment\n d6 1/2-1/2\n"),
        ("dropped-tokens", "[White \"\"A B\"\"]\n[Black \"b\"]\n\n1. e2-e4 e7e5 2. Ng1-f3 c5=+ 3. hxg8Q 0-01 1-0e4 12e4 cd\n\n[FEN \"6nk/7P/8/8/8/8/8/K7 w - - 0 1\"]\n\n1. hxg8Q+ Kxg8 2. Kb2 ♘f3 *\n"),
    ];
    for (name, text) in synthetic {
        out.put("pgn_import", name, text.as_bytes());
    }
    let data = std::env::var_os("BOOKDB_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    let edge = data.join("pgn/edgecases");
    for rel in [
        "pychess/badpgn.pgn",
        "pgn-extract/nested-comment.pgn",
        "pgn-extract/test-allownullmoves.pgn",
        "pgn-extract/test-promotion-in.pgn",
        "python-chess/utf8-bom.pgn",
        "python-chess/chessbase-empty-line.pgn",
        "pychess/fenSetup.pgn",
        "pgn-extract/test-setup-in.pgn",
        "notnil/lichess_2013-01_excerpt.pgn",
    ] {
        match std::fs::read(edge.join(rel)) {
            Ok(bytes) if bytes.len() <= 4096 => {
                out.put("pgn_import", &rel.replace('/', "--"), &bytes);
            }
            Ok(_) => eprintln!("skipping {rel}: larger than 4096 bytes"),
            Err(e) => eprintln!("skipping {rel}: {e}"),
        }
    }

    // book_file: a small real book written by BookWriter (no dictionary, chess model).
    let dir = std::env::temp_dir().join(format!("bookdb-gen-seeds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("tiny.book");
    let raw = noise(42, 400);
    let mut u = Unstructured::new(&raw);
    let entries = arb_entries(&mut u, 8).expect("entries");
    let opts = WriterOptions {
        dictionary: false,
        level: 3,
        ..WriterOptions::default()
    };
    let mut w = BookWriter::create(&path, bookdb::chess_codec(), opts).expect("create book");
    for e in &entries {
        w.push(e.clone()).expect("push");
    }
    w.add_games(entries.len() as u64);
    w.finish().expect("finish book");
    let bytes = std::fs::read(&path).expect("read book");
    let book = bookdb::store::Book::open(&path, bookdb::chess_codec()).expect("seed book opens");
    let back: Vec<_> = book.iter().expect("iter").collect::<Result<_, _>>().expect("seed book reads");
    assert_eq!(back, entries, "seed book round trip");
    drop(book);
    println!("book_file seed: {} bytes", bytes.len());
    out.put("book_file", "tiny-book", &bytes);
    // run_file: a run of the same entries written by RunWriter (the chess codec's model).
    let run_path = dir.join("tiny.run");
    let mut r = bookdb::store::run::RunWriter::create(&run_path, bookdb::chess_codec())
        .expect("create run");
    for e in &entries {
        r.push(e).expect("push to run");
    }
    r.finish().expect("finish run");
    let run = std::fs::read(&run_path).expect("read run");
    println!("run_file seed: {} bytes", run.len());
    out.put("run_file", "tiny-run", &run);
    out.put("run_file", "tiny-run-no-magic", &run[8..]);
    let _ = std::fs::remove_dir_all(&dir);
    // game_block: two chess games (one from a FEN) as a game store keeps them, and no games.
    let pgn = "[Event \"E\"]\n[Site \"https://lichess.org/q7ZvsdUF\"]\n[White \"W\"]\n[Black \"B\"]\n[Result \"1-0\"]\n[WhiteElo \"2400\"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n\n[Event \"F\"]\n[FEN \"4k3/8/8/8/8/8/4P3/4K3 b - - 0 40\"]\n[SetUp \"1\"]\n\n40... Kd7 41. e4 *\n";
    let mut reader = bookdb::ops::pgn::GameReader::new(pgn.as_bytes());
    let mut games = Vec::new();
    while let Some(g) = reader.next_game().expect("seed PGN") {
        let start = match &g.fen {
            Some(f) => bookdb::chess::parse_fen(f).expect("seed FEN"),
            None => shakmaty::Chess::default(),
        };
        let fp = bookdb::ops::pgn::game_fingerprint(&g);
        games.push(bookdb::ops::gamerec::record(&g, &start, 50, fp).expect("seed game"));
    }
    let gb = |g: &[bookdb::store::gameblock::StoredGame]| {
        bookdb::store::gameblock::encode(g, 3).expect("game block")
    };
    out.put("game_block", "two-games", &gb(&games));
    // The same with the moves in a body frame, as a book's store writes them (block version 2).
    out.put(
        "game_block",
        "two-games-split",
        &bookdb::store::gameblock::encode_split(&games, 3, bookdb::chess::gamefields::MOVES_FIELD)
            .expect("game block"),
    );
    out.put("game_block", "no-games", &gb(&[]));
    // game_run: the same games, sorted, as an import spills them (and a run of none).
    let dir = std::env::temp_dir().join(format!("bookdb-seeds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut sorted = games.clone();
    sorted.sort_by(bookdb::store::gameblock::store_order);
    for (name, games) in [("two-games", sorted), ("no-games", Vec::new())] {
        let path = dir.join(format!("{name}.games"));
        let mut w = bookdb::store::gamerun::GameRunWriter::create(&path).expect("game run");
        for g in games {
            w.push(g).expect("sorted");
        }
        w.finish().expect("game run written");
        let bytes = std::fs::read(&path).expect("game run read");
        out.put("game_run", name, &bytes);
        out.put("game_run", &format!("{name}-no-magic"), &bytes[8..]);
        let _ = std::fs::remove_file(&path);
    }
    let _ = std::fs::remove_dir(&dir);
    // ref_block: a reference chunk of three entries (one with a move no game played), and a
    // fact chunk.
    let entries = vec![
        vec![vec![7, 3, 0], vec![5]],
        vec![vec![1]],
        vec![vec![], vec![100_000, 99_000, 12]],
    ];
    let rb = bookdb::store::refblock::encode_chunk(&entries, 17).expect("reference chunk");
    out.put("ref_block", "three-entries", &rb);
    out.put(
        "ref_block",
        "facts",
        &bookdb::store::refblock::encode_facts(&[
            bookdb::store::refblock::FactRow {
                cell: 0x1234_5603,
                white: 2400,
                black: 2400,
                result: 1,
            },
            bookdb::store::refblock::FactRow {
                result: 3,
                ..Default::default()
            },
        ]),
    );
    // id_chunk: a chunk of spread ids (one repeated) and a chunk of one row.
    let rows = [(3u64, 7u32), (1 << 40, 2), (1 << 40, 9), ((1 << 47) - 1, 100_000)];
    out.put("id_chunk", "four-rows", &bookdb::store::idchunk::encode(&rows).expect("id chunk"));
    out.put("id_chunk", "one-row", &bookdb::store::idchunk::encode(&[(42, 0)]).expect("id chunk"));
    // Keep the trained model referenced by the seeds in sync with the fuzz targets.
    let _ = loaded_model();

    println!("wrote {} seeds under {}", out.written, out.root.display());
}
