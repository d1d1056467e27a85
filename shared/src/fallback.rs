//! The edge's bookkeeping for codes KV does not hold yet (docs/architecture.md, "The
//! activation window"), kept apart from the worker's I/O so that it is tested here,
//! natively: how many undatable codes one isolate may ask the origin about per second, and
//! how long an isolate keeps what it read (the activation meta, the denylist, the origin's
//! answers). Whether a code is worth asking about at all is
//! [`crate::activation::may_be_new`].
//!
//! Times are Unix milliseconds, passed in: the worker reads its clock once per visit.

use std::collections::HashMap;

/// Lookups of undatable codes (custom aliases, codes without a meta to date them) one
/// isolate may send the origin per second: a scan of alias-shaped codes must not become
/// a flood at the origin. Over it, the visitor is told to come back (503), never that
/// a link which may exist does not.
#[derive(Debug, Clone)]
pub struct UndatedBudget {
    per_second: u32,
    /// The second (Unix seconds) the count is of, and the lookups admitted in it.
    second: u64,
    admitted: u32,
}

impl UndatedBudget {
    pub fn new(per_second: u32) -> Self {
        UndatedBudget {
            per_second,
            second: 0,
            admitted: 0,
        }
    }

    /// Whether one more lookup may go to the origin at `now_ms`; counts it if so.
    pub fn admit(&mut self, now_ms: u64) -> bool {
        let second = now_ms / 1000;
        if second != self.second {
            self.second = second;
            self.admitted = 0;
        }
        if self.admitted >= self.per_second {
            return false;
        }
        self.admitted += 1;
        true
    }
}

/// A value read at some moment and trusted for a while after (the activation meta:
/// the isolate reads KV at most once per hold).
#[derive(Debug, Clone)]
pub struct Held<T> {
    value: T,
    read_at_ms: u64,
}

impl<T: Clone> Held<T> {
    pub fn new(value: T, read_at_ms: u64) -> Self {
        Held { value, read_at_ms }
    }

    /// The value, however old (what a failed read falls back on).
    pub fn value(&self) -> &T {
        &self.value
    }

    /// How long before `now_ms` the value was read.
    pub fn age_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.read_at_ms)
    }

    /// The value, while younger than `hold_ms` at `now_ms`.
    pub fn fresh(&self, now_ms: u64, hold_ms: u64) -> Option<T> {
        (now_ms.saturating_sub(self.read_at_ms) < hold_ms).then(|| self.value.clone())
    }
}

/// The origin's answers about codes, each kept until its own deadline, at most `max`
/// of them: when full, the expired go, and if that frees nothing, all go (the origin
/// is asked again; a bound matters more than the hit rate under a scan).
#[derive(Debug, Clone)]
pub struct Answers<T> {
    held: HashMap<String, (T, u64)>,
    max: usize,
}

impl<T: Clone> Answers<T> {
    pub fn new(max: usize) -> Self {
        Answers {
            held: HashMap::new(),
            max: max.max(1),
        }
    }

    /// The answer about `key`, if one is held past `now_ms`.
    pub fn get(&self, key: &str, now_ms: u64) -> Option<T> {
        self.held
            .get(key)
            .filter(|(_, until)| now_ms < *until)
            .map(|(answer, _)| answer.clone())
    }

    /// Keeps `answer` about `key` until `until_ms`.
    pub fn put(&mut self, key: String, answer: T, now_ms: u64, until_ms: u64) {
        if self.held.len() >= self.max && !self.held.contains_key(&key) {
            self.held.retain(|_, (_, until)| *until > now_ms);
            if self.held.len() >= self.max {
                self.held.clear();
            }
        }
        self.held.insert(key, (answer, until_ms));
    }

    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_admits_its_rate_each_second_and_refuses_the_rest() {
        let mut budget = UndatedBudget::new(3);
        let t = 1_700_000_000_000;
        let admitted = (0..10).filter(|i| budget.admit(t + i)).count();
        assert_eq!(admitted, 3);
        // The next second starts afresh, even a millisecond later.
        let next = t - t % 1000 + 1000;
        assert!(budget.admit(next));
        assert_eq!((0..10).filter(|_| budget.admit(next + 999)).count(), 2);
    }

    #[test]
    fn a_refused_lookup_is_not_counted_against_the_next_second() {
        let mut budget = UndatedBudget::new(1);
        assert!(budget.admit(5_000));
        for _ in 0..1_000 {
            assert!(!budget.admit(5_500));
        }
        assert!(budget.admit(6_000));
        assert!(!budget.admit(6_001));
    }

    #[test]
    fn a_held_value_is_fresh_for_its_hold_only() {
        let held = Held::new(Some(7), 10_000);
        assert_eq!(held.fresh(10_000, 2_000), Some(Some(7)));
        assert_eq!(held.fresh(11_999, 2_000), Some(Some(7)));
        assert_eq!(held.fresh(12_000, 2_000), None);
        // A clock that went back does not make it stale forever, nor fresh forever.
        assert_eq!(held.fresh(9_000, 2_000), Some(Some(7)));
    }

    #[test]
    fn answers_are_kept_until_their_deadline() {
        let mut answers = Answers::new(10);
        answers.put("s.example/a".into(), Some(1), 0, 10_000);
        answers.put("s.example/b".into(), None::<i32>, 0, 5_000);
        assert_eq!(answers.get("s.example/a", 9_999), Some(Some(1)));
        assert_eq!(answers.get("s.example/b", 4_999), Some(None));
        assert_eq!(answers.get("s.example/b", 5_000), None);
        assert_eq!(answers.get("s.example/c", 0), None);
    }

    #[test]
    fn full_answers_drop_the_expired_first_and_never_pass_their_bound() {
        let mut answers = Answers::new(3);
        answers.put("old".into(), 1, 0, 100);
        answers.put("a".into(), 2, 0, 10_000);
        answers.put("b".into(), 3, 0, 10_000);
        // Full: the expired one goes, the live ones stay.
        answers.put("c".into(), 4, 200, 10_000);
        assert_eq!(answers.len(), 3);
        assert_eq!(answers.get("a", 300), Some(2));
        assert_eq!(answers.get("c", 300), Some(4));
        // Full of live answers: all go but the new one.
        answers.put("d".into(), 5, 300, 10_000);
        assert_eq!(answers.len(), 1);
        assert_eq!(answers.get("d", 300), Some(5));
        // Replacing a held key never evicts.
        let mut answers = Answers::new(2);
        answers.put("a".into(), 1, 0, 10_000);
        answers.put("b".into(), 2, 0, 10_000);
        answers.put("a".into(), 3, 0, 10_000);
        assert_eq!((answers.len(), answers.get("b", 1)), (2, Some(2)));
        for i in 0..1_000 {
            answers.put(format!("k{i}"), i, 1, 10_000);
            assert!(answers.len() <= 2);
        }
    }
}
