//! A log-bucket latency histogram in the spirit of HdrHistogram: values below 128 are exact,
//! above that every power of two is split into 128 buckets, so any recorded value is known
//! to within 1/128 (< 0.8 %). Recording is an index computation and an increment; each
//! recording task owns its histogram and they are merged at the end.

use std::time::Duration;

use serde::Serialize;

/// Sub-buckets per power of two, as bits.
const SUB_BITS: u32 = 7;
const SUB: usize = 1 << SUB_BITS;
/// Enough buckets for any `u64`.
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

/// Counts of nanosecond values.
#[derive(Debug, Clone)]
pub(crate) struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: vec![0; BUCKETS],
            total: 0,
            sum: 0,
            max: 0,
        }
    }
}

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let sub = (v >> shift) as usize & (SUB - 1);
    ((shift as usize + 1) << SUB_BITS) | sub
}

/// The highest value that lands in bucket `i`.
fn highest(i: usize) -> u64 {
    if i < 2 * SUB {
        return i as u64;
    }
    let shift = (i >> SUB_BITS) - 1;
    let low = ((SUB + (i & (SUB - 1))) as u64) << shift;
    low.saturating_add((1u64 << shift) - 1)
}

impl Histogram {
    /// Records one value in nanoseconds.
    pub(crate) fn record_ns(&mut self, v: u64) {
        self.counts[index(v)] += 1;
        self.total += 1;
        self.sum += u128::from(v);
        self.max = self.max.max(v);
    }

    /// Records a duration.
    pub(crate) fn record(&mut self, d: Duration) {
        self.record_ns(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Adds another histogram's counts.
    pub(crate) fn merge(&mut self, other: &Self) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }

    /// Number of values recorded.
    #[cfg(test)]
    pub(crate) fn count(&self) -> u64 {
        self.total
    }

    /// The value at quantile `q` (0..=1), in nanoseconds: the highest value equivalent to
    /// the bucket holding it, capped at the largest value seen.
    pub(crate) fn quantile_ns(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return highest(i).min(self.max);
            }
        }
        self.max
    }

    /// Summary in milliseconds, or `None` when nothing was recorded.
    pub(crate) fn summary_ms(&self) -> Option<Percentiles> {
        if self.total == 0 {
            return None;
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        Some(Percentiles {
            count: self.total,
            mean: self.sum as f64 / self.total as f64 / 1e6,
            p50: ms(self.quantile_ns(0.50)),
            p90: ms(self.quantile_ns(0.90)),
            p99: ms(self.quantile_ns(0.99)),
            p999: ms(self.quantile_ns(0.999)),
            max: ms(self.max),
        })
    }
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Percentiles {
    /// Values recorded.
    pub(crate) count: u64,
    /// Mean.
    pub(crate) mean: f64,
    /// Median.
    pub(crate) p50: f64,
    /// 90th percentile.
    pub(crate) p90: f64,
    /// 99th percentile.
    pub(crate) p99: f64,
    /// 99.9th percentile.
    pub(crate) p999: f64,
    /// Largest value.
    pub(crate) max: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_bound_their_values() {
        let mut prev = 0usize;
        for v in (0u64..100_000).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let i = index(v);
            assert!(i < BUCKETS, "{v}");
            assert!(i >= prev || v > 100_000, "index not monotone at {v}");
            prev = i;
            assert!(highest(i) >= v, "{v} above its bucket top {}", highest(i));
            if i > 0 {
                assert!(highest(i - 1) < v, "{v} fits an earlier bucket");
            }
        }
    }

    #[test]
    fn quantiles_are_within_one_percent() {
        let mut h = Histogram::default();
        for v in 1..=10_000u64 {
            h.record_ns(v * 1000);
        }
        for (q, want) in [
            (0.5, 5_000_000.0),
            (0.99, 9_900_000.0),
            (0.999, 9_990_000.0),
        ] {
            let got = h.quantile_ns(q) as f64;
            assert!((got - want).abs() / want < 0.01, "q {q}: {got} vs {want}");
        }
        assert_eq!(h.quantile_ns(1.0), 10_000_000);
        let mut other = Histogram::default();
        other.record_ns(20_000_000);
        h.merge(&other);
        assert_eq!(h.count(), 10_001);
        assert_eq!(h.summary_ms().map(|p| p.max), Some(20.0));
        assert!(Histogram::default().summary_ms().is_none());
    }
}
