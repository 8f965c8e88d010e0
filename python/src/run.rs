//! Long calls without the GIL, interruptible by Ctrl-C.
//!
//! The work runs on a scoped thread while the calling thread, the GIL released, waits for
//! its result in slices of [`POLL`]; between slices it takes the GIL for a moment to let
//! Python run its signal handlers. A `KeyboardInterrupt` (or any exception a handler
//! raises) cancels the work through its [`Cancel`] token, waits for it to stop (the core
//! polls the token between steps) and propagates. Other Python threads run meanwhile, so
//! checks on several threads proceed in parallel. A panic in the work becomes
//! `haptics.InternalError`: the interpreter survives.

use std::sync::mpsc;
use std::time::Duration;

use haptics::progress::Cancel;
use pyo3::prelude::*;

use crate::errors::{Failure, Kind};

/// How often the waiting thread looks for a pending signal.
const POLL: Duration = Duration::from_millis(50);

/// Runs `work` with the GIL released; `cancel` is the token `work` polls.
pub(crate) fn interruptible<T, F>(py: Python<'_>, cancel: &Cancel, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> Result<T, Failure> + Send,
{
    let outcome: Result<Result<T, Failure>, PyErr> = py.detach(|| {
        std::thread::scope(|scope| {
            let (sender, receiver) = mpsc::channel();
            let worker = scope.spawn(move || {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
                // The receiver outlives the scope's threads: the send cannot fail.
                let _ = sender.send(result);
            });
            let result = loop {
                match receiver.recv_timeout(POLL) {
                    Ok(result) => break result,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if let Err(signal) = Python::attach(|py| py.check_signals()) {
                            cancel.cancel();
                            let _ = worker.join();
                            return Err(signal);
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        break Err(Box::new("the worker thread ended without a result")
                            as Box<dyn std::any::Any + Send>)
                    }
                }
            };
            let _ = worker.join();
            Ok(result.unwrap_or_else(|panic| Err(panic_failure(panic.as_ref()))))
        })
    });
    Ok(outcome??)
}

/// A panic's message as an internal error.
fn panic_failure(panic: &(dyn std::any::Any + Send)) -> Failure {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    Failure::new(
        Kind::Internal,
        format!("internal error (a bug; please report it): {what}"),
    )
}
