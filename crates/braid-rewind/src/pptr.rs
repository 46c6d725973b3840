//! Typed persistent pointers and the values that may be stored through them.
//!
//! REWIND §2 (footnote 2) asks for "a persistent virtual address, a relative address, or some
//! other form of persistent reference". A [`PPtr<T>`] is the byte offset of a `T` inside the
//! pool's region, so a pool may be mapped at any address; offset 0 (the pool header's magic)
//! is never a valid object and serves as null.
//!
//! Values move between Rust and persistent memory through the [`Persist`] trait, an explicit
//! little-endian encoding (no transmutes: this crate has no `unsafe`). Structs are laid out by
//! the user with [`PPtr::field`], giving a pointer to a member at a byte offset.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

/// A persistent pointer: the offset of a `T` in the pool's region (0 = null).
pub struct PPtr<T> {
    off: u64,
    _t: PhantomData<fn() -> T>,
}

impl<T> PPtr<T> {
    /// The null pointer.
    pub const NULL: PPtr<T> = PPtr {
        off: 0,
        _t: PhantomData,
    };

    /// The pointer at byte offset `off` of the region.
    pub const fn from_offset(off: u64) -> PPtr<T> {
        PPtr {
            off,
            _t: PhantomData,
        }
    }

    /// Byte offset in the region.
    pub const fn offset(self) -> u64 {
        self.off
    }

    /// Whether this is the null pointer.
    pub const fn is_null(self) -> bool {
        self.off == 0
    }

    /// The same address seen as another type.
    pub const fn cast<U>(self) -> PPtr<U> {
        PPtr::from_offset(self.off)
    }

    /// A pointer to a member of type `U` at `bytes` past this one (struct field access).
    pub const fn field<U>(self, bytes: u64) -> PPtr<U> {
        PPtr::from_offset(self.off + bytes)
    }
}

impl<T> Clone for PPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for PPtr<T> {}
impl<T> PartialEq for PPtr<T> {
    fn eq(&self, o: &Self) -> bool {
        self.off == o.off
    }
}
impl<T> Eq for PPtr<T> {}
impl<T> Hash for PPtr<T> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.off.hash(h)
    }
}
impl<T> fmt::Debug for PPtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PPtr({:#x})", self.off)
    }
}

/// A fixed-size value with an explicit persistent encoding (little endian).
pub trait Persist: Copy {
    /// Encoded size in bytes.
    const SIZE: usize;
    /// Encode into `out` (exactly `SIZE` bytes).
    fn store(&self, out: &mut [u8]);
    /// Decode from `b` (exactly `SIZE` bytes).
    fn load(b: &[u8]) -> Self;
}

macro_rules! int_persist {
    ($($t:ty),*) => {$(
        impl Persist for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn store(&self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn load(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
int_persist!(u8, u16, u32, u64, i8, i16, i32, i64);

impl Persist for bool {
    const SIZE: usize = 1;
    fn store(&self, out: &mut [u8]) {
        out[0] = u8::from(*self);
    }
    fn load(b: &[u8]) -> Self {
        b[0] != 0
    }
}

impl<const N: usize> Persist for [u8; N] {
    const SIZE: usize = N;
    fn store(&self, out: &mut [u8]) {
        out.copy_from_slice(self);
    }
    fn load(b: &[u8]) -> Self {
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        a
    }
}

impl<T> Persist for PPtr<T> {
    const SIZE: usize = 8;
    fn store(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.off.to_le_bytes());
    }
    fn load(b: &[u8]) -> Self {
        PPtr::from_offset(u64::load(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut b = [0u8; 8];
        0x0102_0304_0506_0708u64.store(&mut b);
        assert_eq!(u64::load(&b), 0x0102_0304_0506_0708);
        let p: PPtr<u32> = PPtr::from_offset(4096);
        p.store(&mut b);
        assert_eq!(PPtr::<u32>::load(&b), p);
        assert_eq!(p.field::<u8>(8).offset(), 4104);
        assert!(PPtr::<u8>::NULL.is_null());
    }
}
