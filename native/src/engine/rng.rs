//! splitmix64 (Steele, Lea and Flood, 2014; Vigna's reference C code): the
//! one pseudo-random stream of the project. The bbolt and rrd peers'
//! workloads are specified with it (`peers/bolt/peer bench`,
//! `peers/rrd/peer bench-updatev`),
//! so a workload replayed here matches the peer's draw for draw; the RRD
//! engine draws each archive's initial `cur_row` from it, and the test
//! writers their keys and values.

/// A splitmix64 stream: the same seed gives the same numbers.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream seeded with `seed` (its state).
    #[must_use]
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`: the top 53 bits of [`SplitMix64::next_u64`].
    pub fn unit(&mut self) -> f64 {
        #[expect(clippy::cast_precision_loss)]
        let v = (self.next_u64() >> 11) as f64;
        v / 9_007_199_254_740_992.0
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn reference_values() {
        // Vigna's splitmix64.c seeded with 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }
}
