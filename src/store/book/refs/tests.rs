//! The reference builder's unit tests: spilled and in-memory builds, the selection per cell.

use super::*;
use crate::store::error::CodecError;
use crate::store::facet::{Cell, Period};
use crate::store::gamerefs::GameFacts;
use crate::store::{PositionModel, gamerefs::Refs};
use proptest::prelude::*;

/// A game whose fields are its pairs: field 0 = strength, field 1 = cell speed, then one
/// field per pair `key (8 bytes) move (2 bytes)`.
struct FakeCodec;

impl PositionCodec for FakeCodec {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn key(&self, _: &[u8]) -> std::result::Result<u64, CodecError> {
        Ok(0)
    }
    fn train(&self, _: &[&[u8]]) -> std::result::Result<Vec<u8>, CodecError> {
        Ok(Vec::new())
    }
    fn load_model(&self, _: &[u8]) -> std::result::Result<Arc<dyn PositionModel>, CodecError> {
        Err("no models".into())
    }
    fn index_game(
        &self,
        g: &StoredGame,
        pairs: &mut Vec<(u64, u16)>,
    ) -> std::result::Result<Option<GameFacts>, CodecError> {
        pairs.clear();
        for f in &g.fields[2..] {
            let key = u64::from_le_bytes(f[..8].try_into().unwrap());
            pairs.push((key, u16::from_le_bytes([f[8], f[9]])));
        }
        pairs.sort_unstable();
        pairs.dedup();
        Ok(Some(GameFacts {
            cell: Cell {
                period: Period::Year(2000),
                speed: g.fields[1][0],
                group: 0,
                mode: 0,
            },
            strength: u16::from_le_bytes([g.fields[0][0], g.fields[0][1]]),
            // Two ratings that add up to the strength (0: none; a strength is never 1).
            white: {
                let s = u16::from_le_bytes([g.fields[0][0], g.fields[0][1]]);
                s - s / 2
            },
            black: u16::from_le_bytes([g.fields[0][0], g.fields[0][1]]) / 2,
            result: 3,
        }))
    }
}

/// A fake game: strength, speed, pairs.
type FakeGame = (u16, u8, Vec<(u64, u16)>);

fn games() -> impl Strategy<Value = Vec<FakeGame>> {
    proptest::collection::vec(
        (
            prop_oneof![Just(0u16), 2u16..4000],
            0u8..3,
            proptest::collection::vec((0u64..12, 0u16..3), 1..30),
        ),
        1..300,
    )
}

fn build(games: &[FakeGame], budget: usize, dir: &std::path::Path) -> Vec<PosRefs> {
    let mut b = RefBuilder::new(RefContext {
        codec: Arc::new(FakeCodec),
        facets: FacetSet::ALL,
        budget,
        prefix: dir.join(format!("b{budget}")),
    });
    for (strength, speed, pairs) in games {
        let mut fields = vec![strength.to_le_bytes().to_vec(), vec![*speed]];
        for (k, m) in pairs {
            let mut f = k.to_le_bytes().to_vec();
            f.extend_from_slice(&m.to_le_bytes());
            fields.push(f);
        }
        b.add(&StoredGame { id: 0, fields }).unwrap();
    }
    let mut out = Vec::new();
    b.positions(&mut |p| {
        out.push(p);
        Ok(())
    })
    .unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Spilled runs merge to the same references as sorting in memory, and each (position,
    /// move) names exactly the union of its cells' newest and strongest games.
    #[test]
    fn spilled_and_in_memory_builds_agree_and_select_per_cell(gs in games()) {
        let dir = tempfile::tempdir().unwrap();
        let mem = build(&gs, 1 << 30, dir.path());
        let spilled = build(&gs, 0, dir.path());
        prop_assert_eq!(&mem, &spilled);
        // The expected union, from the selection rule of store::gamerefs.
        let mut want: std::collections::BTreeMap<(u64, u16), Vec<u32>> = Default::default();
        let mut by_cell: std::collections::BTreeMap<(u64, u16, u8), Vec<crate::store::gamerefs::GameRef>> = Default::default();
        for (n, (strength, speed, pairs)) in gs.iter().enumerate() {
            let mut ps = pairs.clone();
            ps.sort_unstable();
            ps.dedup();
            for (k, m) in ps {
                by_cell.entry((k, m, *speed)).or_default().push(crate::store::gamerefs::GameRef {
                    date: n as u32,
                    id: 0,
                    rating_sum: u32::from(*strength),
                });
            }
        }
        for ((k, m, _), refs) in by_cell {
            let r = Refs::of(refs);
            let e = want.entry((k, m)).or_default();
            e.extend(r.newest().iter().chain(r.strongest()).map(|g| g.date));
        }
        let mut flat: Vec<((u64, u16), Vec<u32>)> = Vec::new();
        for p in &mem {
            for (m, ns) in &p.moves {
                flat.push(((p.key, *m), ns.clone()));
            }
        }
        let want: Vec<((u64, u16), Vec<u32>)> = want
            .into_iter()
            .map(|(k, mut v)| {
                v.sort_unstable_by(|a, b| b.cmp(a));
                v.dedup();
                (k, v)
            })
            .collect();
        prop_assert_eq!(flat, want);
        // No run file is left behind.
        prop_assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
