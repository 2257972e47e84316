//! Injected randomness: a tiny seeded generator, so the same seed gives the same delays.

/// A source of uniformly distributed random bits.
pub trait Random {
    /// 64 uniformly random bits.
    fn next_u64(&mut self) -> u64;

    /// A uniformly random float in `[0, 1)` with 53 bits of precision.
    #[inline]
    fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

impl<R: Random + ?Sized> Random for &mut R {
    fn next_u64(&mut self) -> u64 {
        (**self).next_u64()
    }
}

/// SplitMix64 (Steele, Lea and Flood): one `u64` of state, full period, good enough for jitter.
/// Its state is plain data, so it survives in a [`Snapshot`](crate::Snapshot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator started from `seed`.
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The current state (what a snapshot stores).
    pub const fn state(&self) -> u64 {
        self.state
    }

    /// A generator seeded from the operating system's hasher keys and the clock (`std` only).
    #[cfg(feature = "std")]
    pub fn from_entropy() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default(),
        );
        SplitMix64::new(h.finish())
    }
}

impl Random for SplitMix64 {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Adapts a closure returning floats in `[0, 1)` (JavaScript's `Math.random`) into a [`Random`].
/// Values outside `[0, 1)`, and NaN, are clamped into range.
pub struct UnitFn<F: FnMut() -> f64>(pub F);

impl<F: FnMut() -> f64> Random for UnitFn<F> {
    fn next_u64(&mut self) -> u64 {
        let x = (self.0)();
        let x = if x.is_nan() {
            0.0
        } else {
            x.clamp(0.0, 1.0 - f64::EPSILON)
        };
        (x * (1u64 << 53) as f64) as u64 * (1 << 11)
    }
    fn next_unit(&mut self) -> f64 {
        let x = (self.0)();
        if x.is_nan() {
            0.0
        } else {
            x.clamp(0.0, 1.0 - f64::EPSILON)
        }
    }
}
