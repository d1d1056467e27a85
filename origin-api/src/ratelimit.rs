//! Per-key limit on link creation: a runaway script cannot flood the database or the
//! edge. A bulk call counts each of its links. The limit is generous by default (10,000
//! links per second, bursts of 20,000: an import of 100,000 links is not slowed), and
//! set with `--create-rate`.

use crate::error::AppError;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::num::NonZeroU32;
use std::sync::Arc;

/// A budget per API key: links created, or passwords changed.
#[derive(Clone)]
pub struct CreateLimit {
    limiter: Arc<DefaultKeyedRateLimiter<String>>,
    clock: DefaultClock,
    /// Who does what the budget counts, as a 429 says it: "this key creates links".
    what: &'static str,
    /// The 429's problem type.
    problem: &'static str,
}

impl std::fmt::Debug for CreateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CreateLimit")
    }
}

impl CreateLimit {
    /// `per_second` links per second per key, with bursts of twice that.
    pub fn new(per_second: NonZeroU32) -> Self {
        Self::counting("this key creates links", per_second)
    }

    /// `per_second` of `what` per second per key, with bursts of twice that.
    pub fn counting(what: &'static str, per_second: NonZeroU32) -> Self {
        let burst = per_second.saturating_mul(NonZeroU32::MIN.saturating_add(1));
        CreateLimit {
            limiter: Arc::new(RateLimiter::keyed(
                Quota::per_second(per_second).allow_burst(burst),
            )),
            clock: DefaultClock::default(),
            what,
            problem: "rate-limited",
        }
    }

    /// This budget's 429s have the problem type `problem`.
    pub fn answering(mut self, problem: &'static str) -> Self {
        self.problem = problem;
        self
    }

    /// `per_minute` of `what` a minute per key, in bursts of at most that many.
    pub fn per_minute(what: &'static str, per_minute: NonZeroU32) -> Self {
        CreateLimit {
            limiter: Arc::new(RateLimiter::keyed(Quota::per_minute(per_minute))),
            clock: DefaultClock::default(),
            what,
            problem: "rate-limited",
        }
    }

    /// Takes `n` links from `key_id`'s budget, or says when to retry.
    pub fn take(&self, key_id: &str, n: usize) -> Result<(), AppError> {
        let n = u32::try_from(n)
            .ok()
            .and_then(NonZeroU32::new)
            .unwrap_or(NonZeroU32::MIN);
        match self.limiter.check_key_n(&key_id.to_owned(), n) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => {
                let wait = not_until.wait_time_from(self.clock.now());
                Err(AppError::RateLimited {
                    retry_after_s: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
                    what: self.what,
                    problem: self.problem,
                })
            }
            // More than a whole burst at once: it could never pass.
            Err(_) => Err(AppError::invalid(
                "links",
                "this batch is larger than the key's creation burst; send smaller batches",
            )),
        }
    }

    /// Forgets keys that have their full budget back, so idle keys cost no memory.
    pub fn shrink(&self) {
        self.limiter.retain_recent();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_gets_its_burst_then_429_with_a_retry_time_and_keys_are_independent() {
        let limit = CreateLimit::new(NonZeroU32::new(1).unwrap());
        assert!(limit.take("a", 1).is_ok());
        assert!(limit.take("a", 1).is_ok());
        match limit.take("a", 1) {
            Err(AppError::RateLimited { retry_after_s, .. }) => {
                assert!((1..=2).contains(&retry_after_s))
            }
            other => panic!("{other:?}"),
        }
        assert!(limit.take("b", 2).is_ok());
        assert!(matches!(limit.take("c", 3), Err(AppError::Invalid { .. })));
    }
}
