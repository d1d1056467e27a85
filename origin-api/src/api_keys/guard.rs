//! The guard in front of API keys: failed authentications per client address, and the
//! keys that verified, held for `--key-hold` so a valid key's requests need no read.

use crate::error::AppError;
use crate::model::ApiKey;
use crate::store::StoreError;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Keys held in memory at most (only keys that exist and verified are held).
const KEYS_HELD: usize = 10_000;
/// Clients tracked apart; more share a slot (by a per-process random hash), so the
/// table is the same size whatever the number of attackers.
const SLOTS: usize = 16_384;

/// Failed authentications per client, and the keys that verified.
///
/// Failures are counted with a generic cell rate (GCRA) per slot: each failure pushes
/// the slot's "theoretical arrival time" one interval on; a client whose time is more
/// than a minute ahead has used its minute's worth and waits for it to come back.
pub struct AuthGuard {
    slots: Box<[AtomicU64]>,
    hasher: RandomState,
    /// Milliseconds one failure costs.
    interval_ms: u64,
    /// Failures allowed in a row, as milliseconds ahead of now.
    burst_ms: u64,
    epoch: Instant,
    keys: quick_cache::sync::Cache<String, (Arc<ApiKey>, Instant)>,
    /// How long a verified key is held; zero holds none.
    hold: Duration,
    /// Per key id being read, the turn its readers take: when a hold ends, every client
    /// of that key asks for it at once, and one read serves them all (32 clients of one
    /// key, each reading it anew, queued past the authentication pool's wait and were
    /// answered 503).
    reading: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl std::fmt::Debug for AuthGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthGuard")
            .field("failures_per_minute", &(60_000 / self.interval_ms.max(1)))
            .finish_non_exhaustive()
    }
}

impl AuthGuard {
    /// Allows `per_minute` failures a minute per client, in bursts of as many, and
    /// holds verified keys for `hold`.
    pub fn new(per_minute: u32, hold: Duration) -> Self {
        let per_minute = u64::from(per_minute.max(1));
        let interval_ms = (60_000 / per_minute).max(1);
        AuthGuard {
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            hasher: RandomState::new(),
            interval_ms,
            burst_ms: interval_ms * per_minute,
            epoch: Instant::now(),
            keys: quick_cache::sync::Cache::new(KEYS_HELD),
            hold,
            reading: std::sync::Mutex::default(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// An IPv6 client owns at least a /64, so it is counted by that.
    fn slot(&self, client: IpAddr) -> &AtomicU64 {
        let key = match client {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a) >> 64 | 1 << 127,
        };
        &self.slots[(self.hasher.hash_one(key) as usize) % self.slots.len()]
    }

    /// Refuses (429) a client that has used its failures; without an address (a
    /// request that did not come through the listener), nothing is counted.
    pub fn admit(&self, client: Option<IpAddr>) -> Result<(), AppError> {
        let Some(client) = client else { return Ok(()) };
        let ahead = self
            .slot(client)
            .load(Ordering::Acquire)
            .saturating_sub(self.now_ms());
        if ahead > self.burst_ms.saturating_sub(self.interval_ms) {
            let wait_ms = ahead - (self.burst_ms - self.interval_ms);
            return Err(AppError::TooManyFailures {
                retry_after_s: wait_ms.div_ceil(1000).max(1),
            });
        }
        Ok(())
    }

    /// Books one attempt against `client` before it is judged, refusing (429) a client
    /// that has used its attempts: the check and the count are one atomic step, so
    /// attempts sent at once cannot all pass before any is counted.
    pub fn take(&self, client: Option<IpAddr>) -> Result<(), AppError> {
        let Some(client) = client else { return Ok(()) };
        let now = self.now_ms();
        let booked = self
            .slot(client)
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |tat| {
                let next = tat.max(now).saturating_add(self.interval_ms);
                (next - now <= self.burst_ms).then_some(next)
            });
        booked.map(|_| ()).map_err(|tat| AppError::TooManyFailures {
            retry_after_s: (tat.saturating_sub(now) + self.interval_ms)
                .saturating_sub(self.burst_ms)
                .div_ceil(1000)
                .max(1),
        })
    }

    /// Counts one failed authentication against `client`.
    pub fn failed(&self, client: Option<IpAddr>) {
        let Some(client) = client else { return };
        let now = self.now_ms();
        let slot = self.slot(client);
        let _ = slot.fetch_update(Ordering::AcqRel, Ordering::Acquire, |tat| {
            Some(tat.max(now).saturating_add(self.interval_ms))
        });
    }

    /// The key with this id, if it verified within the hold.
    pub fn held(&self, key_id: &str) -> Option<Arc<ApiKey>> {
        self.keys
            .get(key_id)
            .filter(|(_, at)| at.elapsed() < self.hold)
            .map(|(key, _)| key)
    }

    /// The key with this id, held or read with `read`; a live key read is held. Callers
    /// of one id take turns, so those that arrive while it is read find it held rather
    /// than read it again.
    pub async fn held_or_read<F, Fut>(
        &self,
        key_id: &str,
        read: F,
    ) -> Result<Option<Arc<ApiKey>>, StoreError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Option<ApiKey>, StoreError>>,
    {
        // Holding nothing, a turn would only queue the reads.
        if self.hold.is_zero() {
            return read()
                .await
                .map(|k| k.filter(|k| k.revoked_at.is_none()).map(Arc::new));
        }
        let turn = {
            let mut reading = self.reading.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(reading.entry(key_id.to_owned()).or_default())
        };
        let result = {
            let _mine = turn.lock().await;
            match self.held(key_id) {
                Some(key) => Ok(Some(key)),
                None => read()
                    .await
                    .map(|k| k.filter(|k| k.revoked_at.is_none()).map(|k| self.hold(k))),
            }
        };
        // The last reader out removes the entry, so ids that were never keys leave none.
        let mut reading = self.reading.lock().unwrap_or_else(|e| e.into_inner());
        if Arc::strong_count(&turn) <= 2 {
            reading.remove(key_id);
        }
        result
    }

    /// Drops the key held under `key_id`: a key revoked here is refused at once by this
    /// process (others read it again within their hold).
    pub fn forget(&self, key_id: &str) {
        self.keys.remove(key_id);
    }

    /// Holds a key that verified; returns it.
    pub fn hold(&self, key: ApiKey) -> Arc<ApiKey> {
        let key = Arc::new(key);
        if !self.hold.is_zero() {
            self.keys
                .insert(key.key_id.clone(), (key.clone(), Instant::now()));
        }
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str) -> ApiKey {
        crate::api_keys::token::issue("ana", id, &crate::api_keys::token::Grant::default(), 0)
            .expect("issue")
            .0
    }

    /// When a key's hold ends under load, every client of it asks at once: one read.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn clients_of_one_key_whose_hold_ended_share_one_read() {
        let guard = Arc::new(AuthGuard::new(30, Duration::from_secs(10)));
        let stored = key("k");
        let reads = Arc::new(AtomicU64::new(0));
        let tasks: Vec<_> = (0..32)
            .map(|_| {
                let (guard, stored, reads) = (guard.clone(), stored.clone(), reads.clone());
                tokio::spawn(async move {
                    let id = stored.key_id.clone();
                    guard
                        .held_or_read(&id, || async move {
                            reads.fetch_add(1, Ordering::SeqCst);
                            // A database under load.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Ok(Some(stored))
                        })
                        .await
                })
            })
            .collect();
        for task in tasks {
            let found = task.await.expect("task").expect("read");
            assert!(found.is_some());
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        assert!(
            guard.reading.lock().unwrap().is_empty(),
            "no turn left behind"
        );
        // An id that names no key is read each time (it may be created a moment later)
        // and leaves nothing behind.
        for _ in 0..2 {
            assert!(guard
                .held_or_read("nope", || async { Ok(None) })
                .await
                .unwrap()
                .is_none());
        }
        assert!(guard.reading.lock().unwrap().is_empty());
    }

    #[test]
    fn a_client_gets_its_minute_of_failures_then_waits() {
        let guard = AuthGuard::new(30, Duration::from_secs(10));
        let attacker: IpAddr = "203.0.113.9".parse().unwrap();
        let other: IpAddr = "198.51.100.7".parse().unwrap();
        for _ in 0..30 {
            guard.admit(Some(attacker)).expect("within its minute");
            guard.failed(Some(attacker));
        }
        let Err(AppError::TooManyFailures { retry_after_s }) = guard.admit(Some(attacker)) else {
            panic!("the 31st guess was let through");
        };
        assert!((1..=2).contains(&retry_after_s), "{retry_after_s}");
        // Someone else is not held back (unless by chance in the same slot: 1 in 16,384).
        guard.admit(Some(other)).expect("another client");
        // An IPv6 attacker cannot escape by moving within its /64.
        let v6 = |s: &str| -> IpAddr { s.parse().unwrap() };
        for i in 0..30 {
            guard.failed(Some(v6(&format!("2001:db8:1:2::{i:x}"))));
        }
        assert!(guard.admit(Some(v6("2001:db8:1:2:ffff::1"))).is_err());
    }
}
