//! The consistency conditions of TPC-C Clause 3.3.2, checked on the committed state:
//!
//! 1. W_YTD = sum(D_YTD) per warehouse.
//! 2. D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district (the NEW-ORDER part only when the
//!    district has new orders).
//! 3. max(NO_O_ID) - min(NO_O_ID) + 1 = number of NEW-ORDER rows per district.
//! 4. sum(O_OL_CNT) = number of ORDER-LINE rows per district.
//! 5. O_CARRIER_ID is null iff the order has a NEW-ORDER row.
//! 6. O_OL_CNT = number of the order's ORDER-LINE rows.
//! 7. OL_DELIVERY_D is null iff the order's O_CARRIER_ID is null.
//! 8. W_YTD = sum(H_AMOUNT) by H_W_ID.
//! 9. D_YTD = sum(H_AMOUNT) by (H_W_ID, H_D_ID).
//! 10. C_BALANCE = sum(OL_AMOUNT of delivered order lines) - sum(H_AMOUNT) per customer.
//! 12. C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT of delivered order lines) per customer.
//!
//! Besides these, the secondary indexes must agree with their tables: every ORDER has its
//! ORDER_BY_CUSTOMER row and vice versa, and the customer counts match. Condition 11 is not
//! checked (see the `tpcc` module doc).

use std::collections::{HashMap, HashSet};

use braid_engine::Db;

use super::*;
use crate::error::{ConsistencyError, Problems};

#[derive(Default, Clone)]
struct DistrictAgg {
    d_ytd: i64,
    next_o_id: u64,
    seen: bool,
    max_o: u64,
    no_max: u64,
    no_min: u64,
    no_count: u64,
    ol_cnt_sum: u64,
    ol_rows: u64,
    h_sum: i64,
}

struct OrderInfo {
    c: u64,
    carrier: u64,
    ol_cnt: u64,
    lines: u64,
}

#[derive(Default)]
struct CustomerAgg {
    balance: i64,
    ytd_payment: i64,
    delivered: i64,
    h_sum: i64,
}

/// Check `db` against the conditions above.
pub(crate) fn check(cfg: &TpccConfig, db: &Db) -> Result<(), ConsistencyError> {
    let nw = cfg.warehouses;
    // The first 20 problems, then a note that more were left out.
    let mut p = Problems::capped("tpcc", 20, true);
    let didx = |w: u64, d: u64| -> Option<usize> {
        ((1..=nw).contains(&w) && (1..=DISTRICTS).contains(&d))
            .then(|| ((w - 1) * DISTRICTS + d - 1) as usize)
    };
    let mut dist = vec![DistrictAgg::default(); (nw * DISTRICTS) as usize];
    let mut w_ytd = vec![None::<i64>; nw as usize];
    let mut w_hist = vec![0i64; nw as usize];

    let s = db.schema(WAREHOUSE);
    db.for_each_row(WAREHOUSE, .., |k, img| {
        match w_ytd.get_mut((k as usize).wrapping_sub(1)) {
            Some(slot) => *slot = Some(s.get::<i64>(img, warehouse::W_YTD)),
            None => p.add(format!("unexpected warehouse {k}")),
        }
    });
    let s = db.schema(DISTRICT);
    db.for_each_row(DISTRICT, .., |k, img| match didx(k >> 4, k & 15) {
        Some(i) => {
            dist[i].seen = true;
            dist[i].d_ytd = s.get::<i64>(img, district::D_YTD);
            dist[i].next_o_id = s.get::<u64>(img, district::D_NEXT_O_ID);
        }
        None => p.add(format!("unexpected district key {k:#x}")),
    });

    let mut customers: HashMap<u64, CustomerAgg> = HashMap::new();
    let s = db.schema(CUSTOMER);
    db.for_each_row(CUSTOMER, .., |k, img| {
        customers.insert(
            k,
            CustomerAgg {
                balance: s.get::<i64>(img, customer::C_BALANCE),
                ytd_payment: s.get::<i64>(img, customer::C_YTD_PAYMENT),
                ..CustomerAgg::default()
            },
        );
    });
    let expected_customers = nw * DISTRICTS * cfg.customers_per_district;
    if customers.len() as u64 != expected_customers {
        p.add(format!(
            "{} customers, expected {expected_customers}",
            customers.len()
        ));
    }
    let by_name = db.rows(CUSTOMER_BY_NAME) as u64;
    if by_name != expected_customers {
        p.add(format!(
            "{by_name} customer_by_name rows, expected {expected_customers}"
        ));
    }

    let s = db.schema(HISTORY);
    db.for_each_row(HISTORY, .., |_, img| {
        let amount = s.get::<i64>(img, history::H_AMOUNT);
        let (w, d) = (
            s.get::<u64>(img, history::H_W_ID),
            s.get::<u64>(img, history::H_D_ID),
        );
        match didx(w, d) {
            Some(i) => {
                dist[i].h_sum += amount;
                w_hist[(w - 1) as usize] += amount;
            }
            None => p.add(format!("history row names warehouse {w} district {d}")),
        }
        let ck = customer_key(
            s.get::<u64>(img, history::H_C_W_ID),
            s.get::<u64>(img, history::H_C_D_ID),
            s.get::<u64>(img, history::H_C_ID),
        );
        match customers.get_mut(&ck) {
            Some(c) => c.h_sum += amount,
            None => p.add(format!("history row names missing customer {ck:#x}")),
        }
    });

    let mut orders: HashMap<u64, OrderInfo> = HashMap::new();
    let s = db.schema(ORDER);
    db.for_each_row(ORDER, .., |k, img| {
        let o = k & 0xFFFF_FFFF;
        let dk = k >> 32;
        match didx(dk >> 4, dk & 15) {
            Some(i) => {
                let ol_cnt = s.get::<u64>(img, order::O_OL_CNT);
                dist[i].max_o = dist[i].max_o.max(o);
                dist[i].ol_cnt_sum += ol_cnt;
                let info = OrderInfo {
                    c: s.get::<u64>(img, order::O_C_ID),
                    carrier: s.get::<u64>(img, order::O_CARRIER_ID),
                    ol_cnt,
                    lines: 0,
                };
                orders.insert(k, info);
            }
            None => p.add(format!("unexpected order key {k:#x}")),
        }
    });

    let mut new_orders: HashSet<u64> = HashSet::new();
    db.for_each_row(NEW_ORDER, .., |k, _| {
        let o = k & 0xFFFF_FFFF;
        let dk = k >> 32;
        match didx(dk >> 4, dk & 15) {
            Some(i) => {
                let a = &mut dist[i];
                a.no_max = a.no_max.max(o);
                a.no_min = if a.no_count == 0 { o } else { a.no_min.min(o) };
                a.no_count += 1;
                new_orders.insert(k);
            }
            None => p.add(format!("unexpected new-order key {k:#x}")),
        }
    });

    let s = db.schema(ORDER_LINE);
    db.for_each_row(ORDER_LINE, .., |k, img| {
        let ok = k >> 4;
        let dk = ok >> 32;
        let Some(i) = didx(dk >> 4, dk & 15) else {
            p.add(format!("unexpected order-line key {k:#x}"));
            return;
        };
        dist[i].ol_rows += 1;
        let Some(o) = orders.get_mut(&ok) else {
            p.add(format!("order line {k:#x} of a missing order"));
            return;
        };
        o.lines += 1;
        let delivery = s.get::<u64>(img, order_line::OL_DELIVERY_D);
        if (delivery == 0) != (o.carrier == 0) {
            p.add(format!(
                "condition 7: order line {k:#x} has delivery date {delivery}, its order carrier {}",
                o.carrier
            ));
        }
        if delivery != 0 {
            let ck = customer_key(dk >> 4, dk & 15, o.c);
            if let Some(c) = customers.get_mut(&ck) {
                c.delivered += s.get::<i64>(img, order_line::OL_AMOUNT);
            }
        }
    });

    let mut by_customer = 0u64;
    db.for_each_row(ORDER_BY_CUSTOMER, .., |k, _| {
        by_customer += 1;
        let (dk, c, o) = (k >> 44, (k >> 32) & 0xFFF, k & 0xFFFF_FFFF);
        let ok = (dk << 32) | o;
        match orders.get(&ok) {
            Some(info) if info.c == c => {}
            _ => p.add(format!(
                "order_by_customer row {k:#x} does not match an order"
            )),
        }
    });
    if by_customer != orders.len() as u64 {
        p.add(format!(
            "{by_customer} order_by_customer rows for {} orders",
            orders.len()
        ));
    }

    for (k, o) in &orders {
        let has_no = new_orders.contains(k);
        if (o.carrier == 0) != has_no {
            p.add(format!(
                "condition 5: order {k:#x} has carrier {} and {}a new-order row",
                o.carrier,
                if has_no { "" } else { "no " }
            ));
        }
        if o.ol_cnt != o.lines {
            p.add(format!(
                "condition 6: order {k:#x} has O_OL_CNT {} but {} lines",
                o.ol_cnt, o.lines
            ));
        }
    }

    for w in 1..=nw {
        let Some(ytd) = w_ytd[(w - 1) as usize] else {
            p.add(format!("warehouse {w} is missing"));
            continue;
        };
        let sum: i64 = (1..=DISTRICTS)
            .filter_map(|d| didx(w, d))
            .map(|i| dist[i].d_ytd)
            .sum();
        if ytd != sum {
            p.add(format!(
                "condition 1: warehouse {w}: W_YTD {ytd} != sum(D_YTD) {sum}"
            ));
        }
        if ytd != w_hist[(w - 1) as usize] {
            p.add(format!(
                "condition 8: warehouse {w}: W_YTD {ytd} != sum(H_AMOUNT) {}",
                w_hist[(w - 1) as usize]
            ));
        }
        for d in 1..=DISTRICTS {
            let Some(a) = didx(w, d).map(|i| &dist[i]) else {
                continue;
            };
            if !a.seen {
                p.add(format!("district {w}/{d} is missing"));
                continue;
            }
            if a.next_o_id != a.max_o + 1 {
                p.add(format!(
                    "condition 2: district {w}/{d}: D_NEXT_O_ID {} but max(O_ID) {}",
                    a.next_o_id, a.max_o
                ));
            }
            if a.no_count > 0 {
                if a.no_max != a.max_o {
                    p.add(format!(
                        "condition 2: district {w}/{d}: max(NO_O_ID) {} but max(O_ID) {}",
                        a.no_max, a.max_o
                    ));
                }
                if a.no_max - a.no_min + 1 != a.no_count {
                    p.add(format!(
                        "condition 3: district {w}/{d}: new orders {}..={} but {} rows",
                        a.no_min, a.no_max, a.no_count
                    ));
                }
            }
            if a.ol_cnt_sum != a.ol_rows {
                p.add(format!(
                    "condition 4: district {w}/{d}: sum(O_OL_CNT) {} but {} order lines",
                    a.ol_cnt_sum, a.ol_rows
                ));
            }
            if a.d_ytd != a.h_sum {
                p.add(format!(
                    "condition 9: district {w}/{d}: D_YTD {} != sum(H_AMOUNT) {}",
                    a.d_ytd, a.h_sum
                ));
            }
        }
    }

    let mut keys: Vec<&u64> = customers.keys().collect();
    keys.sort_unstable();
    for k in keys {
        let c = &customers[k];
        if c.balance != c.delivered - c.h_sum {
            p.add(format!(
                "condition 10: customer {k:#x}: C_BALANCE {} != delivered {} - paid {}",
                c.balance, c.delivered, c.h_sum
            ));
        }
        if c.balance + c.ytd_payment != c.delivered {
            p.add(format!(
                "condition 12: customer {k:#x}: C_BALANCE {} + C_YTD_PAYMENT {} != delivered {}",
                c.balance, c.ytd_payment, c.delivered
            ));
        }
    }

    p.finish()
}
