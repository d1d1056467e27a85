//! Background work that one origin at a time does, under a lease of the database's
//! (`leases`): the abuse desk and the purge. Each tick the loop takes (or renews) the
//! lease when it wants it and runs the work, told whether it holds the lease; on stop it
//! gives the lease back, so another origin takes over at once rather than after the TTL.

use crate::db::Db;
use crate::random_ids::random_hex;
use crate::store::{LeaseClaim, OutboxStore};
use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;

/// A lease and how the loop under it runs.
#[derive(Debug, Clone, Copy)]
pub struct Lease {
    pub name: &'static str,
    /// How long the lease outlives a holder that stopped renewing it.
    pub ttl_ms: i64,
    /// How often the work runs (and the lease is renewed).
    pub tick: Duration,
}

/// Runs `work` every tick until `stop` turns true: `work(true)` while this process holds
/// `lease`, `work(false)` otherwise; the lease is only taken when `wanted`.
pub async fn run<F, Fut>(
    db: &Db,
    lease: Lease,
    wanted: bool,
    mut stop: watch::Receiver<bool>,
    mut work: F,
) where
    F: FnMut(bool) -> Fut,
    Fut: Future<Output = ()>,
{
    let holder = random_hex::<8>().unwrap_or_else(|_| lease.name.to_owned());
    let mut held: Option<i64> = None;
    loop {
        if *stop.borrow() {
            break;
        }
        if wanted {
            match db.take_lease(lease.name, &holder, lease.ttl_ms).await {
                Ok(Some(taken)) => held = Some(taken.epoch),
                Ok(None) => held = None,
                Err(e) => tracing::warn!(lease = lease.name, error = %e, "taking the lease failed"),
            }
        }
        work(held.is_some()).await;
        tokio::select! {
            _ = tokio::time::sleep(lease.tick) => {}
            _ = stop.changed() => {}
        }
    }
    if let Some(epoch) = held {
        let claim = LeaseClaim {
            name: lease.name,
            holder: &holder,
            epoch,
        };
        let _ = db.release_lease(&claim).await;
    }
}
