//! Quotas per owner (docs/quotas.md): how many live links an owner may hold and how
//! many it may create a day. Unset, an owner has the operator's defaults (`--owner-*`).

/// Which quota a write would pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quota {
    /// Live links (not deleted) at once.
    Links,
    /// Links created in one UTC day, deleted ones too.
    LinksPerDay,
}

impl Quota {
    /// As the problem type and `GET /v1/owners/me` name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Quota::Links => "links",
            Quota::LinksPerDay => "links-per-day",
        }
    }
}

/// An owner's limits, resolved: `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub links: Option<i64>,
    pub links_per_day: Option<i64>,
}

/// A limit as the operator stores it for one owner: `None` takes the default, a
/// negative value means none.
pub fn resolve(own: Option<i64>, default: Option<i64>) -> Option<i64> {
    match own {
        None => default,
        Some(n) if n < 0 => None,
        Some(n) => Some(n),
    }
}

/// The UTC day of `ms` (days since the epoch), the per-day quota's window.
pub fn day_of(ms: i64) -> i64 {
    ms.div_euclid(86_400_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owners_own_limit_wins_and_a_negative_one_means_none() {
        assert_eq!(resolve(None, Some(100)), Some(100));
        assert_eq!(resolve(Some(5), Some(100)), Some(5));
        assert_eq!(resolve(Some(-1), Some(100)), None);
        assert_eq!(resolve(None, None), None);
        assert_eq!(day_of(86_400_000 * 3 + 5), 3);
        assert_eq!(day_of(-1), -1);
    }
}
