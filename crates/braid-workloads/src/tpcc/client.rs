//! The TPC-C terminal: picks the next transaction from the mix and draws its inputs as Clause
//! 2.4.1, 2.5.1, 2.6.1, 2.7.1 and 2.8.1 prescribe (home warehouse: client `i` uses warehouse
//! `i % W + 1`; Stock-Level uses a fixed district per client, Clause 2.8.1.1).

use braid_engine::Params;
use rand::Rng;
use rand::rngs::SmallRng;

use super::load::{C_ID_RUN, C_LAST_RUN, OL_I_ID_RUN, scaled_a};
use super::*;
use crate::client::{RetryingClient, TxnSource};
use crate::util::{client_rng, now_secs, nurand};

/// Generates and runs TPC-C transactions for one terminal (the inputs of [`TpccSource`]); a
/// transaction that failed with a retryable conflict is resubmitted, with the same parameters,
/// on the next call.
pub type TpccClient = RetryingClient<TpccSource>;

/// Chooses a terminal's TPC-C transactions and draws their inputs.
pub struct TpccSource {
    cfg: TpccConfig,
    w: u64,
    /// Stock-Level's district.
    sl_district: u64,
    rng: SmallRng,
    a_c_id: u64,
    a_i_id: u64,
    a_last: u64,
}

impl std::fmt::Debug for TpccSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TpccSource").field("w", &self.w).finish()
    }
}

impl TpccSource {
    pub(crate) fn new(cfg: TpccConfig, index: usize, seed: u64) -> TpccSource {
        let w = index as u64 % cfg.warehouses + 1;
        let sl_district = (index as u64 / cfg.warehouses) % DISTRICTS + 1;
        TpccSource {
            cfg,
            w,
            sl_district,
            rng: client_rng(seed, index),
            a_c_id: scaled_a(1023, cfg.customers_per_district, 3000),
            a_i_id: scaled_a(8191, cfg.items, 100_000),
            a_last: scaled_a(255, cfg.last_names(), 1000),
        }
    }

    /// The home warehouse.
    pub fn warehouse(&self) -> u64 {
        self.w
    }

    fn district(&mut self) -> u64 {
        self.rng.gen_range(1..=DISTRICTS)
    }

    fn customer_id(&mut self) -> u64 {
        nurand(
            &mut self.rng,
            self.a_c_id,
            C_ID_RUN,
            1,
            self.cfg.customers_per_district,
        )
    }

    fn other_warehouse(&mut self) -> u64 {
        let o = self.rng.gen_range(1..self.cfg.warehouses);
        if o >= self.w { o + 1 } else { o }
    }

    fn customer_sel(&mut self) -> CustomerSel {
        if self.rng.gen_range(1..=100) <= 60 {
            CustomerSel::ByLastName(nurand(
                &mut self.rng,
                self.a_last,
                C_LAST_RUN,
                0,
                self.cfg.last_names() - 1,
            ))
        } else {
            CustomerSel::ById(self.customer_id())
        }
    }

    /// New-Order inputs (Clause 2.4.1).
    pub fn new_order_params(&mut self) -> NewOrderParams {
        let d = self.district();
        let c = self.customer_id();
        let ol_cnt = self.rng.gen_range(5..=MAX_OL);
        let rollback = self.rng.gen_range(1..=100) == 1;
        let mut p = NewOrderParams {
            w: self.w,
            d,
            c,
            entry_d: now_secs(),
            ol_cnt,
            ..Default::default()
        };
        for n in 0..ol_cnt {
            let mut i_id = nurand(&mut self.rng, self.a_i_id, OL_I_ID_RUN, 1, self.cfg.items);
            if rollback && n == ol_cnt - 1 {
                i_id = self.cfg.items + 1;
            }
            let supply_w = if self.cfg.warehouses > 1 && self.rng.gen_range(1..=100) == 1 {
                self.other_warehouse()
            } else {
                self.w
            };
            p.lines[n] = NewOrderLine {
                i_id,
                supply_w,
                qty: self.rng.gen_range(1..=10),
            };
        }
        p
    }

    /// Payment inputs (Clause 2.5.1).
    pub fn payment_params(&mut self) -> PaymentParams {
        let d = self.district();
        let (c_w, c_d) = if self.cfg.warehouses > 1 && self.rng.gen_range(1..=100) > 85 {
            let c_w = self.other_warehouse();
            (c_w, self.district())
        } else {
            (self.w, d)
        };
        let customer = self.customer_sel();
        PaymentParams {
            w: self.w,
            d,
            c_w,
            c_d,
            customer,
            amount: self.rng.gen_range(100..=500_000),
            date: now_secs(),
        }
    }

    /// Order-Status inputs (Clause 2.6.1).
    pub fn order_status_params(&mut self) -> OrderStatusParams {
        let d = self.district();
        OrderStatusParams {
            w: self.w,
            d,
            customer: self.customer_sel(),
        }
    }

    /// Delivery inputs (Clause 2.7.1).
    pub fn delivery_params(&mut self) -> DeliveryParams {
        DeliveryParams {
            w: self.w,
            carrier: self.rng.gen_range(1..=10),
            date: now_secs(),
        }
    }

    /// Stock-Level inputs (Clause 2.8.1).
    pub fn stock_level_params(&mut self) -> StockLevelParams {
        StockLevelParams {
            w: self.w,
            d: self.sl_district,
            threshold: self.rng.gen_range(10..=20),
        }
    }
}

impl TxnSource for TpccSource {
    fn next_txn(&mut self, params: &mut Params) -> u32 {
        let pick = match self.cfg.mix {
            Mix::Full => self.rng.gen_range(0..100),
            Mix::NewOrderOnly => 0,
            Mix::PaymentOnly => 45,
        };
        match pick {
            0..45 => {
                self.new_order_params().encode(params);
                NEW_ORDER_TXN
            }
            45..88 => {
                self.payment_params().encode(params);
                PAYMENT_TXN
            }
            88..92 => {
                self.order_status_params().encode(params);
                ORDER_STATUS_TXN
            }
            92..96 => {
                self.delivery_params().encode(params);
                DELIVERY_TXN
            }
            _ => {
                self.stock_level_params().encode(params);
                STOCK_LEVEL_TXN
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn inputs_follow_the_specified_distributions() {
        let cfg = TpccConfig {
            warehouses: 3,
            items: 1000,
            customers_per_district: 300,
            ..TpccConfig::default()
        };
        let mut c = Tpcc::new(cfg).unwrap().tpcc_client(4, 7);
        assert_eq!(c.warehouse(), 2);
        let (mut rollbacks, mut remote_lines, mut lines) = (0, 0, 0);
        for _ in 0..2000 {
            let p = c.new_order_params();
            assert!((5..=15).contains(&p.ol_cnt));
            for (n, l) in p.lines().iter().enumerate() {
                assert!((1..=10).contains(&l.qty));
                assert!((1..=3).contains(&l.supply_w));
                if l.i_id == 1001 {
                    assert_eq!(n, p.ol_cnt - 1);
                    rollbacks += 1;
                } else {
                    assert!((1..=1000).contains(&l.i_id));
                }
                remote_lines += usize::from(l.supply_w != 2);
                lines += 1;
            }
            assert!((1..=300).contains(&p.c));
        }
        assert!(
            (5..=45).contains(&rollbacks),
            "{rollbacks} rollbacks in 2000"
        );
        assert!(
            remote_lines > 0 && remote_lines * 30 < lines,
            "{remote_lines} of {lines}"
        );
        let (mut by_name, mut remote) = (0, 0);
        for _ in 0..2000 {
            let p = c.payment_params();
            assert!((100..=500_000).contains(&p.amount));
            match p.customer {
                CustomerSel::ByLastName(n) => {
                    assert!(n < 300);
                    by_name += 1;
                }
                CustomerSel::ById(id) => assert!((1..=300).contains(&id)),
            }
            remote += usize::from(p.c_w != 2);
        }
        assert!((1050..=1350).contains(&by_name), "{by_name}");
        assert!((200..=400).contains(&remote), "{remote}");
        let mut counts = [0usize; 5];
        for _ in 0..10_000 {
            let (id, _) = c.generate();
            counts[(id - NEW_ORDER_TXN) as usize] += 1;
        }
        assert!(
            (4200..=4800).contains(&counts[0]) && (4000..=4600).contains(&counts[1]),
            "{counts:?}"
        );
        assert!(
            counts[2..].iter().all(|&n| (250..=550).contains(&n)),
            "{counts:?}"
        );
    }

    #[test]
    fn single_warehouse_never_goes_remote() {
        let cfg = TpccConfig {
            warehouses: 1,
            items: 100,
            customers_per_district: 30,
            ..TpccConfig::default()
        };
        let mut c = Tpcc::new(cfg).unwrap().tpcc_client(3, 1);
        for _ in 0..500 {
            assert!(c.new_order_params().lines().iter().all(|l| l.supply_w == 1));
            let p = c.payment_params();
            assert_eq!((p.c_w, p.c_d), (1, p.d));
        }
    }
}
