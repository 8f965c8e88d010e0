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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);

    impl Progress for Log {
        fn stage(&self, name: &str, total: u64) {
            self.0.lock().unwrap().push(format!("stage {name} {total}"));
        }
        fn advance(&self, n: u64) {
            self.0.lock().unwrap().push(format!("+{n}"));
        }
        fn set(&self, done: u64) {
            self.0.lock().unwrap().push(format!("={done}"));
        }
        fn finish(&self) {
            self.0.lock().unwrap().push("done".into());
        }
    }

    #[test]
    fn prefixed_names_the_outer_job() {
        let log = Log::default();
        let p = Prefixed::new(&log, "bridge");
        p.stage("sdf", 10);
        p.advance(2);
        p.set(5);
        p.finish();
        assert_eq!(
            *log.0.lock().unwrap(),
            ["stage bridge: sdf 10", "+2", "=5", "done"]
        );
    }
}
