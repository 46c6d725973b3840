//! Valid images mutated by proptest, structure-aware where the format has structure: segment
//! files removed or damaged one at a time, the pmem ring and the pertxn region overwritten,
//! zeroed and cut short, region headers damaged mostly in the bytes that carry information,
//! parameters flipped and truncated, REWIND pools patched in their header and log descriptor
//! words and anywhere else (docs/design.md invariants 5 and 6).

use braid_pmem::{PmemConfig, Region};
use braid_rewind::{Pool, RewindError};
use braid_testkit::params::{Value, encode, read_all};
use braid_testkit::{Checked, device, pertxn, region, rewind};
use proptest::prelude::*;

/// A mutation: overwrite, zero, or cut short at a position (modulo the length), or (files)
/// remove one.
#[derive(Debug, Clone)]
enum Mutation {
    Set(u32, Vec<u8>),
    Zero(u32, u16),
    Truncate(u32),
    Remove(u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<u32>(), proptest::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(o, b)| Mutation::Set(o, b)),
        2 => (any::<u32>(), 1u16..600).prop_map(|(o, n)| Mutation::Zero(o, n)),
        1 => any::<u32>().prop_map(Mutation::Truncate),
        1 => any::<u8>().prop_map(Mutation::Remove),
    ]
}

fn mutate_bytes(b: &mut Vec<u8>, m: &Mutation) {
    if b.is_empty() {
        return;
    }
    let at = |o: u32| o as usize % b.len();
    match m {
        Mutation::Set(o, bytes) => {
            let at = at(*o);
            let n = bytes.len().min(b.len() - at);
            b[at..at + n].copy_from_slice(&bytes[..n]);
        }
        Mutation::Zero(o, n) => {
            let at = at(*o);
            let n = (*n as usize).min(b.len() - at);
            b[at..at + n].fill(0);
        }
        Mutation::Truncate(o) => {
            let at = at(*o);
            b.truncate(at);
        }
        Mutation::Remove(_) => {}
    }
}

fn mutate_files(files: &mut device::Files, m: &Mutation) {
    if files.is_empty() {
        return;
    }
    match m {
        Mutation::Remove(i) => {
            files.remove(*i as usize % files.len());
        }
        Mutation::Set(o, _) | Mutation::Zero(o, _) | Mutation::Truncate(o) => {
            let i = *o as usize % files.len();
            mutate_bytes(&mut files[i].1, m);
        }
    }
}

/// Check an options byte and a mutated image with a target's check.
fn mutated(f: braid_testkit::Check, opts: u8, img: &[u8], ms: &[Mutation]) -> Checked {
    let mut img = img.to_vec();
    for m in ms {
        mutate_bytes(&mut img, m);
    }
    let mut input = vec![opts];
    input.extend_from_slice(&img);
    f(&input)
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>().prop_map(Value::U64),
        any::<u32>().prop_map(Value::U32),
        any::<u64>().prop_map(Value::F64),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Bytes),
    ]
}

fn header_set(at: impl Strategy<Value = u32>) -> impl Strategy<Value = Mutation> {
    (at, proptest::collection::vec(any::<u8>(), 1..9)).prop_map(|(o, b)| Mutation::Set(o, b))
}

fn header_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        // Mostly the 28 bytes that carry information.
        4 => header_set(0u32..40),
        1 => header_set(any::<u32>()),
        1 => (0u32..40, 1u16..32).prop_map(|(o, n)| Mutation::Zero(o, n)),
        1 => (0u32..8192).prop_map(Mutation::Truncate),
    ]
}

fn word_patch() -> impl Strategy<Value = (u32, Vec<u8>)> {
    // Header and log descriptors (the first 4 KiB), 8-byte aligned, with small or wild values.
    (0u32..512, prop_oneof![0u64..4096, any::<u64>()])
        .prop_map(|(w, v)| (w * 8, v.to_le_bytes().to_vec()))
}

fn range_patch() -> impl Strategy<Value = (u32, Vec<u8>)> {
    prop_oneof![
        (any::<u32>(), proptest::collection::vec(any::<u8>(), 1..24)),
        (any::<u32>(), (1usize..256).prop_map(|n| vec![0u8; n])),
    ]
}

/// Found by the `rewind_open` fuzz target: a header whose log capacity is valid on its own
/// but describes logs far larger than the region made `open_in` size their volatile state by
/// it (an allocation of gigabytes) before noticing; now it is refused as damage first.
#[test]
fn header_describing_logs_larger_than_the_region_is_corruption() {
    for img in rewind::images() {
        for (word, v) in [(64u32, 1u64 << 30), (48, 1024)] {
            let mut img = img.clone();
            rewind::patch(&mut img, word, &v.to_le_bytes());
            assert!(
                matches!(
                    Pool::open_in(rewind::region_of(&img)),
                    Err(RewindError::Corrupt { .. })
                ),
                "header word {word} = {v}"
            );
            rewind::check_image(&img).unwrap();
        }
    }
}

/// Found by the `rewind_open` fuzz target: a log capacity lowered to a valid 32 records let
/// recovery run out of log space half-way (`LogFull`, an untyped failure). The header's
/// configuration now carries a checksum, so any damaged configuration word is refused first.
#[test]
fn a_damaged_configuration_word_is_corruption() {
    for img in rewind::images() {
        for word in (16u32..88).step_by(8).chain([136, 144]) {
            let mut img = img.clone();
            rewind::patch(&mut img, word, &[0x20, 0, 0]);
            assert!(
                matches!(
                    Pool::open_in(rewind::region_of(&img)),
                    Err(RewindError::Corrupt { .. } | RewindError::NotAPool { .. })
                ),
                "header word {word}"
            );
            rewind::check_image(&img).unwrap();
        }
    }
}

#[test]
fn a_valid_region_header_opens_with_and_without_its_size() {
    let d = region::scratch_dir();
    let p = d.path().join("valid.region");
    let bytes = region::valid_file();
    region::check_file(&p, 0, &bytes).unwrap();
    region::check_file(&p, 1, &bytes).unwrap();
    assert!(Region::open(&p, Some(region::USABLE), PmemConfig::default()).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn segment_files_never_panic(
        opts in 0u8..4,
        ms in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut files = device::file_image().clone();
        for m in &ms {
            mutate_files(&mut files, m);
        }
        let r = device::segment_open(&device::encode_files(opts, &files));
        prop_assert!(r.is_ok(), "{:?}", r);
    }

    #[test]
    fn pmem_ring_never_panics(
        opts in 0u8..4,
        ms in proptest::collection::vec(mutation(), 1..6),
    ) {
        let r = mutated(device::pmem_ring, opts, device::ring_image(), &ms);
        prop_assert!(r.is_ok(), "{:?}", r);
    }

    #[test]
    fn pertxn_index_and_slots_never_panic(
        opts in 0u8..4,
        ms in proptest::collection::vec(mutation(), 1..6),
    ) {
        let r = mutated(pertxn::pertxn_open, opts, pertxn::pertxn_image(), &ms);
        prop_assert!(r.is_ok(), "{:?}", r);
    }

    #[test]
    fn mutated_region_headers_never_panic(
        opts in 0u8..2,
        ms in proptest::collection::vec(header_mutation(), 1..5),
    ) {
        let r = mutated(region::region_header, opts, &region::valid_file(), &ms);
        prop_assert!(r.is_ok(), "{:?}", r);
    }

    #[test]
    fn damaged_pools_never_panic(
        which in 0usize..6,
        words in proptest::collection::vec(word_patch(), 0..4),
        ranges in proptest::collection::vec(range_patch(), 0..4),
    ) {
        let mut img = rewind::images()[which].clone();
        for (at, b) in words.iter().chain(&ranges) {
            rewind::patch(&mut img, *at, b);
        }
        let r = rewind::check_image(&img);
        prop_assert!(r.is_ok(), "{:?}", r);
    }

    #[test]
    fn valid_parameters_read_back(vals in proptest::collection::vec(value(), 0..12)) {
        let (ops, bytes) = encode(&vals);
        prop_assert_eq!(read_all(&ops, &bytes).unwrap(), vals);
    }

    #[test]
    fn mutated_parameters_never_panic(
        vals in proptest::collection::vec(value(), 0..12),
        extra_ops in proptest::collection::vec(any::<u8>(), 0..4),
        flips in proptest::collection::vec((any::<u16>(), any::<u8>()), 0..6),
        cut in any::<u16>(),
    ) {
        let (mut ops, mut bytes) = encode(&vals);
        ops.extend(extra_ops);
        for (at, x) in flips {
            if !bytes.is_empty() {
                let i = at as usize % bytes.len();
                bytes[i] ^= x;
            }
        }
        if !bytes.is_empty() {
            bytes.truncate(cut as usize % (bytes.len() + 1));
        }
        let r = read_all(&ops, &bytes);
        prop_assert!(r.is_ok(), "{:?}", r);
    }
}
