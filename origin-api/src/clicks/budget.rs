//! Per-visitor click budgets at the origin, as each edge isolate keeps them
//! (`shared::clicks::VisitorBudget`): one visitor adds at most
//! [`CLICKS_PER_VISITOR_MINUTE`] clicks a minute; visits past it are answered and not
//! counted. Without it, a script hammering a link through the origin could end a
//! `max_visits` link for everyone, or inflate its numbers.
//!
//! The redirect's hot path takes it, so it is lock-free: a fixed table of atomic slots
//! (a flood from many addresses costs no more memory than one from one address), each
//! holding one visitor's minute: who, which minute, and the clicks counted in it.
//! Visitors beyond the table share slots (by a per-process random hash); one whose slot
//! another visitor holds this minute is admitted uncounted, never refused for the
//! other's clicks.

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
    /// The slot `client` is counted in (the tests look for two that share one).
    #[cfg(test)]
    fn slot_of(&self, client: IpAddr) -> usize {
        (self.hash_of(client) as usize) % self.slots.len()
    }

    /// The hash `client` is known by. An IPv6 client is counted by its /64, as it holds
    /// all of it.
    fn hash_of(&self, client: IpAddr) -> u64 {
        let key = match client {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a) >> 64 | 1 << 127,
        };
        self.hasher.hash_one(key)
    }

    /// Whether `client` may add one more click at `now_ms`.
    ///
    /// A slot holds one visitor's minute: who (24 bits of its hash), which minute (32
    /// bits) and how many clicks (8 bits). A visitor whose slot another holds this
    /// minute is admitted without being counted: a crowd larger than the table must not
    /// be refused for its neighbours' clicks, and a flood from that many addresses is
    /// still counted at most once a minute per slot holder.
    pub fn admit(&self, client: IpAddr, now_ms: i64) -> bool {
        let hash = self.hash_of(client);
        let slot = &self.slots[(hash as usize) % self.slots.len()];
        let who = hash >> 40;
        // Minutes since the epoch fit 32 bits for eight thousand years.
        let minute = u64::try_from(now_ms.div_euclid(60_000)).unwrap_or(0) & 0xffff_ffff;
        let this_minute = who << 40 | minute << 8;
        slot.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            let (held_who, held_minute, used) = (held >> 40, held >> 8 & 0xffff_ffff, held & 0xff);
            if held_minute != minute {
                // An earlier minute's, anyone's: this visitor takes the slot.
                Some(this_minute | 1)
            } else if held_who != who {
                // Another visitor's minute: admitted, uncounted.
                Some(held)
            } else {
                (used < u64::from(CLICKS_PER_VISITOR_MINUTE)).then_some(this_minute | (used + 1))
            }
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

    /// A crowd larger than the table shares its slots: a visitor whose slot another
    /// holds this minute must not be refused for the other's clicks (a crowd of 131,072
    /// addresses at 40,000 clicks a second lost 1.4% of its clicks that way, in
    /// `scripts/bench-redirect`).
    #[test]
    fn a_visitor_sharing_a_slot_is_not_refused_for_the_others_clicks() {
        let budget = ClickBudget::default();
        let at = 1_800_000_000_000;
        // Two addresses that land in one slot (a few hundred tries at most: birthdays).
        let mut seen = std::collections::HashMap::new();
        let (first, second) = (0u32..)
            .map(|i| IpAddr::from(std::net::Ipv4Addr::from(0xC612_0000 + i)))
            .find_map(|ip| {
                let slot = budget.slot_of(ip);
                seen.insert(slot, ip).map(|other| (other, ip))
            })
            .expect("two addresses share a slot");
        let admitted = (0..100).filter(|_| budget.admit(first, at)).count();
        assert_eq!(admitted, usize::from(CLICKS_PER_VISITOR_MINUTE));
        assert!(
            budget.admit(second, at),
            "the second visitor has clicked nothing yet"
        );
        assert!(
            !budget.admit(first, at),
            "the first is still over its budget"
        );
    }
}
