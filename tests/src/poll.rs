//! Waiting for a condition in a test: a probe is tried until it holds, and the test fails
//! once a deadline passes, saying what was awaited and (given an explanation) what the
//! processes involved said, instead of hanging.
//!
//! ```ignore
//! use hop_e2e::poll;
//! use std::time::Duration;
//!
//! let status = poll("the ban reaches the edge")
//!     .within(Duration::from_secs(10))
//!     .every(Duration::from_millis(50))
//!     .explain(|| edge.log())
//!     .until(|| async {
//!         let status = edge.visit("banned").await.status();
//!         (status == 403).then_some(status)
//!     })
//!     .await;
//! ```
//!
//! The deadline bounds each try as well as the tries: a probe still running at the
//! deadline (a request nobody answers) is cut off there and the test fails. The clock is
//! tokio's, so a test on tokio's paused clock polls in paused time.

use std::fmt;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// How long [`poll`] waits unless told otherwise.
pub const DEFAULT_WITHIN: Duration = Duration::from_secs(30);

/// How often [`poll`] tries unless told otherwise.
pub const DEFAULT_EVERY: Duration = Duration::from_millis(50);

/// Starts a wait for `what` (said in the failure message: "the ban reaches the edge"),
/// within [`DEFAULT_WITHIN`], trying every [`DEFAULT_EVERY`].
pub fn poll(what: impl Into<String>) -> Poll {
    Poll {
        what: what.into(),
        within: DEFAULT_WITHIN,
        every: DEFAULT_EVERY,
        explain: None,
    }
}

/// A wait being set up by [`poll`]; nothing happens until [`Poll::until`] (or
/// [`Poll::until_true`]) is awaited.
#[must_use = "a poll does nothing until `until` or `until_true` is awaited"]
pub struct Poll<E = fn() -> String> {
    what: String,
    within: Duration,
    every: Duration,
    explain: Option<E>,
}

impl<E> fmt::Debug for Poll<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Poll")
            .field("what", &self.what)
            .field("within", &self.within)
            .field("every", &self.every)
            .field("explain", &self.explain.is_some())
            .finish()
    }
}

impl<E> Poll<E> {
    /// Fails the test once `limit` has passed since the first try.
    pub fn within(mut self, limit: Duration) -> Self {
        self.within = limit;
        self
    }

    /// Waits `interval` between tries. Zero tries again at once, only yielding to the
    /// runtime in between.
    pub fn every(mut self, interval: Duration) -> Self {
        self.every = interval;
        self
    }

    /// On failure, appends what `explain` says then (a process's log, the last answer
    /// seen) to the message.
    pub fn explain<F: Fn() -> String>(self, explain: F) -> Poll<F> {
        Poll {
            what: self.what,
            within: self.within,
            every: self.every,
            explain: Some(explain),
        }
    }
}

impl<E: Fn() -> String> Poll<E> {
    /// Tries `probe` until it answers `Some(value)`, and returns that value.
    ///
    /// # Panics
    ///
    /// With `"{what}: not within {within:?} ({n} tries){explain}"` (the explanation, if
    /// any, after a colon and a line break) when the deadline passes first. A try still
    /// running at the deadline is cut off there, and the message says so: `({n} tries,
    /// the last one still running at the deadline)`.
    pub async fn until<T, F, Fut>(self, mut probe: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + self.within;
        let mut tries: u32 = 0;
        loop {
            tries += 1;
            match tokio::time::timeout_at(deadline, probe()).await {
                Ok(Some(value)) => return value,
                Ok(None) => {}
                Err(_) => self.fail(tries, true),
            }
            // No try starts at the deadline (where it would be cut off at once): the wait
            // ends there, and so does the poll.
            if self.every.is_zero() {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep_until((Instant::now() + self.every).min(deadline)).await;
            }
            if Instant::now() >= deadline {
                self.fail(tries, false);
            }
        }
    }

    /// Tries `probe` until it answers `true`.
    ///
    /// # Panics
    ///
    /// As [`Poll::until`].
    pub async fn until_true<F, Fut>(self, mut probe: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        self.until(|| {
            let held = probe();
            async move { held.await.then_some(()) }
        })
        .await
    }

    fn fail(&self, tries: u32, cut: bool) -> ! {
        let cut = if cut {
            ", the last one still running at the deadline"
        } else {
            ""
        };
        let explain = match &self.explain {
            Some(explain) => format!(":\n{}", explain()),
            None => String::new(),
        };
        panic!(
            "{}: not within {:?} ({tries} tries{cut}){explain}",
            self.what, self.within
        );
    }
}

#[cfg(test)]
mod tests {
    use super::poll;
    use std::cell::Cell;
    use std::time::Duration;
    use tokio::time::Instant;

    /// The message of a panic that ended a task.
    fn message(failed: tokio::task::JoinError) -> String {
        *failed
            .into_panic()
            .downcast::<String>()
            .expect("a formatted panic message")
    }

    #[tokio::test(start_paused = true)]
    async fn the_value_comes_back_once_the_probe_has_one() {
        let started = Instant::now();
        let tries = Cell::new(0u32);
        let got = poll("the third try")
            .within(Duration::from_secs(1))
            .every(Duration::from_millis(10))
            .until(|| async {
                tries.set(tries.get() + 1);
                (tries.get() == 3).then_some("ready")
            })
            .await;
        assert_eq!(got, "ready");
        assert_eq!(tries.get(), 3);
        // Two waits between three tries, and no more.
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(20) && took < Duration::from_millis(100),
            "{took:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_true_probe_ends_the_wait_at_once() {
        let tries = Cell::new(0u32);
        poll("at once")
            .until_true(|| async {
                tries.set(tries.get() + 1);
                true
            })
            .await;
        assert_eq!(tries.get(), 1);
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "the ban reaches the edge: not within 1s (")]
    async fn the_deadline_fails_the_test() {
        poll("the ban reaches the edge")
            .within(Duration::from_secs(1))
            .until_true(|| async { false })
            .await;
    }

    #[tokio::test(start_paused = true)]
    async fn the_failure_says_what_was_awaited_and_the_explanation() {
        let started = Instant::now();
        let failed = tokio::spawn(async {
            poll("the ban reaches the edge")
                .within(Duration::from_secs(1))
                .every(Duration::from_millis(100))
                .explain(|| "the edge's log".to_owned())
                .until_true(|| async { false })
                .await
        })
        .await
        .expect_err("the wait fails");
        let message = message(failed);
        assert!(
            message.starts_with("the ban reaches the edge: not within 1s ("),
            "{message}"
        );
        assert!(message.ends_with(" tries):\nthe edge's log"), "{message}");
        // Not before the deadline, and not long after it.
        let took = started.elapsed();
        assert!(
            took >= Duration::from_secs(1) && took < Duration::from_millis(1_200),
            "{took:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_that_never_answers_is_cut_off_at_the_deadline() {
        let started = Instant::now();
        let failed = tokio::spawn(async {
            poll("an answer")
                .within(Duration::from_secs(5))
                .until(std::future::pending::<Option<()>>)
                .await
        })
        .await
        .expect_err("the wait fails");
        let message = message(failed);
        assert_eq!(
            message,
            "an answer: not within 5s (1 tries, the last one still running at the deadline)"
        );
        let took = started.elapsed();
        assert!(
            took >= Duration::from_secs(5) && took < Duration::from_millis(5_100),
            "{took:?}"
        );
    }

    /// On the real clock too, in milliseconds.
    #[tokio::test]
    async fn a_hanging_probe_fails_on_the_real_clock() {
        let failed = tokio::spawn(async {
            poll("a hanging probe")
                .within(Duration::from_millis(50))
                .every(Duration::from_millis(5))
                .until_true(|| async {
                    tokio::time::sleep(Duration::from_secs(3_600)).await;
                    true
                })
                .await
        })
        .await
        .expect_err("the wait fails");
        let message = message(failed);
        assert!(
            message.starts_with("a hanging probe: not within 50ms (1 tries, the last one"),
            "{message}"
        );
    }
}
