//! braid-rewind's side of `scripts/pmdk-bench.sh`: the same operations as the PMDK program
//! (1-word transactions on a 4096-word array; inserts of random keys with 8-byte values,
//! one transaction each, then lookups), printed as one JSON line.
//!
//! usage: pmdk_compare [keys] [word_txs] [dir]

use braid_rewind::bench::{
    Backing, InsertLookupConfig, WordTxConfig, btree_insert_lookup, standard_variants, word_tx,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let keys = args.get(1).map_or(Ok(1_000_000), |s| s.parse())?;
    let wtx = args.get(2).map_or(Ok(1_000_000), |s| s.parse())?;
    let dir = args.get(3).cloned().unwrap_or_else(|| "/dev/shm".into());
    let backing = Backing::Dir(dir.into());
    let w = word_tx(&WordTxConfig {
        backing: backing.clone(),
        transactions: wtx,
        words: 4096,
        variants: standard_variants(),
        runs: 3,
        write_delay_ns: 0,
    })?;
    let b = btree_insert_lookup(&InsertLookupConfig {
        backing,
        keys,
        runs: 1,
        ..InsertLookupConfig::default()
    })?;
    println!(
        "{}",
        serde_json::json!({ "word_tx": w, "btree_insert_lookup": b })
    );
    Ok(())
}
