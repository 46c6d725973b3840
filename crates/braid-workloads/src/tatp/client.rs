//! The TATP client (TATP description Sec. 4): the standard mix 35/10/35/2/14/2/2 or
//! Update-Location alone, subscriber ids from `NURand(A, 1, P)` (Sec. 3), and each
//! transaction's random inputs drawn as Sec. 4.1-4.7 prescribe.

use braid_engine::Params;
use rand::Rng;
use rand::rngs::SmallRng;

use super::*;
use crate::client::{RetryingClient, TxnSource};
use crate::util::{nstring, nurand};

/// Generates and runs TATP transactions (the inputs of [`TatpSource`]); a transaction that
/// failed with a retryable conflict is resubmitted on the next call.
pub type TatpClient = RetryingClient<TatpSource>;

/// Chooses TATP transactions and draws their inputs.
pub struct TatpSource {
    pub(super) cfg: TatpConfig,
    pub(super) rng: SmallRng,
}

impl std::fmt::Debug for TatpSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TatpSource")
            .field("mix", &self.cfg.mix)
            .finish()
    }
}

impl TatpSource {
    /// A subscriber id, NURand(A, 1, P).
    pub fn s_id(&mut self) -> u64 {
        nurand(
            &mut self.rng,
            self.cfg.nurand_a(),
            0,
            1,
            self.cfg.subscribers,
        )
    }

    fn start_time(&mut self) -> u32 {
        [0, 8, 16][self.rng.gen_range(0..3)]
    }
}

impl TxnSource for TatpSource {
    fn next_txn(&mut self, p: &mut Params) -> u32 {
        let pick = match self.cfg.mix {
            TatpMix::Standard => self.rng.gen_range(0..100),
            TatpMix::UpdateLocationOnly => 82,
        };
        let s_id = self.s_id();
        p.clear();
        match pick {
            0..35 => {
                p.put::<u64>(s_id);
                GET_SUBSCRIBER_DATA_TXN
            }
            35..45 => {
                let (t, start, end) = (
                    self.rng.gen_range(1..=4),
                    self.start_time(),
                    self.rng.gen_range(1..=24),
                );
                p.put::<u64>(s_id)
                    .put::<u32>(t)
                    .put::<u32>(start)
                    .put::<u32>(end);
                GET_NEW_DESTINATION_TXN
            }
            45..80 => {
                p.put::<u64>(s_id).put::<u32>(self.rng.gen_range(1..=4));
                GET_ACCESS_DATA_TXN
            }
            80..82 => {
                let (t, bit, data_a) = (
                    self.rng.gen_range(1..=4),
                    self.rng.gen_range(0..=1),
                    self.rng.gen_range(0..=255),
                );
                p.put::<u64>(s_id)
                    .put::<u32>(t)
                    .put::<u32>(bit)
                    .put::<u32>(data_a);
                UPDATE_SUBSCRIBER_DATA_TXN
            }
            82..96 => {
                p.bytes(&sub_nbr(s_id))
                    .put::<u64>(self.rng.gen_range(1..=u64::from(u32::MAX)));
                UPDATE_LOCATION_TXN
            }
            96..98 => {
                let (t, start, end) = (
                    self.rng.gen_range(1..=4),
                    self.start_time(),
                    self.rng.gen_range(1..=24),
                );
                let mut numberx = [0u8; 15];
                nstring(&mut self.rng, 15, &mut numberx);
                p.bytes(&sub_nbr(s_id))
                    .put::<u32>(t)
                    .put::<u32>(start)
                    .put::<u32>(end)
                    .bytes(&numberx);
                INSERT_CALL_FORWARDING_TXN
            }
            _ => {
                let (t, start) = (self.rng.gen_range(1..=4), self.start_time());
                p.bytes(&sub_nbr(s_id)).put::<u32>(t).put::<u32>(start);
                DELETE_CALL_FORWARDING_TXN
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn the_mix_and_subscriber_choice_follow_the_spec() {
        let w = Tatp::new(TatpConfig {
            subscribers: 1000,
            ..TatpConfig::default()
        })
        .unwrap();
        let mut c = w.tatp_client(0, 3);
        let mut counts = [0usize; 7];
        for _ in 0..20_000 {
            let (id, _) = c.generate();
            counts[(id - GET_SUBSCRIBER_DATA_TXN) as usize] += 1;
        }
        let expect = [35, 10, 35, 2, 14, 2, 2];
        for (n, e) in counts.iter().zip(expect) {
            let want = e * 200;
            assert!(n.abs_diff(want) <= want / 5 + 40, "{counts:?}");
        }
        let mut seen = vec![0u32; 1001];
        for _ in 0..50_000 {
            let s = c.s_id();
            assert!((1..=1000).contains(&s));
            seen[s as usize] += 1;
        }
        assert!(seen[1..].iter().all(|&n| n > 0));
        let mut u = Tatp::new(TatpConfig {
            subscribers: 10,
            mix: TatpMix::UpdateLocationOnly,
            ..TatpConfig::default()
        })
        .unwrap()
        .tatp_client(1, 1);
        assert!((0..100).all(|_| u.generate().0 == UPDATE_LOCATION_TXN));
    }
}
