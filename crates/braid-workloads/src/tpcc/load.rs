//! The initial population of TPC-C, Clause 4.3.3.1, scaled by the configuration (see the
//! module doc of `tpcc`). Dates are the fixed [`LOAD_DATE`] so the image is deterministic.

use braid_engine::{EngineError, Loader};
use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

use super::*;
use crate::util::{Image, astring, nstring, nurand, run_units, unit_rng};

/// The "current date and time" of the initial population (seconds since the Unix epoch).
pub const LOAD_DATE: u64 = 1_700_000_000;

/// The run-time constant C of NURand for C_LAST at load (Clause 2.1.6.1); the run-time value
/// differs from it by 66, inside the allowed delta.
pub(crate) const C_LAST_LOAD: u64 = 157;
pub(crate) const C_LAST_RUN: u64 = 223;
pub(crate) const C_ID_RUN: u64 = 259;
pub(crate) const OL_I_ID_RUN: u64 = 7911;

/// Items generated per load unit.
const ITEM_CHUNK: u64 = 10_000;

const SYLLABLES: [&[u8]; 10] = [
    b"BAR", b"OUGHT", b"ABLE", b"PRI", b"PRES", b"ESE", b"ANTI", b"CALLY", b"ATION", b"EING",
];

/// C_LAST for the number `n` in 0..=999 (Clause 4.3.2.3): three syllables, by digit.
pub fn last_name(n: u64) -> ([u8; 16], usize) {
    let mut out = [0u8; 16];
    let mut len = 0;
    for digit in [n / 100 % 10, n / 10 % 10, n % 10] {
        let s = SYLLABLES[digit as usize];
        out[len..len + s.len()].copy_from_slice(s);
        len += s.len();
    }
    (out, len)
}

/// The `A` constant of NURand scaled to a range smaller than the specification's (unchanged at
/// full scale): the power of two minus one nearest above `a * range / spec_range`.
pub(crate) fn scaled_a(a: u64, range: u64, spec_range: u64) -> u64 {
    if range >= spec_range {
        return a;
    }
    ((a * range / spec_range).max(1) + 1).next_power_of_two() - 1
}

/// Random data of 26..=50 characters, 10% of it with "ORIGINAL" at a random position (I_DATA,
/// S_DATA).
fn data_with_original(rng: &mut SmallRng, out: &mut [u8]) {
    let n = astring(rng, 26, 50, out);
    if rng.gen_range(0..10) == 0 {
        let at = rng.gen_range(0..=n - 8);
        out[at..at + 8].copy_from_slice(b"ORIGINAL");
    }
}

/// Street 1, street 2, city, state and zip (Clause 4.3.3.1) into five consecutive columns.
fn address(rng: &mut SmallRng, img: &mut Image<'_>, first_col: usize) {
    astring(rng, 10, 20, img.column_mut(first_col));
    astring(rng, 10, 20, img.column_mut(first_col + 1));
    astring(rng, 10, 20, img.column_mut(first_col + 2));
    astring(rng, 2, 2, img.column_mut(first_col + 3));
    let zip = img.column_mut(first_col + 4);
    nstring(rng, 4, zip);
    zip[4..9].copy_from_slice(b"11111");
}

/// Approximate row count of the initial image (order lines average 10 per order).
pub(crate) fn initial_rows(cfg: &TpccConfig) -> u64 {
    let c = cfg.customers_per_district;
    let undelivered = c - cfg.first_undelivered() + 1;
    let per_district = 1 + 3 * c + 2 * c + 10 * c + undelivered;
    cfg.items + cfg.warehouses * (1 + cfg.items) + cfg.warehouses * DISTRICTS * per_district
}

enum Unit {
    District { w: u64, d: u64 },
    Stock { w: u64, lo: u64, hi: u64 },
    Items { lo: u64, hi: u64 },
    Warehouse { w: u64 },
}

fn unit(cfg: &TpccConfig, mut u: u64) -> Unit {
    let chunks = cfg.items.div_ceil(ITEM_CHUNK);
    let range = |chunk: u64| {
        (
            chunk * ITEM_CHUNK + 1,
            ((chunk + 1) * ITEM_CHUNK).min(cfg.items),
        )
    };
    let districts = cfg.warehouses * DISTRICTS;
    if u < districts {
        return Unit::District {
            w: u / DISTRICTS + 1,
            d: u % DISTRICTS + 1,
        };
    }
    u -= districts;
    if u < cfg.warehouses * chunks {
        let (lo, hi) = range(u % chunks);
        return Unit::Stock {
            w: u / chunks + 1,
            lo,
            hi,
        };
    }
    u -= cfg.warehouses * chunks;
    if u < chunks {
        let (lo, hi) = range(u);
        return Unit::Items { lo, hi };
    }
    u -= chunks;
    Unit::Warehouse { w: u + 1 }
}

pub(crate) fn load(
    cfg: &TpccConfig,
    loader: &Loader<'_>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(), EngineError> {
    let chunks = cfg.items.div_ceil(ITEM_CHUNK);
    let units = cfg.warehouses * DISTRICTS + cfg.warehouses * chunks + chunks + cfg.warehouses;
    run_units(units as usize, progress, |u| {
        let mut rng = unit_rng(cfg.seed, u as u64);
        match unit(cfg, u as u64) {
            Unit::District { w, d } => load_district(cfg, loader, &mut rng, w, d),
            Unit::Stock { w, lo, hi } => load_stock(loader, &mut rng, w, lo, hi),
            Unit::Items { lo, hi } => load_items(loader, &mut rng, lo, hi),
            Unit::Warehouse { w } => load_warehouse(cfg, loader, &mut rng, w),
        }
    })
}

fn load_items(
    loader: &Loader<'_>,
    rng: &mut SmallRng,
    lo: u64,
    hi: u64,
) -> Result<u64, EngineError> {
    let mut img = Image::new(loader.schema(ITEM));
    for i in lo..=hi {
        img.clear()
            .u64(item::I_ID, i)
            .u64(item::I_IM_ID, rng.gen_range(1..=10_000))
            .i64(item::I_PRICE, rng.gen_range(100..=10_000));
        astring(rng, 14, 24, img.column_mut(item::I_NAME));
        data_with_original(rng, img.column_mut(item::I_DATA));
        loader.insert(ITEM, i, img.as_bytes())?;
    }
    Ok(hi + 1 - lo)
}

fn load_warehouse(
    cfg: &TpccConfig,
    loader: &Loader<'_>,
    rng: &mut SmallRng,
    w: u64,
) -> Result<u64, EngineError> {
    let mut img = Image::new(loader.schema(WAREHOUSE));
    img.u64(warehouse::W_ID, w)
        .f64(warehouse::W_TAX, rng.gen_range(0..=2000) as f64 / 10_000.0)
        .i64(
            warehouse::W_YTD,
            (DISTRICTS * cfg.customers_per_district * 1000) as i64,
        );
    astring(rng, 6, 10, img.column_mut(warehouse::W_NAME));
    address(rng, &mut img, warehouse::W_STREET_1);
    loader.insert(WAREHOUSE, w, img.as_bytes())?;
    Ok(1)
}

fn load_stock(
    loader: &Loader<'_>,
    rng: &mut SmallRng,
    w: u64,
    lo: u64,
    hi: u64,
) -> Result<u64, EngineError> {
    let mut img = Image::new(loader.schema(STOCK));
    for i in lo..=hi {
        img.clear()
            .u64(stock::S_I_ID, i)
            .u64(stock::S_W_ID, w)
            .i64(stock::S_QUANTITY, rng.gen_range(10..=100));
        for dist in 0..DISTRICTS as usize {
            astring(rng, 24, 24, img.column_mut(stock::S_DIST_01 + dist));
        }
        data_with_original(rng, img.column_mut(stock::S_DATA));
        loader.insert(STOCK, stock_key(w, i), img.as_bytes())?;
    }
    Ok(hi + 1 - lo)
}

fn load_district(
    cfg: &TpccConfig,
    loader: &Loader<'_>,
    rng: &mut SmallRng,
    w: u64,
    d: u64,
) -> Result<u64, EngineError> {
    let n = cfg.customers_per_district;
    let mut rows = 0;
    let mut ins = |table, key, img: &Image<'_>| -> Result<(), EngineError> {
        rows += 1;
        loader.insert(table, key, img.as_bytes())
    };

    let mut dimg = Image::new(loader.schema(DISTRICT));
    dimg.u64(district::D_ID, d)
        .u64(district::D_W_ID, w)
        .f64(district::D_TAX, rng.gen_range(0..=2000) as f64 / 10_000.0)
        .i64(district::D_YTD, (n * 1000) as i64)
        .u64(district::D_NEXT_O_ID, n + 1);
    astring(rng, 6, 10, dimg.column_mut(district::D_NAME));
    address(rng, &mut dimg, district::D_STREET_1);
    ins(DISTRICT, district_key(w, d), &dimg)?;

    let mut cimg = Image::new(loader.schema(CUSTOMER));
    let mut nimg = Image::new(loader.schema(CUSTOMER_BY_NAME));
    let mut himg = Image::new(loader.schema(HISTORY));
    for c in 1..=n {
        let last = if c <= 1000 {
            c - 1
        } else {
            nurand(rng, 255, C_LAST_LOAD, 0, 999)
        };
        let (name, len) = last_name(last);
        cimg.clear()
            .u64(customer::C_ID, c)
            .u64(customer::C_D_ID, d)
            .u64(customer::C_W_ID, w)
            .bytes(customer::C_MIDDLE, b"OE")
            .bytes(customer::C_LAST, &name[..len])
            .u64(customer::C_SINCE, LOAD_DATE)
            .bytes(
                customer::C_CREDIT,
                if rng.gen_range(0..10) == 0 {
                    b"BC"
                } else {
                    b"GC"
                },
            )
            .i64(customer::C_CREDIT_LIM, 5_000_000)
            .f64(
                customer::C_DISCOUNT,
                rng.gen_range(0..=5000) as f64 / 10_000.0,
            )
            .i64(customer::C_BALANCE, -1000)
            .i64(customer::C_YTD_PAYMENT, 1000)
            .u64(customer::C_PAYMENT_CNT, 1)
            .u64(customer::C_DELIVERY_CNT, 0);
        astring(rng, 8, 16, cimg.column_mut(customer::C_FIRST));
        address(rng, &mut cimg, customer::C_STREET_1);
        nstring(rng, 16, cimg.column_mut(customer::C_PHONE));
        astring(rng, 300, 500, cimg.column_mut(customer::C_DATA));
        let mut first = [0u8; 16];
        first.copy_from_slice(cimg.column_mut(customer::C_FIRST));
        ins(CUSTOMER, customer_key(w, d, c), &cimg)?;

        nimg.clear()
            .bytes(customer_by_name::CN_FIRST, &first)
            .u64(customer_by_name::CN_C_ID, c);
        ins(CUSTOMER_BY_NAME, customer_name_key(w, d, last, c), &nimg)?;

        himg.clear()
            .u64(history::H_C_ID, c)
            .u64(history::H_C_D_ID, d)
            .u64(history::H_C_W_ID, w)
            .u64(history::H_D_ID, d)
            .u64(history::H_W_ID, w)
            .u64(history::H_DATE, LOAD_DATE)
            .i64(history::H_AMOUNT, 1000);
        astring(rng, 12, 24, himg.column_mut(history::H_DATA));
        ins(HISTORY, (1 << 63) | customer_key(w, d, c), &himg)?;
    }

    let mut perm: Vec<u64> = (1..=n).collect();
    perm.shuffle(rng);
    let undelivered = cfg.first_undelivered();
    let mut oimg = Image::new(loader.schema(ORDER));
    let mut ocimg = Image::new(loader.schema(ORDER_BY_CUSTOMER));
    let mut limg = Image::new(loader.schema(ORDER_LINE));
    let mut noimg = Image::new(loader.schema(NEW_ORDER));
    for o in 1..=n {
        let c = perm[(o - 1) as usize];
        let delivered = o < undelivered;
        let ol_cnt = rng.gen_range(5..=15u64);
        oimg.clear()
            .u64(order::O_ID, o)
            .u64(order::O_D_ID, d)
            .u64(order::O_W_ID, w)
            .u64(order::O_C_ID, c)
            .u64(order::O_ENTRY_D, LOAD_DATE)
            .u64(
                order::O_CARRIER_ID,
                if delivered { rng.gen_range(1..=10) } else { 0 },
            )
            .u64(order::O_OL_CNT, ol_cnt)
            .u64(order::O_ALL_LOCAL, 1);
        ins(ORDER, order_key(w, d, o), &oimg)?;
        ocimg.clear().u64(order_by_customer::OC_O_ID, o);
        ins(ORDER_BY_CUSTOMER, order_customer_key(w, d, c, o), &ocimg)?;
        for ol in 1..=ol_cnt {
            limg.clear()
                .u64(order_line::OL_O_ID, o)
                .u64(order_line::OL_D_ID, d)
                .u64(order_line::OL_W_ID, w)
                .u64(order_line::OL_NUMBER, ol)
                .u64(order_line::OL_I_ID, rng.gen_range(1..=cfg.items))
                .u64(order_line::OL_SUPPLY_W_ID, w)
                .u64(
                    order_line::OL_DELIVERY_D,
                    if delivered { LOAD_DATE } else { 0 },
                )
                .u64(order_line::OL_QUANTITY, 5)
                .i64(
                    order_line::OL_AMOUNT,
                    if delivered {
                        0
                    } else {
                        rng.gen_range(1..=999_999)
                    },
                );
            astring(rng, 24, 24, limg.column_mut(order_line::OL_DIST_INFO));
            ins(ORDER_LINE, order_line_key(w, d, o, ol), &limg)?;
        }
        if !delivered {
            noimg
                .clear()
                .u64(new_order::NO_O_ID, o)
                .u64(new_order::NO_D_ID, d)
                .u64(new_order::NO_W_ID, w);
            ins(NEW_ORDER, order_key(w, d, o), &noimg)?;
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn last_names_follow_the_syllable_table() {
        let (n, len) = last_name(371);
        assert_eq!(&n[..len], b"PRICALLYOUGHT");
        let (n, len) = last_name(0);
        assert_eq!(&n[..len], b"BARBARBAR");
        let (_, len) = last_name(888);
        assert_eq!(len, 15);
    }

    #[test]
    fn nurand_a_scales_down_only() {
        assert_eq!(scaled_a(1023, 3000, 3000), 1023);
        assert_eq!(scaled_a(8191, 100_000, 100_000), 8191);
        let a = scaled_a(1023, 60, 3000);
        assert!((15..=31).contains(&a) && (a + 1).is_power_of_two(), "{a}");
        assert_eq!(scaled_a(255, 1, 1000), 1);
    }

    #[test]
    fn units_cover_every_part_once() {
        let cfg = TpccConfig {
            warehouses: 2,
            items: 25_000,
            customers_per_district: 30,
            ..TpccConfig::default()
        };
        let chunks = 3;
        let units = 2 * 10 + 2 * chunks + chunks + 2;
        let mut items = 0;
        let mut stock = 0;
        let mut districts = 0;
        let mut warehouses = 0;
        for u in 0..units {
            match unit(&cfg, u) {
                Unit::District { .. } => districts += 1,
                Unit::Stock { lo, hi, .. } => stock += hi + 1 - lo,
                Unit::Items { lo, hi } => items += hi + 1 - lo,
                Unit::Warehouse { .. } => warehouses += 1,
            }
        }
        assert_eq!(
            (items, stock, districts, warehouses),
            (25_000, 50_000, 20, 2)
        );
    }
}
