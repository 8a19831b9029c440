//! Game runs: the import's spill files of stored games (docs/FORMAT.md §8.5), each a sorted
//! run of games in the game store's order ([`crate::store::gameblock::store_order`]) that
//! the book's writer merges into its game store. A run is magic `BDBGAM01`, then frames
//! `len:u32 LE, game block` (§15.1, up to [`RUN_BLOCK_GAMES`] games each), then an end frame
//! `len = 0`, the game count (u64 LE) and a crc32 of all frame bytes (u32 LE). A run only
//! counts once it has been fsynced and renamed from `*.tmp` to its final name.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::gameblock::{self, StoredGame, store_order};
use crate::store::error::{Error, Result};

const MAGIC: &[u8; 8] = b"BDBGAM01";
/// Games per block of a run (a reader holds one block decoded: a few hundred KiB at most).
pub(crate) const RUN_BLOCK_GAMES: usize = 256;
/// zstd level of a run's blocks (transient files: speed first).
const RUN_LEVEL: i32 = 3;
/// Largest frame a reader accepts.
const MAX_FRAME: u32 = 80 << 20;

/// Writes games, already in the store's order, as a game run.
pub struct GameRunWriter {
    tmp: PathBuf,
    path: PathBuf,
    out: BufWriter<File>,
    crc: crc32fast::Hasher,
    count: u64,
    pending: Vec<StoredGame>,
    /// The last game of the previous block (for the order check).
    last: Option<StoredGame>,
}

impl GameRunWriter {
    pub fn create(path: &Path) -> Result<GameRunWriter> {
        let tmp = path.with_extension("games-tmp");
        let f = crate::store::files::create_temp(&tmp)?;
        crate::store::files::adopt_dir_access(&f, &tmp)?;
        let mut out = BufWriter::with_capacity(1 << 16, f);
        out.write_all(MAGIC)
            .map_err(|e| Error::io(format!("writing game run {}", tmp.display()), e))?;
        Ok(GameRunWriter {
            tmp,
            path: path.to_path_buf(),
            out,
            crc: crc32fast::Hasher::new(),
            count: 0,
            pending: Vec::with_capacity(RUN_BLOCK_GAMES),
            last: None,
        })
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::io(format!("writing game run {}", self.tmp.display()), e)
    }

    pub fn push(&mut self, g: StoredGame) -> Result<()> {
        if let Some(prev) = self.pending.last().or(self.last.as_ref())
            && store_order(prev, &g) == std::cmp::Ordering::Greater
        {
            return Err(Error::Internal(format!(
                "game run {}: games out of order",
                self.tmp.display()
            )));
        }
        self.pending.push(g);
        self.count += 1;
        if self.pending.len() >= RUN_BLOCK_GAMES {
            self.write_block()?;
        }
        Ok(())
    }

    fn frame(&mut self, bytes: &[u8]) -> Result<()> {
        let len = u32::try_from(bytes.len())
            .ok()
            .filter(|&n| n > 0 && n <= MAX_FRAME)
            .ok_or_else(|| Error::Internal(format!("a game block of {} bytes", bytes.len())))?
            .to_le_bytes();
        self.crc.update(&len);
        self.crc.update(bytes);
        self.out.write_all(&len).map_err(|e| self.io(e))?;
        self.out.write_all(bytes).map_err(|e| self.io(e))
    }

    fn write_block(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let block = gameblock::encode(&self.pending, RUN_LEVEL).map_err(|e| self.io(e))?;
        self.frame(&block)?;
        self.last = self.pending.pop();
        self.pending.clear();
        Ok(())
    }

    /// Ends the run durably and moves it to its final name. Returns the game count.
    pub fn finish(mut self) -> Result<u64> {
        self.write_block()?;
        let ctx = |e| Error::io(format!("finishing game run {}", self.tmp.display()), e);
        let mut tail = Vec::with_capacity(16);
        tail.extend_from_slice(&0u32.to_le_bytes());
        tail.extend_from_slice(&self.count.to_le_bytes());
        tail.extend_from_slice(&self.crc.clone().finalize().to_le_bytes());
        self.out.write_all(&tail).map_err(ctx)?;
        let f = self.out.into_inner().map_err(|e| ctx(e.into_error()))?;
        f.sync_all().map_err(ctx)?;
        std::fs::rename(&self.tmp, &self.path).map_err(ctx)?;
        Ok(self.count)
    }
}

/// Reads a game run back, checking its frames, count, checksum and order: an iterator of
/// games in the store's order.
pub struct GameRunReader {
    name: String,
    src: Box<dyn Read + Send>,
    crc: crc32fast::Hasher,
    count: u64,
    block: std::vec::IntoIter<StoredGame>,
    last: Option<StoredGame>,
    done: bool,
}

impl GameRunReader {
    pub fn open(path: &Path) -> Result<GameRunReader> {
        let name = path.display().to_string();
        let f = File::open(path).map_err(|e| Error::io(format!("opening game run {name}"), e))?;
        GameRunReader::from_reader(name, Box::new(BufReader::with_capacity(1 << 14, f)))
    }

    pub fn from_reader(name: String, mut src: Box<dyn Read + Send>) -> Result<Self> {
        let mut magic = [0u8; 8];
        src.read_exact(&mut magic)
            .map_err(|e| Error::io(format!("game run {name}: reading header"), e))?;
        let r = GameRunReader {
            name,
            src,
            crc: crc32fast::Hasher::new(),
            count: 0,
            block: Vec::new().into_iter(),
            last: None,
            done: false,
        };
        if &magic != MAGIC {
            return Err(r.damaged("not a game run (bad magic)"));
        }
        Ok(r)
    }

    fn damaged(&self, why: impl std::fmt::Display) -> Error {
        Error::Damaged(format!("game run {} is damaged: {why}", self.name))
    }

    /// Reads the next block; `false` at the (checked) end.
    fn next_block(&mut self) -> Result<bool> {
        let mut len = [0u8; 4];
        self.src.read_exact(&mut len).map_err(|e| self.damaged(e))?;
        let n = u32::from_le_bytes(len);
        if n == 0 {
            return crate::store::run::read_end_frame(
                &mut self.src,
                self.count,
                self.crc.clone().finalize(),
            )
            .map(|()| false)
            .map_err(|e| self.damaged(e));
        }
        if n > MAX_FRAME {
            return Err(self.damaged(format!("frame of {n} bytes")));
        }
        let mut buf = vec![0u8; n as usize];
        self.src.read_exact(&mut buf).map_err(|e| self.damaged(e))?;
        self.crc.update(&len);
        self.crc.update(&buf);
        let games = gameblock::decode(&buf).map_err(|e| self.damaged(e))?;
        if games.is_empty() {
            return Err(self.damaged("an empty block"));
        }
        self.block = games.into_iter();
        Ok(true)
    }

    fn next_game(&mut self) -> Result<Option<StoredGame>> {
        loop {
            if let Some(g) = self.block.next() {
                if let Some(prev) = &self.last
                    && store_order(prev, &g) == std::cmp::Ordering::Greater
                {
                    return Err(self.damaged("games out of order"));
                }
                self.count += 1;
                self.last = Some(g.clone());
                return Ok(Some(g));
            }
            if !self.next_block()? {
                return Ok(None);
            }
        }
    }
}

impl Iterator for GameRunReader {
    type Item = Result<StoredGame>;
    fn next(&mut self) -> Option<Result<StoredGame>> {
        if self.done {
            return None;
        }
        let r = self.next_game().transpose();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn game(i: u64) -> StoredGame {
        let mut fields = vec![Vec::new(); 13];
        fields[gameblock::DATE_FIELD] = format!("20{:02}.01.01", i % 30).into_bytes();
        fields[12] = vec![(i % 7) as u8; (i % 50) as usize];
        StoredGame { id: i, fields }
    }

    fn sorted(n: u64) -> Vec<StoredGame> {
        let mut v: Vec<StoredGame> = (0..n).map(game).collect();
        v.sort_by(store_order);
        v
    }

    #[test]
    fn a_run_reads_back_its_games_and_refuses_disorder() {
        let dir = tempfile::tempdir().unwrap();
        for n in [0, 1, 255, 256, 257, 1000] {
            let p = dir.path().join(format!("r{n}.games"));
            let games = sorted(n);
            let mut w = GameRunWriter::create(&p).unwrap();
            for g in games.clone() {
                w.push(g).unwrap();
            }
            assert_eq!(w.finish().unwrap(), n);
            let back: Vec<StoredGame> = GameRunReader::open(&p)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(back, games);
        }
        let mut w = GameRunWriter::create(&dir.path().join("bad.games")).unwrap();
        w.push(game(5)).unwrap();
        assert!(w.push(game(4)).is_err(), "2005 after 2004 is out of order");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any byte changed or cut off makes the run fail to read (an error, never a panic
        /// and never other games).
        #[test]
        fn damage_is_detected(n in 1u64..600, at in any::<prop::sample::Index>(), flip in 1u8..=255, cut in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("r.games");
            let mut w = GameRunWriter::create(&p).unwrap();
            for g in sorted(n) {
                w.push(g).unwrap();
            }
            w.finish().unwrap();
            let mut bytes = std::fs::read(&p).unwrap();
            let i = at.index(bytes.len());
            if cut {
                bytes.truncate(i);
            } else {
                bytes[i] ^= flip;
            }
            let r = GameRunReader::from_reader("r".into(), Box::new(std::io::Cursor::new(bytes)));
            let failed = match r {
                Err(_) => true,
                Ok(r) => r.collect::<Result<Vec<_>>>().is_err(),
            };
            prop_assert!(failed);
        }
    }
}
