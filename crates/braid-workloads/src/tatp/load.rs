//! The initial population of TATP (TATP description Sec. 3): per subscriber one SUBSCRIBER row
//! (and its SUBSCRIBER_NBR index row), 1..=4 ACCESS_INFO and SPECIAL_FACILITY rows of distinct
//! types, and 0..=3 CALL_FORWARDING rows per special facility. Subscribers are loaded in chunks,
//! each from its own generator, so the image does not depend on the loading threads.

use braid_engine::{EngineError, Loader};
use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

use super::*;
use crate::util::{Image, letters, nstring, run_units, unit_rng};

/// Subscribers per load unit.
const LOAD_CHUNK: u64 = 10_000;

/// Build the initial image of `cfg`; `progress` is told how many rows were added.
pub(super) fn load(
    cfg: &TatpConfig,
    loader: &Loader<'_>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(), EngineError> {
    cfg.validate()?;
    let p = cfg.subscribers;
    let units = p.div_ceil(LOAD_CHUNK);
    run_units(units as usize, progress, |u| {
        let mut rng = unit_rng(cfg.seed, u as u64);
        let lo = u as u64 * LOAD_CHUNK + 1;
        let hi = ((u as u64 + 1) * LOAD_CHUNK).min(p);
        load_chunk(loader, &mut rng, lo, hi)
    })
}

/// Load subscribers `lo..=hi` from `rng`; returns the rows inserted.
fn load_chunk(
    loader: &Loader<'_>,
    rng: &mut SmallRng,
    lo: u64,
    hi: u64,
) -> Result<u64, EngineError> {
    let mut rows = 0;
    let mut ins = |table, key, img: &Image<'_>| -> Result<(), EngineError> {
        rows += 1;
        loader.insert(table, key, img.as_bytes())
    };
    let mut s = Image::new(loader.schema(SUBSCRIBER));
    let mut n = Image::new(loader.schema(SUBSCRIBER_NBR));
    let mut ai = Image::new(loader.schema(ACCESS_INFO));
    let mut sf = Image::new(loader.schema(SPECIAL_FACILITY));
    let mut cf = Image::new(loader.schema(CALL_FORWARDING));
    let mut types = [1u64, 2, 3, 4];
    let mut starts = [0u64, 8, 16];
    for s_id in lo..=hi {
        s.clear()
            .u64(subscriber::S_ID, s_id)
            .bytes(subscriber::SUB_NBR, &sub_nbr(s_id));
        for i in 0..10 {
            s.bytes(subscriber::BIT_1 + i, &[rng.gen_range(0..=1)]);
            s.bytes(subscriber::HEX_1 + i, &[rng.gen_range(0..=15)]);
            s.bytes(subscriber::BYTE2_1 + i, &[rng.r#gen::<u8>()]);
        }
        s.u64(
            subscriber::MSC_LOCATION,
            rng.gen_range(1..=u64::from(u32::MAX)),
        );
        s.u64(
            subscriber::VLR_LOCATION,
            rng.gen_range(1..=u64::from(u32::MAX)),
        );
        ins(SUBSCRIBER, s_id, &s)?;
        n.clear().u64(subscriber_nbr::SN_S_ID, s_id);
        ins(SUBSCRIBER_NBR, s_id, &n)?;

        types.shuffle(rng);
        for &t in &types[..rng.gen_range(1..=4)] {
            ai.clear()
                .u64(access_info::AI_S_ID, s_id)
                .u64(access_info::AI_TYPE, t)
                .bytes(access_info::DATA1, &[rng.r#gen::<u8>()])
                .bytes(access_info::DATA2, &[rng.r#gen::<u8>()]);
            letters(rng, ai.column_mut(access_info::DATA3));
            letters(rng, ai.column_mut(access_info::DATA4));
            ins(ACCESS_INFO, access_info_key(s_id, t), &ai)?;
        }

        types.shuffle(rng);
        let sf_types = types;
        for &t in &sf_types[..rng.gen_range(1..=4)] {
            sf.clear()
                .u64(special_facility::SF_S_ID, s_id)
                .u64(special_facility::SF_TYPE, t)
                .bytes(
                    special_facility::IS_ACTIVE,
                    &[u8::from(rng.gen_range(0..100) < 85)],
                )
                .bytes(special_facility::ERROR_CNTRL, &[rng.r#gen::<u8>()])
                .bytes(special_facility::DATA_A, &[rng.r#gen::<u8>()]);
            letters(rng, sf.column_mut(special_facility::DATA_B));
            ins(SPECIAL_FACILITY, special_facility_key(s_id, t), &sf)?;

            starts.shuffle(rng);
            for &start in &starts[..rng.gen_range(0..=3)] {
                cf.clear()
                    .u64(call_forwarding::CF_S_ID, s_id)
                    .u64(call_forwarding::CF_SF_TYPE, t)
                    .u64(call_forwarding::START_TIME, start)
                    .u64(call_forwarding::END_TIME, start + rng.gen_range(1..=8));
                nstring(rng, 15, cf.column_mut(call_forwarding::NUMBERX));
                ins(CALL_FORWARDING, call_forwarding_key(s_id, t, start), &cf)?;
            }
        }
    }
    Ok(rows)
}
