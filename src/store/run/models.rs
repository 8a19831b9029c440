//! Position models shared by the runs of one import: the first run trained gives its model to
//! the runs written after it, and readers keep one loaded copy of each distinct model.
//!
//! A chess model takes ~0.4 MiB in memory (12,544 square tables of 32 bytes) against ~37 KB
//! stored. A merge of 64 runs that each trained their own model held 25 MiB of models; runs
//! that share one hold 0.4 MiB. A run still stores its model frame (the run format is
//! unchanged), so runs from before a resume, or from another build, are read as they are.

use std::sync::{Arc, Mutex, Weak};

use crate::store::PositionModel;
use crate::store::error::Result;

/// The models of one import's runs (see the module doc). Cheap to clone: a shared handle.
#[derive(Clone, Default)]
pub(crate) struct RunModels {
    inner: Arc<Mutex<Inner>>,
}

/// A model as a run stores it (the codec's serialized bytes) and loaded.
type Model = (Vec<u8>, Arc<dyn PositionModel>);

#[derive(Default)]
struct Inner {
    /// What runs written from now on take instead of training: the first model trained.
    trained: Option<Model>,
    /// Models loaded by readers, by their bytes, while a reader holds them.
    loaded: Vec<(Vec<u8>, Weak<dyn PositionModel>)>,
}

impl RunModels {
    pub(crate) fn new() -> RunModels {
        RunModels::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic elsewhere while holding the lock leaves the lists valid: keep using them.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The model a new run stores: the shared one, else the one `train` gives (trained without
    /// the lock; it becomes the shared one unless another run's got there first). `train`
    /// returns the serialized model, empty for none (the identity model: never shared).
    pub(crate) fn for_writer(
        &self,
        train: impl FnOnce() -> Result<Vec<u8>>,
        load: impl FnOnce(&[u8]) -> Result<Arc<dyn PositionModel>>,
    ) -> Result<Option<Model>> {
        if let Some(m) = &self.lock().trained {
            return Ok(Some(m.clone()));
        }
        let bytes = train()?;
        if bytes.is_empty() {
            return Ok(None);
        }
        let model = load(&bytes)?;
        let mut inner = self.lock();
        Ok(Some(inner.trained.get_or_insert((bytes, model)).clone()))
    }

    /// The loaded model of `bytes`: one a reader or writer of these runs already holds, or
    /// the one `load` gives (kept for the next reader while someone holds it).
    pub(crate) fn for_reader(
        &self,
        bytes: &[u8],
        load: impl FnOnce(&[u8]) -> Result<Arc<dyn PositionModel>>,
    ) -> Result<Arc<dyn PositionModel>> {
        {
            let mut inner = self.lock();
            if let Some((b, m)) = &inner.trained
                && b.as_slice() == bytes
            {
                return Ok(m.clone());
            }
            inner.loaded.retain(|(_, w)| w.strong_count() > 0);
            if let Some(m) = inner
                .loaded
                .iter()
                .find(|(b, _)| b.as_slice() == bytes)
                .and_then(|(_, w)| w.upgrade())
            {
                return Ok(m);
            }
        }
        let model = load(bytes)?;
        self.lock()
            .loaded
            .push((bytes.to_vec(), Arc::downgrade(&model)));
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::PositionCodec;

    fn codec() -> Arc<dyn PositionCodec> {
        crate::chess_codec()
    }

    fn trained(seed: usize) -> Vec<u8> {
        let positions = crate::chess::tests_support::sample_positions();
        let samples: Vec<&[u8]> = positions.iter().skip(seed).map(Vec::as_slice).collect();
        codec().train(&samples).unwrap()
    }

    fn load(bytes: &[u8]) -> Result<Arc<dyn PositionModel>> {
        Ok(codec().load_model(bytes)?)
    }

    #[test]
    fn the_first_model_trained_is_the_one_later_runs_take() {
        let models = RunModels::new();
        let (a, ma) = models.for_writer(|| Ok(trained(0)), load).unwrap().unwrap();
        let mut trained_again = false;
        let (b, mb) = models
            .for_writer(
                || {
                    trained_again = true;
                    Ok(trained(5))
                },
                load,
            )
            .unwrap()
            .unwrap();
        assert!(!trained_again, "a later run does not train");
        assert_eq!(a, b);
        assert!(Arc::ptr_eq(&ma, &mb));
        // Readers of its bytes get the same loaded model.
        let mr = models.for_reader(&a, |_| panic!("loaded again")).unwrap();
        assert!(Arc::ptr_eq(&ma, &mr));
    }

    #[test]
    fn an_identity_model_is_not_shared() {
        let models = RunModels::new();
        assert!(
            models
                .for_writer(|| Ok(Vec::new()), load)
                .unwrap()
                .is_none()
        );
        let (a, _) = models.for_writer(|| Ok(trained(0)), load).unwrap().unwrap();
        assert_eq!(a, trained(0));
    }

    #[test]
    fn readers_share_equal_models_while_one_holds_it() {
        let models = RunModels::new();
        let (x, y) = (trained(1), trained(7));
        assert_ne!(x, y);
        let m1 = models.for_reader(&x, load).unwrap();
        let m2 = models.for_reader(&x, |_| panic!("loaded again")).unwrap();
        assert!(Arc::ptr_eq(&m1, &m2));
        let m3 = models.for_reader(&y, load).unwrap();
        assert!(!Arc::ptr_eq(&m1, &m3));
        drop((m1, m2));
        // No reader holds it: loaded anew, and the dead entry is dropped.
        let mut loads = 0;
        let _m4 = models
            .for_reader(&x, |b| {
                loads += 1;
                load(b)
            })
            .unwrap();
        assert_eq!(loads, 1);
        assert_eq!(models.lock().loaded.len(), 2);
    }

    #[test]
    fn a_failed_load_is_an_error_not_a_model() {
        let models = RunModels::new();
        assert!(models.for_reader(b"not a model", load).is_err());
        assert!(
            models
                .for_writer(|| Ok(b"not a model".to_vec()), load)
                .is_err()
        );
        assert!(models.lock().trained.is_none());
    }
}
