//! The Othello position model's coding speed (docs/FORMAT.md §11.1): encode and decode of one
//! board, against packing and unpacking it (what the identity model costs). Boards are
//! played at random from the start, a deterministic set of every depth 0..60.
//!
//! `cargo bench --bench position_models`

use std::hint::black_box;

use bookdb::othello::{Board, OthelloModel};

fn main() {
    divan::main();
}

fn boards(n: u64) -> Vec<Board> {
    (0..n)
        .map(|i| Board::random_playout(i, (i % 61) as usize))
        .collect()
}

struct Set {
    boards: Vec<Board>,
    model: OthelloModel,
    coded: Vec<Vec<u8>>,
    packed: Vec<Vec<u8>>,
}

fn set() -> &'static Set {
    static S: std::sync::OnceLock<Set> = std::sync::OnceLock::new();
    S.get_or_init(|| {
        let boards = boards(4096);
        let model = OthelloModel::train(&boards[..2048]);
        let coded = boards.iter().map(|b| model.encode_board(b)).collect();
        let packed = boards.iter().map(|b| b.pack().0).collect();
        Set {
            boards,
            model,
            coded,
            packed,
        }
    })
}

#[divan::bench]
fn othello_encode(bencher: divan::Bencher) {
    let s = set();
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % s.boards.len();
        black_box(s.model.encode_board(black_box(&s.boards[i])))
    });
}

#[divan::bench]
fn othello_decode(bencher: divan::Bencher) {
    let s = set();
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % s.coded.len();
        black_box(s.model.decode_board(black_box(&s.coded[i])))
    });
}

#[divan::bench]
fn othello_pack(bencher: divan::Bencher) {
    let s = set();
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % s.boards.len();
        black_box(black_box(&s.boards[i]).pack())
    });
}

#[divan::bench]
fn othello_unpack(bencher: divan::Bencher) {
    let s = set();
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % s.packed.len();
        black_box(Board::unpack(black_box(&s.packed[i])))
    });
}
