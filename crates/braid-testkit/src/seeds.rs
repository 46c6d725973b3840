//! Seed inputs for the fuzz targets: the valid images of this crate in each target's input
//! format. `cargo run -p braid-testkit --bin fuzz-seeds` writes them to `fuzz/corpus/`; the
//! corpus also keeps hand-made and regression inputs that no builder makes.

use crate::params::{Value, fuzz_input};
use crate::{device, pertxn, region};

/// One seed input.
#[derive(Debug, Clone)]
pub struct Seed {
    /// The fuzz target it is for.
    pub target: &'static str,
    /// Its file name in `fuzz/corpus/<target>/`.
    pub name: String,
    /// The input bytes.
    pub bytes: Vec<u8>,
}

fn seed(target: &'static str, name: impl Into<String>, bytes: Vec<u8>) -> Seed {
    Seed {
        target,
        name: name.into(),
        bytes,
    }
}

/// Prefix `img` with an options byte.
fn with_opts(opts: u8, img: &[u8]) -> Vec<u8> {
    let mut b = vec![opts];
    b.extend_from_slice(img);
    b
}

/// Every generated seed.
pub fn all() -> Vec<Seed> {
    let files = device::file_image();
    let mut torn = files.clone();
    if let Some(last) = torn.last_mut() {
        let n = last.1.len().saturating_sub(5);
        last.1.truncate(n);
    }
    let mut out = vec![
        seed(
            "segment_open",
            "three_segments",
            device::encode_files(0, files),
        ),
        seed(
            "segment_open",
            "three_segments_salvage",
            device::encode_files(2, files),
        ),
        seed(
            "segment_open",
            "torn_last_segment",
            device::encode_files(0, &torn),
        ),
        seed(
            "segment_open",
            "meta_only",
            device::encode_files(0, &files[..1]),
        ),
        seed(
            "pmem_ring",
            "ring_with_records",
            with_opts(0, device::ring_image()),
        ),
        seed("pmem_ring", "blank", vec![0u8; 64]),
        seed(
            "pertxn_open",
            "region_with_objects",
            with_opts(0, pertxn::pertxn_image()),
        ),
        seed(
            "pertxn_open",
            "region_with_objects_salvage",
            with_opts(2, pertxn::pertxn_image()),
        ),
    ];
    let file = region::valid_file();
    out.push(seed("region_header", "valid", with_opts(0, &file)));
    out.push(seed("region_header", "valid_sized", with_opts(1, &file)));
    let params: [(&str, Vec<Value>); 3] = [
        (
            "transfer",
            vec![Value::U64(3), Value::U64(7), Value::U64(25)],
        ),
        (
            "mixed",
            vec![
                Value::U32(9),
                Value::F64(1.5f64.to_bits()),
                Value::Bytes(b"braid".to_vec()),
                Value::U64(u64::MAX),
            ],
        ),
        ("empty_bytes", vec![Value::Bytes(Vec::new())]),
    ];
    for (name, vals) in params {
        out.push(seed("params", name, fuzz_input(&vals)));
    }
    // A seed without patches per pool configuration, and one that zeroes a word of the log
    // descriptor.
    for c in 0..crate::rewind::CONFIGS as u8 {
        out.push(seed("rewind_open", format!("config{c}"), vec![c]));
        let mut b = vec![c];
        b.extend_from_slice(&(256u32 + 64).to_le_bytes());
        b.push(8);
        b.extend_from_slice(&[0u8; 8]);
        out.push(seed("rewind_open", format!("config{c}_desc_word"), b));
    }
    out
}
