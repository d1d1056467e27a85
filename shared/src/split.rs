//! A/B splits (issue 17): a link's visits shared between weighted targets. Each visit
//! draws a number in `[0, 100)` (the caller's randomness: the edge's `Math.random`, the
//! origin's thread RNG) and [`Split::pick`] maps it to a variant, so the choice itself
//! is a pure function both sides share. No cookie or address is read: a visitor is not
//! kept on one variant from visit to visit.

use serde::{Deserialize, Serialize};

/// The fewest and the most variants a split may have.
pub const MIN_VARIANTS: usize = 2;
pub const MAX_VARIANTS: usize = 10;
/// Weights are percentages: they sum to this.
pub const TOTAL_WEIGHT: u32 = 100;

/// One target of a split, and its share of visits in percent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub target_url: String,
    pub weight: u32,
}

/// Weighted variants, in the order given; their weights sum to [`TOTAL_WEIGHT`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Variant>", into = "Vec<Variant>")]
pub struct Split {
    variants: Vec<Variant>,
}

/// Why a split was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error("a split has {MIN_VARIANTS} to {MAX_VARIANTS} variants, not {0}")]
    Count(usize),
    #[error("variant {0} has weight 0: give it a share or leave it out")]
    ZeroWeight(usize),
    #[error("the weights sum to {0}; they must sum to {TOTAL_WEIGHT}")]
    Sum(u64),
}

impl TryFrom<Vec<Variant>> for Split {
    type Error = SplitError;

    fn try_from(variants: Vec<Variant>) -> Result<Self, SplitError> {
        if !(MIN_VARIANTS..=MAX_VARIANTS).contains(&variants.len()) {
            return Err(SplitError::Count(variants.len()));
        }
        if let Some(i) = variants.iter().position(|v| v.weight == 0) {
            return Err(SplitError::ZeroWeight(i));
        }
        let sum: u64 = variants.iter().map(|v| u64::from(v.weight)).sum();
        if sum != u64::from(TOTAL_WEIGHT) {
            return Err(SplitError::Sum(sum));
        }
        Ok(Split { variants })
    }
}

impl From<Split> for Vec<Variant> {
    fn from(split: Split) -> Self {
        split.variants
    }
}

impl Split {
    pub fn variants(&self) -> &[Variant] {
        &self.variants
    }

    /// The variant a visit that drew `draw` gets (any `u32`, taken modulo 100): each
    /// variant owns a run of the hundred values as long as its weight, in order.
    pub fn pick(&self, draw: u32) -> usize {
        let mut point = draw % TOTAL_WEIGHT;
        for (i, v) in self.variants.iter().enumerate() {
            if point < v.weight {
                return i;
            }
            point -= v.weight;
        }
        // Unreachable for a split that was built: its weights sum to 100.
        self.variants.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn variants(weights: &[u32]) -> Vec<Variant> {
        weights
            .iter()
            .enumerate()
            .map(|(i, w)| Variant {
                target_url: format!("https://e.example/{i}"),
                weight: *w,
            })
            .collect()
    }

    #[test]
    fn a_split_is_refused_unless_its_weights_make_a_whole() {
        assert_eq!(Split::try_from(variants(&[100])), Err(SplitError::Count(1)));
        assert_eq!(
            Split::try_from(variants(&[10; 11])),
            Err(SplitError::Count(11))
        );
        assert_eq!(
            Split::try_from(variants(&[50, 49])),
            Err(SplitError::Sum(99))
        );
        assert_eq!(
            Split::try_from(variants(&[100, 0])),
            Err(SplitError::ZeroWeight(1))
        );
        assert_eq!(
            Split::try_from(variants(&[u32::MAX, 101])),
            Err(SplitError::Sum(u64::from(u32::MAX) + 101))
        );
        let json = r#"[{"target_url": "https://a.example/", "weight": 70},
                       {"target_url": "https://b.example/", "weight": 30}]"#;
        let split: Split = serde_json::from_str(json).expect("valid");
        assert_eq!(split.variants().len(), 2);
        assert!(serde_json::from_str::<Split>(r#"[{"target_url": "x", "weight": 100}]"#).is_err());
    }

    #[test]
    fn fifty_fifty_splits_the_hundred_draws_in_halves() {
        let split = Split::try_from(variants(&[50, 50])).expect("valid");
        assert_eq!(split.pick(0), 0);
        assert_eq!(split.pick(49), 0);
        assert_eq!(split.pick(50), 1);
        assert_eq!(split.pick(99), 1);
        assert_eq!(split.pick(100), 0, "modulo 100");
        assert_eq!(split.pick(u32::MAX), split.pick(u32::MAX % 100));
    }

    fn weights() -> impl Strategy<Value = Vec<u32>> {
        // Cut [0, 100) at distinct points: every run is at least 1 long.
        prop::collection::btree_set(1u32..100, (MIN_VARIANTS - 1)..MAX_VARIANTS).prop_map(|cuts| {
            let mut bounds: Vec<u32> = std::iter::once(0).chain(cuts).chain([100]).collect();
            bounds.dedup();
            bounds.windows(2).map(|w| w[1] - w[0]).collect()
        })
    }

    proptest! {
        /// Over the hundred draws each variant is picked exactly its weight's times, so
        /// with uniform draws the shares are the weights.
        #[test]
        fn each_variant_owns_exactly_its_weight_of_the_draws(ws in weights()) {
            let split = Split::try_from(variants(&ws)).expect("valid");
            let mut counts = vec![0u32; ws.len()];
            for draw in 0..TOTAL_WEIGHT {
                counts[split.pick(draw)] += 1;
            }
            prop_assert_eq!(counts, ws);
        }

        /// Any draw picks a variant that exists, and the same draw the same one.
        #[test]
        fn any_draw_picks_an_existing_variant(ws in weights(), draw in any::<u32>()) {
            let split = Split::try_from(variants(&ws)).expect("valid");
            let picked = split.pick(draw);
            prop_assert!(picked < ws.len());
            prop_assert_eq!(picked, split.pick(draw));
        }
    }
}
