//! [`IdMap`]: the hash map keyed by lumina's own numbers: the invocation list's indexes (by
//! subscription id and by address) and the coroutines' table of tasks (by task id).
//!
//! The keys are lumina's own numbers (ids handed out in order) and addresses (of owners and of
//! plain functions), never a value an attacker chooses, so the std map's SipHash buys no
//! protection here and cost a fifth of an add with a priority (28 M of 143 M instructions in
//! BENCHMARKS.md's add measurement), and 430 of a spawned task's 2 350. A shift, a multiplication and a rotation instead, so
//! aligned addresses (low bits zero) and consecutive ids both spread over the table.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hash map keyed by ids or addresses: [`IdHasher`].
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// The hasher of [`IdMap`]: one `u64` (or `usize`) key, its bits above the alignment folded
/// onto the low ones, multiplied by a 64-bit odd constant (the golden ratio's), and its high
/// half (the well-mixed one) rotated to the low bits the table indexes with.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        let key = self.0 ^ (self.0 >> 7);
        key.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(32)
    }

    /// Other keys (not used by the list): each byte folded in, so the map stays correct.
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    #[inline]
    fn write_u64(&mut self, key: u64) {
        self.0 ^= key;
    }

    #[inline]
    fn write_usize(&mut self, key: usize) {
        self.0 ^= key as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    /// Consecutive ids and 16-byte-aligned addresses land in different low bits (what the
    /// table indexes with, and in the top bits its control bytes take): fails without the
    /// shift (16-byte-aligned addresses take 28 of 64) or the rotation (4 of 64).
    #[test]
    fn n4_ids_and_aligned_addresses_spread_over_the_low_bits() {
        let build = BuildHasherDefault::<IdHasher>::default();
        for keys in [
            (0..64u64).collect::<Vec<_>>(),
            (1000..1064u64).collect(),
            (0..64u64).map(|n| 0x7f00_0000_1000 + 8 * n).collect(),
            (0..64u64).map(|n| 0x7f00_0000_1000 + 16 * n).collect(),
            (0..64u64).map(|n| 0x55d4_a0b3_c2e0 + 48 * n).collect(),
        ] {
            let low: std::collections::HashSet<u64> =
                keys.iter().map(|key| build.hash_one(key) & 63).collect();
            let top: std::collections::HashSet<u64> =
                keys.iter().map(|key| build.hash_one(key) >> 57).collect();
            assert!(low.len() > 40, "{} of 64 buckets", low.len());
            assert!(top.len() > 40, "{} of 128 control values", top.len());
        }
    }
}
