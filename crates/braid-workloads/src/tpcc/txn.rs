//! The five TPC-C transactions (Clause 2.4 New-Order, 2.5 Payment, 2.6 Order-Status,
//! 2.7 Delivery, 2.8 Stock-Level) as stored procedures (their parameters are in `params`).
//!
//! Each procedure reads everything random from its parameters (see the `tpcc` module doc), so
//! re-executing it on the same state gives the same writes. Outputs the specification asks the
//! terminal to display are computed and discarded.

use std::hint::black_box;
use std::io::Write as _;
use std::ops::Bound::Included;

use braid_engine::{TxError, Txn};

use super::*;
use crate::util::{Image, col, contains, missing, trim};

/// New-Order (Clause 2.4.2.2).
pub(crate) fn new_order(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let p = NewOrderParams::decode(params)?;
    let (w, d, c) = (p.w, p.d, p.c);
    let ws = tx.schema(WAREHOUSE);
    let w_tax = tx
        .read(WAREHOUSE, w, |img| ws.get::<f64>(img, warehouse::W_TAX))?
        .ok_or(missing(WAREHOUSE, w))?;

    let dk = district_key(w, d);
    let (mut d_tax, mut o_id) = (0.0, 0);
    let found = tx.update(DISTRICT, dk, |r| {
        d_tax = r.get::<f64>(district::D_TAX);
        o_id = r.get::<u64>(district::D_NEXT_O_ID);
        r.set::<u64>(district::D_NEXT_O_ID, o_id + 1);
    })?;
    if !found {
        return Err(missing(DISTRICT, dk));
    }

    let cs = tx.schema(CUSTOMER);
    let ck = customer_key(w, d, c);
    let (c_discount, c_credit) = tx
        .read(CUSTOMER, ck, |img| {
            let mut credit = [0u8; 2];
            credit.copy_from_slice(col(cs, img, customer::C_CREDIT));
            (cs.get::<f64>(img, customer::C_DISCOUNT), credit)
        })?
        .ok_or(missing(CUSTOMER, ck))?;

    let all_local = p.lines().iter().all(|l| l.supply_w == w);
    let mut img = Image::new(tx.schema(ORDER));
    img.u64(order::O_ID, o_id)
        .u64(order::O_D_ID, d)
        .u64(order::O_W_ID, w)
        .u64(order::O_C_ID, c)
        .u64(order::O_ENTRY_D, p.entry_d)
        .u64(order::O_CARRIER_ID, 0)
        .u64(order::O_OL_CNT, p.ol_cnt as u64)
        .u64(order::O_ALL_LOCAL, u64::from(all_local));
    tx.insert(ORDER, order_key(w, d, o_id), img.as_bytes())?;
    let mut img = Image::new(tx.schema(NEW_ORDER));
    img.u64(new_order::NO_O_ID, o_id)
        .u64(new_order::NO_D_ID, d)
        .u64(new_order::NO_W_ID, w);
    tx.insert(NEW_ORDER, order_key(w, d, o_id), img.as_bytes())?;
    let mut img = Image::new(tx.schema(ORDER_BY_CUSTOMER));
    img.u64(order_by_customer::OC_O_ID, o_id);
    tx.insert(
        ORDER_BY_CUSTOMER,
        order_customer_key(w, d, c, o_id),
        img.as_bytes(),
    )?;

    let is = tx.schema(ITEM);
    let mut line_img = Image::new(tx.schema(ORDER_LINE));
    let mut total = 0i64;
    let mut brand_generic = [b'G'; MAX_OL];
    for (n, line) in p.lines().iter().enumerate() {
        let Some((price, i_original)) = tx.read(ITEM, line.i_id, |img| {
            (
                is.get::<i64>(img, item::I_PRICE),
                contains(col(is, img, item::I_DATA), b"ORIGINAL"),
            )
        })?
        else {
            // Clause 2.4.2.3: an unused item number rolls the whole transaction back.
            return Err(TxError::user_abort(format!(
                "tpcc New-Order: item number {} is not valid",
                line.i_id
            )));
        };
        let sk = stock_key(line.supply_w, line.i_id);
        let qty = line.qty as i64;
        let mut dist_info = [0u8; 24];
        let mut s_original = false;
        let found = tx.update(STOCK, sk, |r| {
            let q = r.get::<i64>(stock::S_QUANTITY);
            r.set::<i64>(
                stock::S_QUANTITY,
                if q - qty >= 10 { q - qty } else { q - qty + 91 },
            );
            r.set::<u64>(stock::S_YTD, r.get::<u64>(stock::S_YTD) + line.qty);
            r.set::<u64>(stock::S_ORDER_CNT, r.get::<u64>(stock::S_ORDER_CNT) + 1);
            if line.supply_w != w {
                r.set::<u64>(stock::S_REMOTE_CNT, r.get::<u64>(stock::S_REMOTE_CNT) + 1);
            }
            dist_info.copy_from_slice(r.bytes(stock::S_DIST_01 + (d - 1) as usize));
            s_original = contains(r.bytes(stock::S_DATA), b"ORIGINAL");
        })?;
        if !found {
            return Err(missing(STOCK, sk));
        }
        if i_original && s_original {
            brand_generic[n] = b'B';
        }
        let amount = qty * price;
        total += amount;
        line_img
            .clear()
            .u64(order_line::OL_O_ID, o_id)
            .u64(order_line::OL_D_ID, d)
            .u64(order_line::OL_W_ID, w)
            .u64(order_line::OL_NUMBER, n as u64 + 1)
            .u64(order_line::OL_I_ID, line.i_id)
            .u64(order_line::OL_SUPPLY_W_ID, line.supply_w)
            .u64(order_line::OL_DELIVERY_D, 0)
            .u64(order_line::OL_QUANTITY, line.qty)
            .i64(order_line::OL_AMOUNT, amount)
            .bytes(order_line::OL_DIST_INFO, &dist_info);
        tx.insert(
            ORDER_LINE,
            order_line_key(w, d, o_id, n as u64 + 1),
            line_img.as_bytes(),
        )?;
    }
    black_box((
        total as f64 * (1.0 - c_discount) * (1.0 + w_tax + d_tax),
        c_credit,
        brand_generic,
    ));
    Ok(())
}

/// The customer selected by last name: the one at position ceil(n/2) of those with that last
/// name in the district, sorted by C_FIRST (Clause 2.5.2.2).
fn customer_by_last_name(tx: &mut Txn<'_>, w: u64, d: u64, last: u64) -> Result<u64, TxError> {
    let s = tx.schema(CUSTOMER_BY_NAME);
    let mut found: Vec<([u8; 16], u64)> = Vec::new();
    let lo = customer_name_key(w, d, last, 0);
    let hi = customer_name_key(w, d, last, 0xFFFF);
    tx.scan(
        CUSTOMER_BY_NAME,
        Included(lo),
        Included(hi),
        usize::MAX,
        |_, img| {
            let mut first = [0u8; 16];
            first.copy_from_slice(col(s, img, customer_by_name::CN_FIRST));
            found.push((first, s.get::<u64>(img, customer_by_name::CN_C_ID)));
            true
        },
    )?;
    found.sort_unstable();
    match found.get(found.len().saturating_sub(1) / 2) {
        Some(&(_, c)) => Ok(c),
        None => Err(missing(CUSTOMER_BY_NAME, lo)),
    }
}

fn select_customer(tx: &mut Txn<'_>, w: u64, d: u64, sel: CustomerSel) -> Result<u64, TxError> {
    match sel {
        CustomerSel::ById(c) => Ok(c),
        CustomerSel::ByLastName(last) => customer_by_last_name(tx, w, d, last),
    }
}

/// Payment (Clause 2.5.2.2).
pub(crate) fn payment(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let p = PaymentParams::decode(params)?;
    let mut w_name = [0u8; 10];
    let found = tx.update(WAREHOUSE, p.w, |r| {
        r.set::<i64>(warehouse::W_YTD, r.get::<i64>(warehouse::W_YTD) + p.amount);
        w_name.copy_from_slice(r.bytes(warehouse::W_NAME));
    })?;
    if !found {
        return Err(missing(WAREHOUSE, p.w));
    }
    let dk = district_key(p.w, p.d);
    let mut d_name = [0u8; 10];
    let found = tx.update(DISTRICT, dk, |r| {
        r.set::<i64>(district::D_YTD, r.get::<i64>(district::D_YTD) + p.amount);
        d_name.copy_from_slice(r.bytes(district::D_NAME));
    })?;
    if !found {
        return Err(missing(DISTRICT, dk));
    }

    let c = select_customer(tx, p.c_w, p.c_d, p.customer)?;
    let ck = customer_key(p.c_w, p.c_d, c);
    let found = tx.update(CUSTOMER, ck, |r| {
        r.set::<i64>(
            customer::C_BALANCE,
            r.get::<i64>(customer::C_BALANCE) - p.amount,
        );
        r.set::<i64>(
            customer::C_YTD_PAYMENT,
            r.get::<i64>(customer::C_YTD_PAYMENT) + p.amount,
        );
        r.set::<u64>(
            customer::C_PAYMENT_CNT,
            r.get::<u64>(customer::C_PAYMENT_CNT) + 1,
        );
        if r.bytes(customer::C_CREDIT) == b"BC" {
            // Clause 2.5.2.2: prepend the payment to C_DATA, keeping 500 characters.
            let mut data = Vec::with_capacity(600);
            // Writing to a Vec cannot fail.
            let _ = write!(
                data,
                "{} {} {} {} {} {}.{:02} ",
                c,
                p.c_d,
                p.c_w,
                p.d,
                p.w,
                p.amount / 100,
                p.amount % 100
            );
            data.extend_from_slice(trim(r.bytes(customer::C_DATA)));
            r.set_bytes(customer::C_DATA, &data);
        }
    })?;
    if !found {
        return Err(missing(CUSTOMER, ck));
    }

    let mut h_data = [0u8; 24];
    let mut at = 0;
    for part in [trim(&w_name), b"    ", trim(&d_name)] {
        let n = part.len().min(h_data.len() - at);
        h_data[at..at + n].copy_from_slice(&part[..n]);
        at += n;
    }
    let mut img = Image::new(tx.schema(HISTORY));
    img.u64(history::H_C_ID, c)
        .u64(history::H_C_D_ID, p.c_d)
        .u64(history::H_C_W_ID, p.c_w)
        .u64(history::H_D_ID, p.d)
        .u64(history::H_W_ID, p.w)
        .u64(history::H_DATE, p.date)
        .i64(history::H_AMOUNT, p.amount)
        .bytes(history::H_DATA, &h_data);
    let key = tx.id();
    tx.insert(HISTORY, key, img.as_bytes())?;
    Ok(())
}

/// Order-Status (Clause 2.6.2.2). Read-only.
pub(crate) fn order_status(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let p = OrderStatusParams::decode(params)?;
    let c = select_customer(tx, p.w, p.d, p.customer)?;
    let cs = tx.schema(CUSTOMER);
    let ck = customer_key(p.w, p.d, c);
    let customer = tx
        .read(CUSTOMER, ck, |img| {
            let mut names = [0u8; 34];
            names.copy_from_slice(
                &img[cs.range(customer::C_FIRST).start..cs.range(customer::C_LAST).end],
            );
            (cs.get::<i64>(img, customer::C_BALANCE), names)
        })?
        .ok_or(missing(CUSTOMER, ck))?;

    // The customer's most recent order: the last ORDER_BY_CUSTOMER entry of the customer.
    let mut o_id = None;
    tx.scan(
        ORDER_BY_CUSTOMER,
        Included(order_customer_key(p.w, p.d, c, 0)),
        Included(order_customer_key(p.w, p.d, c, u64::from(u32::MAX))),
        usize::MAX,
        |k, _| {
            o_id = Some(k & 0xFFFF_FFFF);
            true
        },
    )?;
    let o_id = o_id.ok_or(missing(
        ORDER_BY_CUSTOMER,
        order_customer_key(p.w, p.d, c, 0),
    ))?;
    let os = tx.schema(ORDER);
    let ok = order_key(p.w, p.d, o_id);
    let order = tx
        .read(ORDER, ok, |img| {
            (
                os.get::<u64>(img, order::O_ENTRY_D),
                os.get::<u64>(img, order::O_CARRIER_ID),
            )
        })?
        .ok_or(missing(ORDER, ok))?;
    let ls = tx.schema(ORDER_LINE);
    let mut lines = [(0u64, 0u64, 0u64, 0i64, 0u64); MAX_OL];
    let mut n = 0;
    tx.scan(
        ORDER_LINE,
        Included(order_line_key(p.w, p.d, o_id, 0)),
        Included(order_line_key(p.w, p.d, o_id, 15)),
        MAX_OL,
        |_, img| {
            lines[n] = (
                ls.get::<u64>(img, order_line::OL_I_ID),
                ls.get::<u64>(img, order_line::OL_SUPPLY_W_ID),
                ls.get::<u64>(img, order_line::OL_QUANTITY),
                ls.get::<i64>(img, order_line::OL_AMOUNT),
                ls.get::<u64>(img, order_line::OL_DELIVERY_D),
            );
            n += 1;
            n < MAX_OL
        },
    )?;
    black_box((customer, order, lines, n));
    Ok(())
}

/// Delivery (Clause 2.7.4.2): the oldest undelivered order of each of the ten districts, in one
/// transaction.
pub(crate) fn delivery(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let p = DeliveryParams::decode(params)?;
    let w = p.w;
    let mut delivered = 0;
    for d in 1..=DISTRICTS {
        let mut oldest = None;
        tx.scan(
            NEW_ORDER,
            Included(order_key(w, d, 0)),
            Included(order_key(w, d, u64::from(u32::MAX))),
            1,
            |k, _| {
                oldest = Some(k);
                false
            },
        )?;
        let Some(nk) = oldest else { continue };
        if !tx.delete(NEW_ORDER, nk)? {
            return Err(missing(NEW_ORDER, nk));
        }
        let o_id = nk & 0xFFFF_FFFF;
        let (mut c, mut ol_cnt) = (0, 0);
        let found = tx.update(ORDER, nk, |r| {
            c = r.get::<u64>(order::O_C_ID);
            ol_cnt = r.get::<u64>(order::O_OL_CNT);
            r.set::<u64>(order::O_CARRIER_ID, p.carrier);
        })?;
        if !found {
            return Err(missing(ORDER, nk));
        }
        let mut sum = 0i64;
        for ol in 1..=ol_cnt {
            let lk = order_line_key(w, d, o_id, ol);
            let found = tx.update(ORDER_LINE, lk, |r| {
                sum += r.get::<i64>(order_line::OL_AMOUNT);
                r.set::<u64>(order_line::OL_DELIVERY_D, p.date);
            })?;
            if !found {
                return Err(missing(ORDER_LINE, lk));
            }
        }
        let ck = customer_key(w, d, c);
        let found = tx.update(CUSTOMER, ck, |r| {
            r.set::<i64>(customer::C_BALANCE, r.get::<i64>(customer::C_BALANCE) + sum);
            r.set::<u64>(
                customer::C_DELIVERY_CNT,
                r.get::<u64>(customer::C_DELIVERY_CNT) + 1,
            );
        })?;
        if !found {
            return Err(missing(CUSTOMER, ck));
        }
        delivered += 1;
    }
    black_box(delivered);
    Ok(())
}

/// Stock-Level (Clause 2.8.2.2). Read-only.
pub(crate) fn stock_level(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let p = StockLevelParams::decode(params)?;
    let dk = district_key(p.w, p.d);
    let next = tx
        .get::<u64>(DISTRICT, dk, district::D_NEXT_O_ID)?
        .ok_or(missing(DISTRICT, dk))?;
    let first = next.saturating_sub(20).max(1);
    let ls = tx.schema(ORDER_LINE);
    let mut items: Vec<u64> = Vec::with_capacity(20 * MAX_OL);
    tx.scan(
        ORDER_LINE,
        Included(order_line_key(p.w, p.d, first, 0)),
        Included(order_line_key(p.w, p.d, next.saturating_sub(1), 15)),
        usize::MAX,
        |_, img| {
            items.push(ls.get::<u64>(img, order_line::OL_I_ID));
            true
        },
    )?;
    items.sort_unstable();
    items.dedup();
    let ss = tx.schema(STOCK);
    let mut low = 0;
    for i in items {
        let sk = stock_key(p.w, i);
        let q = tx
            .read(STOCK, sk, |img| ss.get::<i64>(img, stock::S_QUANTITY))?
            .ok_or(missing(STOCK, sk))?;
        if q < p.threshold {
            low += 1;
        }
    }
    black_box(low);
    Ok(())
}
