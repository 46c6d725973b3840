//! Seeds, corpus and arbitrary bytes through every fuzz target's check.

use std::path::PathBuf;

use braid_testkit::{TARGETS, check, seeds};
use proptest::prelude::*;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

#[test]
fn generated_seeds_pass_their_checks() {
    let all = seeds::all();
    for (target, _) in TARGETS.iter().filter(|(t, _)| {
        !matches!(
            *t,
            "record_decode" | "payload_decode" | "gsn_payload" | "silor_mark" | "scan"
        )
    }) {
        assert!(
            all.iter().any(|s| s.target == *target),
            "no generated seed for {target}"
        );
    }
    for s in &all {
        if let Err(v) = check(s.target, &s.bytes) {
            panic!("seed {}/{}: {v}", s.target, s.name);
        }
    }
}

#[test]
fn the_committed_corpus_passes() {
    let mut n = 0;
    for (target, f) in TARGETS {
        let dir = corpus_dir().join(target);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for e in entries {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            if let Err(v) = f(&bytes) {
                panic!("{}: {v}", p.display());
            }
            n += 1;
        }
    }
    assert!(n >= TARGETS.len(), "the corpus has {n} inputs");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_pass_every_check(
        target in 0usize..TARGETS.len(),
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
    ) {
        let (name, f) = TARGETS[target];
        let r = f(&bytes);
        prop_assert!(r.is_ok(), "{name}: {:?}", r);
    }

    #[test]
    fn small_option_bytes_then_noise(
        target in 0usize..TARGETS.len(),
        opts in 0u8..8,
        bytes in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let (name, f) = TARGETS[target];
        let mut input = vec![opts];
        input.extend_from_slice(&bytes);
        let r = f(&input);
        prop_assert!(r.is_ok(), "{name}: {:?}", r);
    }
}
