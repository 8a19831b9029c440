//! Development tool: the cost of one explorer query at a position, in process (no HTTP), for
//! a book with facets against one without: `facetprobe BOOK [FILTER...]` where a filter is
//! `speeds=blitz`, `ratings=2000`, `since=2015-01`, `until=2019-12`. With `FACETPROBE_COLD=1`
//! the book has no block cache, so every query reads, decompresses and walks its blocks (what
//! the first query for a position costs; redb's page cache stays). With `FACETPROBE_SAMPLE=N`
//! it asks N positions spread over the book instead of the start position, each once per
//! round for five rounds, and prints the median of the last round (and of the first). With
//! `FACETPROBE_VARY=1` each query's filter also takes one of 16 far-future `until` months in
//! turn (which pass every cell the filter passes): a block keeps the answers to 8 questions,
//! so every query walks the cells of a cached block, as the first query of a filter does once
//! the position's block is read.
use bookdb::ops::explorer::explore_counting;
use bookdb::ops::facets::Counting;
use bookdb::store::Book;
use bookdb::store::facet::{CellFilter, DateBound};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: facetprobe BOOK [FILTER...]");
    let mut filter = CellFilter::default();
    for a in args {
        let (k, v) = a.split_once('=').expect("FILTER is key=value");
        match k {
            "speeds" => filter.speeds = Some(CellFilter::parse_speeds(v).expect("speeds")),
            "ratings" => filter.groups = Some(CellFilter::parse_ratings(v).expect("ratings")),
            "since" => filter.since = Some(DateBound::parse(v).expect("since")),
            "until" => filter.until = Some(DateBound::parse(v).expect("until")),
            _ => panic!("unknown filter {k}"),
        }
    }
    let path = std::path::Path::new(&path);
    let book = if std::env::var_os("FACETPROBE_COLD").is_some() {
        let caches = bookdb::store::CacheSizes {
            block_bytes: 0,
            ..Default::default()
        };
        Book::open_with_caches(path, bookdb::chess_codec(), caches)
    } else {
        Book::open(path, bookdb::chess_codec())
    }
    .expect("open");
    let counting = Counting {
        filter,
        history: None,
    };
    if let Some(n) = std::env::var("FACETPROBE_SAMPLE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return sample(&book, n, &counting);
    }
    let line = vec![shakmaty::Chess::default()];
    let start = bookdb::chess::PosState::from_chess(&line[0]).pack().0;
    if let Some(e) = book.lookup(&start).expect("lookup") {
        let cells: usize = e.moves.iter().map(|m| m.cells.len()).sum();
        println!("start position: {} moves, {cells} cells", e.moves.len());
    }
    let vary = std::env::var_os("FACETPROBE_VARY").is_some();
    let countings: Vec<Counting> = (0..16)
        .map(|i| Counting {
            filter: CellFilter {
                until: vary
                    .then(|| {
                        DateBound::parse(&format!("{}-{:02}", 2098 + i / 12, 1 + i % 12))
                            .expect("month")
                    })
                    .or(counting.filter.until),
                ..counting.filter.clone()
            },
            history: None,
        })
        .collect();
    let mut ns = Vec::new();
    let mut total = 0;
    for i in 0..2200 {
        let counting = &countings[i % countings.len()];
        let t = Instant::now();
        let a = explore_counting(&book, &line, 12, counting).expect("query");
        let e = t.elapsed().as_nanos() as f64;
        total += a.white;
        if i >= 200 {
            ns.push(e);
        }
    }
    ns.sort_by(f64::total_cmp);
    println!(
        "p10 {:.1} us  median {:.1} us  p90 {:.1} us  (white total {})",
        ns[ns.len() / 10] / 1e3,
        ns[ns.len() / 2] / 1e3,
        ns[ns.len() * 9 / 10] / 1e3,
        total / 2200
    );
    println!(
        "kept: {} answers, {} entries with every cell",
        book.kept_answers(),
        book.kept_every_cells()
    );
}

/// The median query time over `n` positions spread over the book, per round.
fn sample(book: &Book, n: usize, counting: &Counting) {
    let all: Vec<Vec<u8>> = book
        .iter()
        .expect("iter")
        .filter_map(|e| e.expect("entry").pos)
        .collect();
    let step = (all.len() / n.max(1)).max(1);
    let lines: Vec<Vec<shakmaty::Chess>> = all
        .iter()
        .step_by(step)
        .filter_map(|p| {
            let s = bookdb::chess::PosState::unpack(p).ok()?;
            Some(vec![s.to_chess().ok()?])
        })
        .collect();
    for round in 0..5 {
        let mut ns: Vec<f64> = lines
            .iter()
            .map(|line| {
                let t = Instant::now();
                let _ = explore_counting(book, line, 12, counting).expect("query");
                t.elapsed().as_nanos() as f64
            })
            .collect();
        ns.sort_by(f64::total_cmp);
        if round == 0 || round == 4 {
            println!(
                "round {round}: {} positions, median {:.1} us, p90 {:.1} us",
                ns.len(),
                ns[ns.len() / 2] / 1e3,
                ns[ns.len() * 9 / 10] / 1e3
            );
        }
    }
}
