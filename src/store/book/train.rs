//! Training a writer's position model and section-A dictionary on a sample of entries.

use std::sync::Arc;

use super::seal::seal_threads;
use super::*;
use crate::store::block::{self};
use crate::store::entry::Entry;
use crate::store::error::{CodecError, Error, Result};
use crate::store::{PositionCodec, PositionModel};

/// Entries per dictionary training sample.
pub(super) const DICT_SAMPLE_ENTRIES: usize = 256;

/// What the training thread needs.
pub(super) struct TrainSettings {
    pub(super) codec: Arc<dyn PositionCodec>,
    pub(super) dictionary: bool,
    pub(super) dictionary_bytes: usize,
    pub(super) level: i32,
    pub(super) reuse: Option<BookCompression>,
}

/// A trained (or reused) model and dictionary, the block-size seed, and the sample with its
/// prepared forms.
pub(super) struct Trained {
    pub(super) bytes: Vec<u8>,
    pub(super) model: Arc<dyn PositionModel>,
    pub(super) dict: Option<Vec<u8>>,
    pub(super) a_per_entry: usize,
    pub(super) entries: Vec<Entry>,
    pub(super) prepared: Vec<block::Prepared>,
    /// How long training took, for the writer's trace ([`super::BookWriter::on_trace`]).
    pub(super) timing: String,
}

/// Trains the position model and the section-A dictionary on a sample of entries (or takes
/// reused ones) and prepares the sample (position coding, move indexing) on all cores.
pub(super) fn train_sample(s: TrainSettings, entries: Vec<Entry>) -> Result<Trained> {
    let t0 = std::time::Instant::now();
    let bytes = match &s.reuse {
        Some(c) => c.model.clone(),
        None => {
            let samples: Vec<&[u8]> = entries.iter().filter_map(|e| e.pos.as_deref()).collect();
            s.codec.train(&samples)?
        }
    };
    let t1 = t0.elapsed();
    let model = s.codec.load_model(&bytes)?;
    let prepared = prepare_parallel(&entries, &*s.codec, &model)?;
    let t2 = t0.elapsed();
    let mut dict = None;
    let mut a_per_entry = 3 * 256;
    let chunks = entries.len() / DICT_SAMPLE_ENTRIES;
    let reused_dict = s.reuse.and_then(|c| c.dictionary);
    let needed = if reused_dict.is_some() { 1 } else { 64 };
    if s.dictionary && chunks >= needed {
        let mut a_samples = Vec::with_capacity(chunks);
        for (c, p) in entries
            .chunks_exact(DICT_SAMPLE_ENTRIES)
            .zip(prepared.chunks_exact(DICT_SAMPLE_ENTRIES))
        {
            a_samples.push(block::build_payload_with(c, p, false)?.a);
        }
        let refs: Vec<&[u8]> = a_samples.iter().map(Vec::as_slice).collect();
        dict = match reused_dict {
            Some(d) => Some(d),
            None => zstd::dict::from_samples(&refs, s.dictionary_bytes).ok(),
        };
        // Seed the block-size estimate with what sample blocks really compress to.
        if let Ok(mut comp) = match &dict {
            Some(d) => zstd::bulk::Compressor::with_dictionary(s.level, d),
            None => zstd::bulk::Compressor::new(s.level),
        } {
            let probe: Vec<usize> = a_samples
                .iter()
                .step_by((a_samples.len() / 16).max(1))
                .filter_map(|a| comp.compress(a).ok().map(|c| c.len()))
                .collect();
            if !probe.is_empty() {
                a_per_entry =
                    probe.iter().sum::<usize>() * 256 / (probe.len() * DICT_SAMPLE_ENTRIES);
            }
        }
    }
    let timing = format!(
        "model {t1:?}, sample prepared {:?}, dictionary and seed {:?} ({} entries)",
        t2 - t1,
        t0.elapsed() - t2,
        entries.len()
    );
    Ok(Trained {
        timing,
        bytes,
        model,
        dict,
        a_per_entry,
        entries,
        prepared,
    })
}

/// Prepares entries (position coding, move indexing) on all cores.
pub(super) fn prepare_parallel(
    entries: &[Entry],
    codec: &dyn PositionCodec,
    model: &Arc<dyn PositionModel>,
) -> Result<Vec<block::Prepared>> {
    let threads = seal_threads();
    let chunk = entries.len().div_ceil(threads).max(1);
    let parts: Vec<Result<Vec<block::Prepared>>> = std::thread::scope(|s| {
        let handles: Vec<_> = entries
            .chunks(chunk)
            .map(|c| {
                let model = model.clone();
                s.spawn(move || {
                    c.iter()
                        .map(|e| block::prepare(e, codec, &*model))
                        .collect::<Result<Vec<_>, CodecError>>()
                        .map_err(Error::from)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Internal("prepare thread panicked".into())))
            })
            .collect()
    });
    let mut out = Vec::with_capacity(entries.len());
    for p in parts {
        out.extend(p?);
    }
    Ok(out)
}
