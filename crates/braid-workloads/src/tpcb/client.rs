//! The TPC-B terminal: its inputs (TPC-B Clause 5.3). Client `i` is attached to branch
//! `i % B + 1` and submits each transaction for a random teller of that branch; the account is
//! the teller's branch's 85% of the time and another branch's otherwise; the delta is uniform
//! in -999,999..=+999,999.

use braid_engine::Params;
use rand::Rng;
use rand::rngs::SmallRng;

use super::*;
use crate::client::{RetryingClient, TxnSource};
use crate::util::now_secs;

/// Generates and runs Account-Update transactions for one terminal (the inputs of
/// [`TpcbSource`]); a transaction that failed with a retryable conflict is resubmitted on the
/// next call.
pub type TpcbClient = RetryingClient<TpcbSource>;

/// Draws a terminal's Account-Update inputs.
pub struct TpcbSource {
    pub(super) cfg: TpcbConfig,
    pub(super) branch: u64,
    pub(super) rng: SmallRng,
}

impl std::fmt::Debug for TpcbSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TpcbSource")
            .field("branch", &self.branch)
            .finish()
    }
}

impl TpcbSource {
    /// The next transaction's inputs (Clause 5.3).
    pub fn next_params(&mut self) -> AccountUpdateParams {
        let cfg = &self.cfg;
        let b = self.branch;
        let teller = cfg.teller_id(b, self.rng.gen_range(1..=cfg.tellers_per_branch));
        let account_branch = if cfg.branches > 1 && self.rng.gen_bool(cfg.remote_fraction) {
            let o = self.rng.gen_range(1..cfg.branches);
            if o >= b { o + 1 } else { o }
        } else {
            b
        };
        let account = cfg.account_id(
            account_branch,
            self.rng.gen_range(1..=cfg.accounts_per_branch),
        );
        AccountUpdateParams {
            account,
            teller,
            branch: b,
            delta: self.rng.gen_range(-999_999..=999_999),
            time: now_secs(),
        }
    }
}

impl TxnSource for TpcbSource {
    fn next_txn(&mut self, params: &mut Params) -> u32 {
        self.next_params().encode(params);
        ACCOUNT_UPDATE_TXN
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn inputs_follow_the_spec() {
        let w = Tpcb::new(TpcbConfig {
            branches: 4,
            accounts_per_branch: 1000,
            ..TpcbConfig::default()
        })
        .unwrap();
        let mut c = w.tpcb_client(6, 1);
        let mut remote = 0;
        for _ in 0..10_000 {
            let p = c.next_params();
            assert_eq!(p.branch, 3);
            assert!((21..=30).contains(&p.teller));
            assert!((1..=4000).contains(&p.account));
            assert!((-999_999..=999_999).contains(&p.delta));
            remote += usize::from((p.account - 1) / 1000 + 1 != 3);
            let mut enc = Params::new();
            p.encode(&mut enc);
            assert_eq!(AccountUpdateParams::decode(&enc.bytes).unwrap(), p);
        }
        assert!((1200..=1800).contains(&remote), "{remote}");
        let one = Tpcb::new(TpcbConfig {
            branches: 1,
            accounts_per_branch: 10,
            ..TpcbConfig::default()
        })
        .unwrap();
        let mut c = one.tpcb_client(5, 2);
        assert!((0..1000).all(|_| c.next_params().account <= 10));
        assert!(
            Tpcb::new(TpcbConfig {
                remote_fraction: 1.5,
                ..TpcbConfig::default()
            })
            .is_err()
        );
    }
}
