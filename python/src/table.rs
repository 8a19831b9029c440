//! `bookdb._bookdb.Table`: a table of opaque states (`bookdb::store::tt`, game `opaque`) keyed by
//! the canonical encoding of easyAI's `ttentry()` and holding the entries easyAI stores, for
//! `bookdb.TranspositionTable`. The entry's depth and bound are easyAI's `depth` and `flag`
//! (so the crate's replacement rule sees them), its value easyAI's rounded to an integer, and
//! its best move the canonical encoding of the whole stored dict, which `lookup` decodes.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use bookdb::store::tt::{self, BestMove, Bound as TtBound, KeyHash, OPAQUE, Table, TableOptions};

use crate::{OrPy, canon, usage};

/// easyAI's flags (`easyAI.AI.Negamax`: LOWERBOUND, EXACT, UPPERBOUND = -1, 0, 1).
fn bound_of(flag: i64) -> PyResult<TtBound> {
    match flag {
        0 => Ok(TtBound::Exact),
        -1 => Ok(TtBound::Lower),
        1 => Ok(TtBound::Upper),
        f => Err(PyValueError::new_err(format!(
            "flag {f} is not easyAI's LOWERBOUND (-1), EXACT (0) or UPPERBOUND (1)"
        ))),
    }
}

#[pyclass(unsendable, module = "bookdb._bookdb", name = "Table")]
pub struct PyTable {
    table: Option<Table>,
    path: PathBuf,
    generation: u32,
}

impl PyTable {
    fn table(&mut self) -> PyResult<&mut Table> {
        self.table
            .as_mut()
            .ok_or_else(|| usage("the transposition table is closed".into()))
    }
}

#[pymethods]
impl PyTable {
    /// Opens (or, at its first publication, creates) the table at `path` for reading and
    /// writing (one writer at a time). `hash`: for a new table, the hash of the states
    /// ("xxh3", or easyAI's "simple", "xor", "add", "rotate", "bernstein", "shift-add",
    /// "fnv", "one-at-a-time"); `key_bits`: for a new table, the key bits kept (fewer force
    /// collisions: tests); `memory_mib`: the memory tier's budget, past which stores are
    /// published.
    #[new]
    #[pyo3(signature = (path, hash="xxh3", key_bits=64, memory_mib=64))]
    fn new(path: PathBuf, hash: &str, key_bits: u8, memory_mib: usize) -> PyResult<Self> {
        let hash = KeyHash::from_name(hash).ok_or_else(|| {
            let names: Vec<&str> = KeyHash::ALL.iter().map(|h| h.name()).collect();
            usage(format!("hash: {hash:?} is none of {}", names.join(", ")))
        })?;
        if !(1..=64).contains(&key_bits) {
            return Err(usage(format!("key_bits: {key_bits} is not in 1..=64")));
        }
        let opts = TableOptions {
            memory_mib,
            hash,
            key_bits,
            ..TableOptions::default()
        };
        let mut table = Table::open(&path, OPAQUE, &opts).or_py()?;
        let generation = table.new_search();
        Ok(PyTable {
            table: Some(table),
            path,
            generation,
        })
    }

    /// The dict stored for `state` (a `ttentry()`), or None.
    fn lookup<'py>(
        &mut self,
        py: Python<'py>,
        state: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let key = canon::encode(state, true)?;
        let found = self.table()?.probe_state(&key).or_py()?;
        match found.map(|e| e.best_move) {
            Some(BestMove::Bytes(b)) => Ok(Some(canon::decode(py, &b)?)),
            Some(_) => Err(usage(
                "this table holds entries that no bookdb.TranspositionTable stored".into(),
            )),
            None => Ok(None),
        }
    }

    /// Stores `data` (easyAI's `depth`, `value`, `move`, `flag`, and anything else) for
    /// `state`; whether the replacement rule kept it.
    fn store(&mut self, state: &Bound<'_, PyAny>, data: &Bound<'_, PyDict>) -> PyResult<bool> {
        let key = canon::encode(state, true)?;
        let depth = match data.get_item("depth")? {
            Some(d) => d.extract::<i64>()?.clamp(0, i64::from(u16::MAX)) as u16,
            None => 0,
        };
        let bound = match data.get_item("flag")? {
            Some(f) => bound_of(f.extract::<i64>()?)?,
            None => TtBound::Exact,
        };
        let value = match data.get_item("value")? {
            Some(v) => match v.extract::<f64>() {
                Ok(x) if x.is_nan() => 0,
                Ok(x) => x.round().clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32,
                Err(_) => 0,
            },
            None => 0,
        };
        let payload = canon::encode(data.as_any(), false)?;
        let entry = tt::Entry {
            depth,
            value,
            bound,
            best_move: BestMove::Bytes(payload.into_boxed_slice()),
            generation: self.generation,
        };
        self.table()?.store_state(&key, entry).or_py()
    }

    /// Publishes every unpublished store (after it, a crash keeps them).
    fn flush(&mut self) -> PyResult<()> {
        self.table()?.flush().or_py()
    }

    /// Publishes and lets the table go (its writer lock too).
    fn close(&mut self) -> PyResult<()> {
        match self.table.take() {
            Some(t) => t.close().or_py(),
            None => Ok(()),
        }
    }

    /// The table's counters: calls (lookups), hits, collisions, stores, kept_out, files,
    /// held, unpublished… (`bookdb tt stats`).
    fn stats(&mut self) -> PyResult<std::collections::BTreeMap<&'static str, u64>> {
        let s = self.table()?.stats();
        Ok([
            ("calls", s.calls),
            ("hits", s.hits),
            ("collisions", s.collisions),
            ("stores", s.stores),
            ("kept_out", s.kept_out),
            ("files_written", s.files_written),
            ("entries_written", s.entries_written),
            ("files", s.files),
            ("file_entries", s.file_entries),
            ("held", s.held),
            ("unpublished", s.unpublished),
            ("memory_bytes", s.memory_bytes),
        ]
        .into_iter()
        .collect())
    }

    /// Positions published (what a new reader sees), by one pass over the files.
    fn published_count(&mut self) -> PyResult<u64> {
        let mut n = 0;
        for item in self.table()?.published().or_py()? {
            item.or_py()?;
            n += 1;
        }
        Ok(n)
    }

    /// Bytes of the table's files.
    fn file_bytes(&mut self) -> PyResult<u64> {
        Ok(self.table()?.file_bytes())
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    #[getter]
    fn hash(&mut self) -> PyResult<&'static str> {
        Ok(self.table()?.kind().hash.name())
    }
}
