//! The initial population of TPC-B (TPC-B Clause 3): per branch one BRANCH row, its tellers
//! and its accounts, every balance 0. Accounts are loaded in chunks on several threads.

use braid_engine::{EngineError, Loader};

use super::*;
use crate::util::{Image, run_units};

/// Accounts per load unit.
const LOAD_CHUNK: u64 = 50_000;

/// Build the initial image of `cfg`; it has no random content, so the load needs no seed.
pub(super) fn load(
    cfg: &TpcbConfig,
    loader: &Loader<'_>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(), EngineError> {
    cfg.validate()?;
    let chunks = cfg.accounts_per_branch.div_ceil(LOAD_CHUNK);
    run_units((cfg.branches * chunks) as usize, progress, |u| {
        let (b, chunk) = (u as u64 / chunks + 1, u as u64 % chunks);
        let mut rows = 0;
        if chunk == 0 {
            let mut img = Image::new(loader.schema(BRANCH));
            img.u64(branch::B_ID, b);
            loader.insert(BRANCH, b, img.as_bytes())?;
            let mut img = Image::new(loader.schema(TELLER));
            for t in 1..=cfg.tellers_per_branch {
                let id = cfg.teller_id(b, t);
                img.u64(teller::T_ID, id).u64(teller::T_B_ID, b);
                loader.insert(TELLER, id, img.as_bytes())?;
            }
            rows += 1 + cfg.tellers_per_branch;
        }
        let mut img = Image::new(loader.schema(ACCOUNT));
        let lo = chunk * LOAD_CHUNK + 1;
        let hi = ((chunk + 1) * LOAD_CHUNK).min(cfg.accounts_per_branch);
        for a in lo..=hi {
            let id = cfg.account_id(b, a);
            img.u64(account::A_ID, id).u64(account::A_B_ID, b);
            loader.insert(ACCOUNT, id, img.as_bytes())?;
        }
        Ok(rows + hi + 1 - lo)
    })
}
