//! splitmix64's finaliser (Steele, Lea and Flood, OOPSLA 2014): a bijective 64-bit mix in
//! which every input bit affects every output bit. braid derives checksum salts (segment and
//! ring-lap salts, which must stay bit-identical across versions, since records on media are
//! checked against them), page hashes and workload key scrambles from it.

/// Mix `x` (splitmix64's finaliser; callers add their own constants to the input).
#[inline]
#[cfg_attr(feature = "testing", visibility::make(pub))]
pub(crate) fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::mix64;

    #[test]
    fn matches_the_reference_finaliser() {
        // splitmix64's first output from seed 0: the finaliser of the golden-ratio increment.
        assert_eq!(mix64(0x9E37_79B9_7F4A_7C15), 0xE220_A839_7B1D_CDAF);
        assert_eq!(mix64(0), 0);
    }
}
