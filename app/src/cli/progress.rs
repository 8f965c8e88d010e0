//! Progress bars at the command line: one indicatif bar per stage of the core's
//! [`Progress`] reports (the core itself draws nothing).

use std::time::Duration;

use haptics::progress::Progress;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use parking_lot::Mutex;

/// Draws each stage as a bar (a spinner when its total is unknown), under one another.
pub struct Bars {
    multi: MultiProgress,
    current: Mutex<Option<ProgressBar>>,
    template: &'static str,
    clear_when_done: bool,
}

impl Bars {
    /// Bars that stay on screen when their stage ends (a record of the stages).
    pub fn new() -> Self {
        Bars {
            multi: MultiProgress::new(),
            current: Mutex::new(None),
            template: "{spinner} {msg:48} [{bar:20}] {pos}/{len} {elapsed_precise} (ETA {eta})",
            clear_when_done: false,
        }
    }

    /// Bars that disappear when their stage ends (for output followed by a table).
    pub fn transient() -> Self {
        Bars {
            clear_when_done: true,
            ..Bars::new()
        }
    }

    /// Bars with another indicatif template (`{msg}` is the stage name).
    pub fn with_template(mut self, template: &'static str) -> Self {
        self.template = template;
        self
    }
}

impl Default for Bars {
    fn default() -> Self {
        Bars::new()
    }
}

impl Progress for Bars {
    fn stage(&self, name: &str, total: u64) {
        let mut current = self.current.lock();
        if let Some(old) = current.take() {
            self.end(&old);
        }
        let bar = if total > 0 {
            self.multi.add(ProgressBar::new(total)).with_style(
                ProgressStyle::with_template(self.template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            )
        } else {
            self.multi.add(ProgressBar::new_spinner())
        };
        bar.set_message(name.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        *current = Some(bar);
    }

    fn advance(&self, n: u64) {
        if let Some(b) = self.current.lock().as_ref() {
            b.inc(n);
        }
    }

    fn set(&self, done: u64) {
        if let Some(b) = self.current.lock().as_ref() {
            b.set_position(done);
        }
    }

    fn finish(&self) {
        if let Some(b) = self.current.lock().take() {
            self.end(&b);
        }
    }
}

impl Bars {
    fn end(&self, bar: &ProgressBar) {
        if self.clear_when_done {
            bar.finish_and_clear();
        } else {
            bar.finish();
        }
    }
}
