//! A latency histogram whose observation is a few atomic adds.
//!
//! `prometheus_client`'s own histogram takes a mutex for every observation; the
//! redirect observes one per visit on every worker thread, so a shared lock would be
//! contended on exactly the path that must stay cheapest. The buckets are fixed (one set
//! for every latency Hop measures, from a tenth of a millisecond to ten seconds), which
//! also keeps dashboards' quantile queries comparable across metrics.

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Upper bounds of the buckets, in seconds; a last, unbounded bucket follows.
pub const BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// The same bounds in nanoseconds, compared against without a float conversion.
const BOUNDS_NS: [u64; 16] = [
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// Durations observed, by bucket. Cloning shares the same counts.
#[derive(Debug, Clone, Default)]
pub struct Histogram(Arc<Counts>);

#[derive(Debug, Default)]
struct Counts {
    /// Observations per bucket (not cumulative), the last one unbounded.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_ns: AtomicU64,
}

impl Histogram {
    /// Counts one duration.
    pub fn observe(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let i = BOUNDS_NS.partition_point(|&bound| bound < ns);
        self.0.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.0.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.0
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .sum()
    }
}

impl TypedMetric for Histogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Histogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let buckets: Vec<(f64, u64)> = BUCKETS
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(self.0.buckets.iter().map(|b| b.load(Ordering::Relaxed)))
            .collect();
        let count = buckets.iter().map(|(_, n)| n).sum();
        let sum = self.0.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_agree_and_an_observation_lands_in_the_first_bucket_that_holds_it() {
        for (s, ns) in BUCKETS.iter().zip(BOUNDS_NS) {
            assert_eq!((s * 1e9).round() as u64, ns);
        }
        let h = Histogram::default();
        h.observe(Duration::from_micros(100)); // on a bound: `le` includes it
        h.observe(Duration::from_micros(101));
        h.observe(Duration::from_secs(60));
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register("t", "t", h.clone());
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        assert!(out.contains("t_bucket{le=\"0.0001\"} 1\n"), "{out}");
        assert!(out.contains("t_bucket{le=\"0.00025\"} 2\n"), "{out}");
        assert!(out.contains("t_bucket{le=\"10.0\"} 2\n"), "{out}");
        assert!(out.contains("t_bucket{le=\"+Inf\"} 3\n"), "{out}");
        assert!(out.contains("t_count 3\n"), "{out}");
        assert!(out.contains("t_sum 60.000201\n"), "{out}");
        assert_eq!(h.count(), 3);
    }
}
