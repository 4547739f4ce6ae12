//! A result worked out on another thread, again and again, never more
//! often than a pause that grows with the work: what the directory list's
//! walks and the etcd prefix pane's counts share, so a large tree or a
//! busy db is not read non-stop while the screen keeps drawing.

use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

/// Work in progress on a worker, and when the last one finished.
#[derive(Debug)]
pub struct Repeated<T> {
    /// The least time between the end of one run and the start of the
    /// next ([`Repeated::due`]), or four times a run's time if longer.
    pause: Duration,
    /// The run under way: its answer, and when it started.
    pending: Option<(Receiver<T>, Instant)>,
    /// When the last run ended, and how long it took.
    done: Option<(Instant, Duration)>,
}

impl<T: Send + 'static> Repeated<T> {
    /// Nothing run yet; runs at most every `pause`.
    #[must_use]
    pub fn new(pause: Duration) -> Repeated<T> {
        Repeated { pause, pending: None, done: None }
    }

    /// Wait for the answer `rx` will bring (ignored while a run is under
    /// way).
    pub fn wait_for(&mut self, rx: Receiver<T>) {
        if self.pending.is_none() {
            self.pending = Some((rx, Instant::now()));
        }
    }

    /// Run `job` on a thread named `name` (unless a run is under way).
    pub fn spawn(&mut self, name: &str, job: impl FnOnce() -> T + Send + 'static) {
        if self.pending.is_some() {
            return;
        }
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new().name(name.into()).spawn(move || {
            // The caller may have gone meanwhile; nobody to tell.
            let _ = tx.send(job());
        });
        if spawned.is_ok() {
            self.wait_for(rx);
        }
    }

    /// The answer of the run under way, once it came: `Some(Some(T))`;
    /// `Some(None)` when its worker stopped without one; `None` while it
    /// runs, or when nothing runs.
    pub fn poll(&mut self) -> Option<Option<T>> {
        let (rx, started) = self.pending.as_ref()?;
        let answer = match rx.try_recv() {
            Ok(t) => Some(t),
            Err(TryRecvError::Empty) => return None,
            Err(TryRecvError::Disconnected) => None,
        };
        self.done = Some((Instant::now(), started.elapsed()));
        self.pending = None;
        Some(answer)
    }

    /// `true` while a run is under way.
    #[must_use]
    pub fn busy(&self) -> bool {
        self.pending.is_some()
    }

    /// How long ago the last run ended.
    #[must_use]
    pub fn age(&self) -> Option<Duration> {
        self.done.map(|(at, _)| at.elapsed())
    }

    /// `true` when another run may start: none ran yet, or the pause (at
    /// least four times the last run's time) has passed since the last.
    #[must_use]
    pub fn due(&self) -> bool {
        !self.busy() && self.done.is_none_or(|(at, took)| at.elapsed() >= self.pause.max(took * 4))
    }
}
