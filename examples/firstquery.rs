//! Development tool: what the first queries at a position cost on a freshly opened book, in
//! process: `firstquery BOOK` opens the book and times, once each and in this order, the
//! start position unfiltered, `speeds=blitz`, `speeds=blitz ratings=2000`, `speeds=rapid` and
//! an unfiltered history, with and without the games a lichess answer names.
use bookdb::ops::explorer::{explore_counting, explore_games};
use bookdb::ops::facets::Counting;
use bookdb::ops::topgames::Wanted;
use bookdb::store::Book;
use bookdb::store::facet::CellFilter;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: firstquery BOOK");
    let book = Book::open(std::path::Path::new(&path), bookdb::chess_codec()).expect("open");
    let line = vec![shakmaty::Chess::default()];
    let filter = |s: Option<&str>, r: Option<&str>| CellFilter {
        speeds: s.map(|s| CellFilter::parse_speeds(s).expect("speeds")),
        groups: r.map(|r| CellFilter::parse_ratings(r).expect("ratings")),
        ..CellFilter::default()
    };
    let asks = [
        ("unfiltered", filter(None, None), None),
        ("blitz", filter(Some("blitz"), None), None),
        ("blitz 2000", filter(Some("blitz"), Some("2000")), None),
        ("rapid", filter(Some("rapid"), None), None),
        ("history", filter(None, None), Some(false)),
    ];
    let games = std::env::var_os("FIRSTQUERY_GAMES").is_some();
    for (name, filter, history) in asks {
        let counting = Counting { filter, history };
        let t = Instant::now();
        let a = if games {
            explore_games(
                &book,
                &line,
                12,
                &counting,
                Some(Wanted::Lichess { top: 0, recent: 0 }),
            )
        } else {
            explore_counting(&book, &line, 12, &counting)
        }
        .expect("query");
        println!(
            "{name}: {:.0} us ({} games)",
            t.elapsed().as_secs_f64() * 1e6,
            a.white + a.draws + a.black
        );
    }
}
