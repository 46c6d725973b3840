//! [`Value`]: the fixed-width numbers that row columns and procedure parameters hold (`u64`,
//! `i64`, `f64`, `u32`), each stored as its little-endian bytes. The typed accessors
//! ([`Schema::get`](crate::Schema::get), [`RowWriter::get`](crate::RowWriter::get),
//! [`Params::put`](crate::Params::put), [`ParamReader::get`](crate::ParamReader::get)) are
//! generic over it. It is sealed: its encoding lives in a private supertrait, so no other type
//! can implement it.

/// A fixed-width number a column or a procedure parameter holds: `u64`, `i64` and `f64` (8
/// bytes) or `u32` (4 bytes), little-endian; an `f64` as its IEEE 754 bits.
///
/// Sealed: no other type can implement it.
///
/// ```compile_fail
/// #[derive(Clone, Copy)]
/// struct Mine;
/// impl braid_engine::Value for Mine {}
/// ```
pub trait Value: Copy + sealed::Sealed {}

mod sealed {
    /// The encoding behind [`Value`](super::Value), out of users' reach.
    pub trait Sealed: Sized {
        /// The little-endian bytes, an array.
        type Le: AsRef<[u8]> + AsMut<[u8]> + Default;
        /// Bytes of the encoding.
        const WIDTH: usize = size_of::<Self::Le>();
        /// The little-endian bytes of `self`.
        fn to_le(self) -> Self::Le;
        /// The value of little-endian bytes.
        fn from_le(b: Self::Le) -> Self;
        /// The value of `b`, which must be exactly `WIDTH` bytes long (panics otherwise).
        fn read_le(b: &[u8]) -> Self {
            let mut a = Self::Le::default();
            a.as_mut().copy_from_slice(b);
            Self::from_le(a)
        }
    }
}

use sealed::Sealed;

/// `Value` for primitive numbers through their own little-endian byte conversions (for `i64`
/// the two's complement, for `f64` the bits: the same bytes as `(v as u64)` and `v.to_bits()`).
macro_rules! value {
    ($($t:ty),+) => {$(
        impl Sealed for $t {
            type Le = [u8; size_of::<$t>()];
            fn to_le(self) -> Self::Le {
                self.to_le_bytes()
            }
            fn from_le(b: Self::Le) -> $t {
                <$t>::from_le_bytes(b)
            }
        }
        impl Value for $t {}
    )+};
}
value!(u64, i64, f64, u32);

#[cfg(test)]
mod tests {
    use super::*;

    fn le<T: Value>(v: T) -> Vec<u8> {
        let b = v.to_le().as_ref().to_vec();
        assert_eq!(b.len(), T::WIDTH);
        b
    }

    #[test]
    fn encodings_match_the_primitive_ones() {
        assert_eq!(le(7u64), 7u64.to_le_bytes());
        assert_eq!(le(-3i64), (-3i64 as u64).to_le_bytes());
        assert_eq!(le(2.5f64), 2.5f64.to_bits().to_le_bytes());
        assert_eq!(le(9u32), 9u32.to_le_bytes());
        assert_eq!(i64::read_le(&le(-3i64)), -3);
        assert_eq!(f64::read_le(&le(f64::MIN_POSITIVE)), f64::MIN_POSITIVE);
        let nan = f64::from_bits(0x7ff8_0000_dead_beef);
        assert_eq!(f64::read_le(&le(nan)).to_bits(), nan.to_bits());
    }
}
