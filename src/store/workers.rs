//! Persistent worker threads for the store's parallel batches (decoding a book's blocks while a
//! rewrite iterates it, indexing stored games for their references): threads that live as long
//! as their pool, so each keeps its allocator heap from one batch to the next.
//!
//! Why not a thread per batch: a thread that ends abandons its heap's pages, and the pages
//! still hold what it returned (the decoded entries a merge is about to use). mimalloc reuses
//! abandoned pages only after reclaiming them, so a compaction that spawned two decoder threads
//! for every 32 blocks (3,000 threads for a 300k-game book) had up to 3,300 such pages at once
//! and peaked ~90 MiB higher on a busy machine (docs/PERFORMANCE.md, "The allocator's share").

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, unbounded};

/// The threads a pool of this process takes: the cores, at most 8 (looked up once: it reads
/// cgroup files).
pub(crate) fn cores() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
    })
}

/// A job, its index in its batch, and where its result goes.
type Job<J, R> = (usize, J, Sender<(usize, Option<R>)>);

/// `n` threads that run `work` on jobs of type `J`, until the pool is dropped.
pub(crate) struct Workers<J: Send + 'static, R: Send + 'static> {
    tx: Option<Sender<Job<J, R>>>,
    threads: Vec<JoinHandle<()>>,
}

impl<J: Send + 'static, R: Send + 'static> Workers<J, R> {
    /// Starts `n` (at least one) threads named `name-i`. A thread the system refuses is left
    /// out; with none, [`Workers::map`] returns no results.
    pub(crate) fn new(
        n: usize,
        name: &str,
        work: impl Fn(J) -> R + Send + Clone + 'static,
    ) -> Workers<J, R> {
        let (tx, rx) = unbounded::<Job<J, R>>();
        let threads = (0..n.max(1))
            .filter_map(|i| {
                let rx = rx.clone();
                let work = work.clone();
                std::thread::Builder::new()
                    .name(format!("{name}-{i}"))
                    .spawn(move || {
                        for (at, job, back) in rx {
                            let r = catch_unwind(AssertUnwindSafe(|| work(job))).ok();
                            // The batch's caller may be gone (it stopped on an earlier error).
                            let _ = back.send((at, r));
                        }
                    })
                    .ok()
            })
            .collect();
        Workers {
            tx: Some(tx),
            threads,
        }
    }

    /// The number of threads running.
    pub(crate) fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Runs `jobs` on the threads and returns their results in the jobs' order: `None` for a
    /// job whose work panicked, or for every job when no thread runs.
    pub(crate) fn map(&self, jobs: Vec<J>) -> Vec<Option<R>> {
        self.submit(jobs).wait()
    }

    /// Hands `jobs` to the threads and returns at once: the caller goes on with other work
    /// and takes the results, in the jobs' order, with [`Pending::wait`].
    pub(crate) fn submit(&self, jobs: Vec<J>) -> Pending<R> {
        let (back, results) = unbounded();
        let n = jobs.len();
        if let Some(tx) = self.tx.as_ref().filter(|_| !self.threads.is_empty()) {
            for (at, job) in jobs.into_iter().enumerate() {
                if tx.send((at, job, back.clone())).is_err() {
                    break;
                }
            }
        }
        // Each job holds a sender until its result is sent: `wait` ends with the last one.
        drop(back);
        Pending { n, results }
    }
}

/// The results of jobs handed to [`Workers::submit`], not yet taken.
pub(crate) struct Pending<R> {
    n: usize,
    results: Receiver<(usize, Option<R>)>,
}

impl<R> Pending<R> {
    /// Waits for every job: their results in the jobs' order (`None` for a job whose work
    /// panicked, or that no thread ran).
    pub(crate) fn wait(self) -> Vec<Option<R>> {
        let mut out: Vec<Option<R>> = (0..self.n).map(|_| None).collect();
        for (at, r) in self.results {
            if let Some(slot) = out.get_mut(at) {
                *slot = r;
            }
        }
        out
    }
}

impl<J: Send + 'static, R: Send + 'static> Drop for Workers<J, R> {
    fn drop(&mut self) {
        self.tx = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_the_jobs_order() {
        let w = Workers::new(3, "test", |x: u64| {
            // Later jobs finish first.
            std::thread::sleep(std::time::Duration::from_millis(20 - x.min(20)));
            x * 2
        });
        assert_eq!(w.threads(), 3);
        for _ in 0..3 {
            let r = w.map((0..20).collect());
            assert_eq!(r, (0..20).map(|x| Some(x * 2)).collect::<Vec<_>>());
        }
        assert!(w.map(Vec::new()).is_empty());
    }

    #[test]
    fn a_panicking_job_gives_none_and_the_threads_go_on() {
        let w = Workers::new(2, "test", |x: u32| {
            assert!(x != 3, "job 3 fails");
            x
        });
        let r = w.map((0..6).collect());
        assert_eq!(r, vec![Some(0), Some(1), Some(2), None, Some(4), Some(5)]);
        assert_eq!(w.map(vec![7, 8]), vec![Some(7), Some(8)]);
    }

    #[test]
    fn the_threads_live_as_long_as_the_pool() {
        let w = Workers::new(2, "test", |_: ()| std::thread::current().id());
        let ids: std::collections::BTreeSet<String> = (0..10)
            .flat_map(|_| w.map(vec![(); 4]))
            .map(|id| format!("{:?}", id.expect("no job panics")))
            .collect();
        // Every batch ran on the same two threads.
        assert!(ids.len() <= 2, "{ids:?}");
    }

    #[test]
    fn submitted_jobs_run_while_the_caller_goes_on() {
        let (tx, rx) = crossbeam_channel::unbounded::<()>();
        let w = Workers::new(2, "test", move |x: u32| {
            // Each job waits for the caller's go, given after submit returned.
            rx.recv().expect("go");
            x + 1
        });
        let pending = w.submit(vec![1, 2, 3]);
        for _ in 0..3 {
            tx.send(()).unwrap();
        }
        assert_eq!(pending.wait(), vec![Some(2), Some(3), Some(4)]);
        assert!(w.submit(Vec::new()).wait().is_empty());
    }
}
