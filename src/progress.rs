//! Progress of long work (voxelizing, baking, distance fields, pointshells, scene loads),
//! reported through one small trait. The core only reports; the command line draws the
//! bars (indicatif) and tests pass [`NoProgress`].

/// Receives the stages of a long computation and how far each has got. Implementations
/// must be cheap and thread-safe: worker threads call [`Progress::advance`] and
/// [`Progress::set`].
pub trait Progress: Sync {
    /// A stage starts, with `total` units of work (0 when unknown).
    fn stage(&self, name: &str, total: u64);
    /// `n` more units of the current stage are done.
    fn advance(&self, n: u64);
    /// `done` units of the current stage are done (absolute).
    fn set(&self, done: u64);
    /// The current stage is finished.
    fn finish(&self);
    /// Whether the caller asked the work to stop. Work that cannot end with a partial
    /// result (a bake, a muscle experiment) polls it between its steps and ends with its
    /// `Cancelled` error; the default never asks.
    fn cancelled(&self) -> bool {
        false
    }
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn stage(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn set(&self, _: u64) {}
    fn finish(&self) {}
}

/// Forwards to another [`Progress`] with every stage name prefixed (`"bridge: bake:
/// modal derivatives"`), for work nested inside a larger job such as a scene load.
pub struct Prefixed<'a> {
    inner: &'a dyn Progress,
    prefix: String,
}

impl<'a> Prefixed<'a> {
    /// Stage names become `"{prefix}: {name}"`.
    pub fn new(inner: &'a dyn Progress, prefix: impl Into<String>) -> Self {
        Prefixed {
            inner,
            prefix: prefix.into(),
        }
    }
}

impl Progress for Prefixed<'_> {
    fn stage(&self, name: &str, total: u64) {
        self.inner.stage(&format!("{}: {name}", self.prefix), total);
    }
    fn advance(&self, n: u64) {
        self.inner.advance(n);
    }
    fn set(&self, done: u64) {
        self.inner.set(done);
    }
    fn finish(&self) {
        self.inner.finish();
    }
    fn cancelled(&self) -> bool {
        self.inner.cancelled()
    }
}

/// One stage as a [`Recorder`] saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageRecord {
    /// The stage's name.
    pub name: String,
    /// Its units of work (0 when unknown).
    pub total: u64,
    /// Units reported done, by `advance` and `set`.
    pub done: u64,
    /// Whether `finish` was called while it was the current stage.
    pub finished: bool,
}

/// Records every stage and how far it got: for tests that check what a computation
/// reports, and for logs.
#[derive(Debug, Default)]
pub struct Recorder(std::sync::Mutex<Vec<StageRecord>>);

impl Recorder {
    /// The stages recorded so far, in order, leaving the recorder empty.
    pub fn take(&self) -> Vec<StageRecord> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<StageRecord>> {
        // A panic elsewhere while holding the lock leaves the records usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn current(&self, f: impl FnOnce(&mut StageRecord)) {
        if let Some(s) = self.lock().last_mut() {
            f(s);
        }
    }
}

impl Progress for Recorder {
    fn stage(&self, name: &str, total: u64) {
        self.lock().push(StageRecord {
            name: name.to_string(),
            total,
            done: 0,
            finished: false,
        });
    }
    fn advance(&self, n: u64) {
        self.current(|s| s.done += n);
    }
    fn set(&self, done: u64) {
        self.current(|s| s.done = done);
    }
    fn finish(&self) {
        self.current(|s| s.finished = true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixed_names_the_outer_job_and_the_recorder_keeps_each_stage() {
        let rec = Recorder::default();
        let p = Prefixed::new(&rec, "bridge");
        p.stage("sdf", 10);
        p.advance(2);
        p.set(5);
        p.advance(1);
        p.finish();
        p.stage("pointshell", 0);
        let record = |name: &str, total, done, finished| StageRecord {
            name: name.to_string(),
            total,
            done,
            finished,
        };
        assert_eq!(
            rec.take(),
            [
                record("bridge: sdf", 10, 6, true),
                record("bridge: pointshell", 0, 0, false)
            ]
        );
        assert!(rec.take().is_empty());
    }
}

/// A request to stop long work early (an interrupt from the user), shared between the
/// thread that asks and the threads that work. The work polls
/// [`Cancel::is_cancelled`] between its steps and ends with what it has, marked
/// incomplete; clones share one flag.
#[derive(Debug, Clone, Default)]
pub struct Cancel(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Cancel {
    /// A token not yet cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks the work to stop.
    pub fn cancel(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether [`Cancel::cancel`] was called on this token or a clone.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Two tokens are equal when they share one flag.
impl PartialEq for Cancel {
    fn eq(&self, other: &Cancel) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Reports nothing and asks the work to stop when its [`Cancel`] token is cancelled: for
/// callers (the Python bindings) that interrupt work which takes a [`Progress`].
#[derive(Debug, Clone, Default)]
pub struct Cancellable(pub Cancel);

impl Progress for Cancellable {
    fn stage(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn set(&self, _: u64) {}
    fn finish(&self) {}
    fn cancelled(&self) -> bool {
        self.0.is_cancelled()
    }
}

/// Whether `cancel` holds a token that was cancelled.
pub fn cancelled(cancel: &Option<Cancel>) -> bool {
    cancel.as_ref().is_some_and(Cancel::is_cancelled)
}

/// Runs `work` as the stage `name` of `units` units (which `work` reports), unless the
/// caller asked to stop, which ends with the error `cancelled` makes; returns the value
/// and its seconds.
pub(crate) fn timed_stage<T, E>(
    progress: &dyn Progress,
    name: &str,
    units: u64,
    cancelled: impl FnOnce() -> E,
    work: impl FnOnce() -> Result<T, E>,
) -> Result<(T, f64), E> {
    if progress.cancelled() {
        return Err(cancelled());
    }
    progress.stage(name, units);
    let t0 = std::time::Instant::now();
    let value = work()?;
    let seconds = t0.elapsed().as_secs_f64();
    progress.finish();
    Ok((value, seconds))
}

#[cfg(test)]
mod cancel_tests {
    use super::*;

    #[test]
    fn clones_share_the_flag_and_fresh_tokens_do_not() {
        let a = Cancel::new();
        let b = a.clone();
        let c = Cancel::new();
        assert!(!cancelled(&Some(b.clone())));
        a.cancel();
        assert!(b.is_cancelled() && cancelled(&Some(b.clone())));
        assert!(!c.is_cancelled() && !cancelled(&None));
        // The progress adapter asks to stop exactly when its token does, also through a
        // prefix.
        let p = Cancellable(c.clone());
        assert!(!p.cancelled() && !Prefixed::new(&p, "x").cancelled());
        c.cancel();
        assert!(p.cancelled() && Prefixed::new(&p, "x").cancelled());
        assert!(!NoProgress.cancelled());
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
