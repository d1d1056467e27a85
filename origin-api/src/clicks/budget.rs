//! Per-visitor click budgets at the origin, as each edge isolate keeps them
//! (`shared::clicks::VisitorBudget`): one visitor adds at most
//! [`CLICKS_PER_VISITOR_MINUTE`] clicks a minute; visits past it are answered and not
//! counted. Without it, a script hammering a link through the origin could end a
//! `max_visits` link for everyone, or inflate its numbers.
//!
//! The redirect's hot path takes it, so it is lock-free: a fixed table of atomic slots
//! (a flood from many addresses costs no more memory than one from one address; the
//! ones beyond the table share slots, by a per-process random hash), each holding the
//! minute and the clicks counted in it.

use shared::clicks::CLICKS_PER_VISITOR_MINUTE;
use std::hash::{BuildHasher, RandomState};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

/// Visitors tracked apart (8 bytes each).
pub const SLOTS: usize = 65_536;

/// The table of budgets.
pub struct ClickBudget {
    slots: Box<[AtomicU64]>,
    hasher: RandomState,
}

impl std::fmt::Debug for ClickBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClickBudget")
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl Default for ClickBudget {
    fn default() -> Self {
        ClickBudget {
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            hasher: RandomState::new(),
        }
    }
}

impl ClickBudget {
    /// Whether `client` may add one more click at `now_ms`. An IPv6 client is counted by
    /// its /64, as it holds all of it.
    pub fn admit(&self, client: IpAddr, now_ms: i64) -> bool {
        let key = match client {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a) >> 64 | 1 << 127,
        };
        let slot = &self.slots[(self.hasher.hash_one(key) as usize) % self.slots.len()];
        // Minutes since the epoch fit 32 bits for eight thousand years.
        let minute = u64::try_from(now_ms.div_euclid(60_000)).unwrap_or(0) & 0xffff_ffff;
        slot.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            let used = if held >> 32 == minute {
                held & 0xffff_ffff
            } else {
                0
            };
            (used < u64::from(CLICKS_PER_VISITOR_MINUTE)).then_some(minute << 32 | (used + 1))
        })
        .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_visitor_adds_at_most_its_budget_a_minute_and_others_theirs() {
        let budget = ClickBudget::default();
        let (one, other): (IpAddr, IpAddr) = (
            "203.0.113.9".parse().unwrap(),
            "198.51.100.1".parse().unwrap(),
        );
        let at = 1_800_000_000_000;
        let admitted = (0..200).filter(|_| budget.admit(one, at)).count();
        assert_eq!(admitted, usize::from(CLICKS_PER_VISITOR_MINUTE));
        assert!(budget.admit(other, at), "another visitor has its own");
        assert!(
            budget.admit(one, at + 60_000),
            "the next minute, a new budget"
        );
        // Addresses within one IPv6 /64 are one visitor.
        let v6 = |s: &str| -> IpAddr { s.parse().unwrap() };
        for i in 0..u32::from(CLICKS_PER_VISITOR_MINUTE) {
            assert!(budget.admit(v6(&format!("2001:db8:1:2::{i:x}")), at));
        }
        assert!(!budget.admit(v6("2001:db8:1:2:ffff::1"), at));
    }
}
