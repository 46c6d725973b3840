//! TATP (Telecom Application Transaction Processing benchmark, description v1.0): the four
//! tables (SUBSCRIBER, ACCESS_INFO, SPECIAL_FACILITY, CALL_FORWARDING), their population
//! (Sec. 3), and the seven transactions (Sec. 4) with the standard mix 35/10/35/2/14/2/2
//! (Get-Subscriber-Data, Get-New-Destination, Get-Access-Data, Update-Subscriber-Data,
//! Update-Location, Insert-Call-Forwarding, Delete-Call-Forwarding), or Update-Location alone.
//! Subscriber ids are drawn with the non-uniform `NURand(A, 1, P)` of the specification (A =
//! 65535 up to 1M subscribers, 1048575 up to 10M, 2097151 above).
//!
//! # Keys
//!
//! | table | index | key |
//! |---|---|---|
//! | SUBSCRIBER | hash | `s_id` (1..=P) |
//! | SUBSCRIBER_NBR | hash | the numeric value of SUB_NBR; holds `s_id` |
//! | ACCESS_INFO | hash | `s_id << 2 \| (ai_type - 1)` |
//! | SPECIAL_FACILITY | hash | `s_id << 2 \| (sf_type - 1)` |
//! | CALL_FORWARDING | ordered | `s_id << 4 \| (sf_type - 1) << 2 \| start_time / 8` |
//!
//! # Choices and simplifications (stated plainly)
//!
//! - SUBSCRIBER_NBR is an extra table: the secondary index on SUB_NBR that Update-Location and
//!   the call-forwarding transactions look subscribers up by (SUB_NBR is `s_id` as a 15-digit
//!   zero-padded string, so its numeric value is the key). It never changes after the load.
//! - BIT_x, HEX_x and BYTE2_x are one-byte columns; the location columns are U64.
//! - Transactions the specification expects to fail some of the time (Update-Subscriber-Data
//!   on a missing special facility, Insert-Call-Forwarding on a missing facility or an existing
//!   row, Delete-Call-Forwarding of a missing row) roll back with `TxError::UserAbort`, so
//!   nothing of them is logged. The read-only transactions commit even when they find no row.
//! - All random inputs are made by the client and passed as parameters (command logging).
//!   Clients resubmit a transaction that failed with a retryable conflict on their next call.
//! - The consistency check is ours (TATP defines none): the subscriber count, the SUB_NBR
//!   index, 1..4 access-info and special-facility rows per subscriber, and every
//!   call-forwarding row belonging to an existing special facility under the key its columns
//!   give. (END_TIME is not checked against START_TIME: Insert-Call-Forwarding draws it from
//!   1..=24 independently of the start, as the specification says.)

use std::hint::black_box;
use std::ops::Bound::Included;

use braid_engine::schema::get_u64;
use braid_engine::{
    Catalog, Db, EngineError, Loader, ParamReader, Params, Procedures, TableId, Ticket, TxError,
    Txn, Worker,
};
use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::util::{
    Image, client_rng, col, letters, missing, nstring, nurand, run_units, table_schema, unit_rng,
};
use crate::{Client, Workload};

/// Procedure id of Get-Subscriber-Data.
pub const GET_SUBSCRIBER_DATA_TXN: u32 = 20;
/// Procedure id of Get-New-Destination.
pub const GET_NEW_DESTINATION_TXN: u32 = 21;
/// Procedure id of Get-Access-Data.
pub const GET_ACCESS_DATA_TXN: u32 = 22;
/// Procedure id of Update-Subscriber-Data.
pub const UPDATE_SUBSCRIBER_DATA_TXN: u32 = 23;
/// Procedure id of Update-Location.
pub const UPDATE_LOCATION_TXN: u32 = 24;
/// Procedure id of Insert-Call-Forwarding.
pub const INSERT_CALL_FORWARDING_TXN: u32 = 25;
/// Procedure id of Delete-Call-Forwarding.
pub const DELETE_CALL_FORWARDING_TXN: u32 = 26;

/// Table id of SUBSCRIBER.
pub const SUBSCRIBER: TableId = TableId(0);
/// Table id of ACCESS_INFO.
pub const ACCESS_INFO: TableId = TableId(1);
/// Table id of SPECIAL_FACILITY.
pub const SPECIAL_FACILITY: TableId = TableId(2);
/// Table id of CALL_FORWARDING.
pub const CALL_FORWARDING: TableId = TableId(3);
/// Table id of SUBSCRIBER_NBR, the index on SUB_NBR (see the module doc).
pub const SUBSCRIBER_NBR: TableId = TableId(4);

table_schema!(subscriber, "subscriber", IndexKind::Hash, {
    S_ID: ColumnType::U64,
    SUB_NBR: ColumnType::Bytes(15),
    BIT_1: ColumnType::Bytes(1),
    BIT_2: ColumnType::Bytes(1),
    BIT_3: ColumnType::Bytes(1),
    BIT_4: ColumnType::Bytes(1),
    BIT_5: ColumnType::Bytes(1),
    BIT_6: ColumnType::Bytes(1),
    BIT_7: ColumnType::Bytes(1),
    BIT_8: ColumnType::Bytes(1),
    BIT_9: ColumnType::Bytes(1),
    BIT_10: ColumnType::Bytes(1),
    HEX_1: ColumnType::Bytes(1),
    HEX_2: ColumnType::Bytes(1),
    HEX_3: ColumnType::Bytes(1),
    HEX_4: ColumnType::Bytes(1),
    HEX_5: ColumnType::Bytes(1),
    HEX_6: ColumnType::Bytes(1),
    HEX_7: ColumnType::Bytes(1),
    HEX_8: ColumnType::Bytes(1),
    HEX_9: ColumnType::Bytes(1),
    HEX_10: ColumnType::Bytes(1),
    BYTE2_1: ColumnType::Bytes(1),
    BYTE2_2: ColumnType::Bytes(1),
    BYTE2_3: ColumnType::Bytes(1),
    BYTE2_4: ColumnType::Bytes(1),
    BYTE2_5: ColumnType::Bytes(1),
    BYTE2_6: ColumnType::Bytes(1),
    BYTE2_7: ColumnType::Bytes(1),
    BYTE2_8: ColumnType::Bytes(1),
    BYTE2_9: ColumnType::Bytes(1),
    BYTE2_10: ColumnType::Bytes(1),
    MSC_LOCATION: ColumnType::U64,
    VLR_LOCATION: ColumnType::U64,
});

table_schema!(access_info, "access_info", IndexKind::Hash, {
    AI_S_ID: ColumnType::U64,
    AI_TYPE: ColumnType::U64,
    DATA1: ColumnType::Bytes(1),
    DATA2: ColumnType::Bytes(1),
    DATA3: ColumnType::Bytes(3),
    DATA4: ColumnType::Bytes(5),
});

table_schema!(special_facility, "special_facility", IndexKind::Hash, {
    SF_S_ID: ColumnType::U64,
    SF_TYPE: ColumnType::U64,
    IS_ACTIVE: ColumnType::Bytes(1),
    ERROR_CNTRL: ColumnType::Bytes(1),
    DATA_A: ColumnType::Bytes(1),
    DATA_B: ColumnType::Bytes(5),
});

table_schema!(call_forwarding, "call_forwarding", IndexKind::Ordered, {
    CF_S_ID: ColumnType::U64,
    CF_SF_TYPE: ColumnType::U64,
    START_TIME: ColumnType::U64,
    END_TIME: ColumnType::U64,
    NUMBERX: ColumnType::Bytes(15),
});

table_schema!(subscriber_nbr, "subscriber_nbr", IndexKind::Hash, {
    SN_S_ID: ColumnType::U64,
});

/// ACCESS_INFO key.
pub fn access_info_key(s_id: u64, ai_type: u64) -> u64 {
    (s_id << 2) | (ai_type - 1)
}

/// SPECIAL_FACILITY key.
pub fn special_facility_key(s_id: u64, sf_type: u64) -> u64 {
    (s_id << 2) | (sf_type - 1)
}

/// CALL_FORWARDING key (`start_time` is 0, 8 or 16).
pub fn call_forwarding_key(s_id: u64, sf_type: u64, start_time: u64) -> u64 {
    (special_facility_key(s_id, sf_type) << 2) | (start_time / 8)
}

/// SUB_NBR of a subscriber: `s_id` as 15 decimal digits.
pub fn sub_nbr(s_id: u64) -> [u8; 15] {
    let mut out = [b'0'; 15];
    let mut v = s_id;
    for b in out.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
    out
}

fn parse_sub_nbr(b: &[u8]) -> Result<u64, TxError> {
    if b.is_empty() || b.len() > 15 || !b.iter().all(u8::is_ascii_digit) {
        return Err(TxError::BadRequest {
            table: SUBSCRIBER_NBR.0,
            what: format!("bad sub_nbr {:?}", String::from_utf8_lossy(b)),
        });
    }
    Ok(b.iter().fold(0u64, |v, &d| v * 10 + u64::from(d - b'0')))
}

/// Which transactions a client runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TatpMix {
    /// 35/10/35/2/14/2/2 (TATP Sec. 4).
    Standard,
    /// Update-Location only.
    UpdateLocationOnly,
}

impl std::str::FromStr for TatpMix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "standard" | "full" => Ok(TatpMix::Standard),
            "update-location-only" | "update-location" => Ok(TatpMix::UpdateLocationOnly),
            _ => Err(format!(
                "unknown TATP mix {s:?}; use standard or update-location-only"
            )),
        }
    }
}

/// TATP parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TatpConfig {
    /// P, the number of subscribers.
    pub subscribers: u64,
    /// Which transactions clients run.
    pub mix: TatpMix,
    /// Seed of the initial population.
    pub seed: u64,
}

/// The workload's configuration under its generic name.
pub type Config = TatpConfig;

impl Default for TatpConfig {
    fn default() -> Self {
        TatpConfig {
            subscribers: 100_000,
            mix: TatpMix::Standard,
            seed: 0x7A7B_2024,
        }
    }
}

impl TatpConfig {
    /// Refuse subscriber counts the key packing cannot represent (it needs 1..2^48).
    pub fn validate(&self) -> Result<(), EngineError> {
        if self.subscribers == 0 || self.subscribers >= 1 << 48 {
            return Err(EngineError::Config(format!(
                "tatp: subscribers must be 1..2^48, not {}",
                self.subscribers
            )));
        }
        Ok(())
    }

    /// The `A` of NURand for this many subscribers (TATP Sec. 3).
    pub fn nurand_a(&self) -> u64 {
        match self.subscribers {
            0..=1_000_000 => 65_535,
            1_000_001..=10_000_000 => 1_048_575,
            _ => 2_097_151,
        }
    }
}

/// The TATP workload.
#[derive(Debug, Clone)]
pub struct Tatp {
    cfg: TatpConfig,
}

const LOAD_CHUNK: u64 = 10_000;

impl Tatp {
    /// The workload, once `cfg` is validated.
    pub fn new(cfg: TatpConfig) -> Result<Tatp, EngineError> {
        cfg.validate()?;
        Ok(Tatp { cfg })
    }

    /// The (validated) configuration.
    pub fn config(&self) -> &TatpConfig {
        &self.cfg
    }

    /// A concrete client.
    pub fn tatp_client(&self, index: usize, seed: u64) -> TatpClient {
        TatpClient {
            cfg: self.cfg,
            rng: client_rng(seed, index),
            params: Params::new(),
            proc_id: 0,
            retry: false,
        }
    }

    fn load_chunk(
        &self,
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
}

/// The subscriber with this SUB_NBR, through the SUBSCRIBER_NBR index.
fn lookup(tx: &mut Txn<'_>, nbr: &[u8]) -> Result<u64, TxError> {
    let key = parse_sub_nbr(nbr)?;
    tx.read_u64(SUBSCRIBER_NBR, key, subscriber_nbr::SN_S_ID)?
        .ok_or(missing(SUBSCRIBER_NBR, key))
}

fn check_type(t: u64) -> Result<u64, TxError> {
    if (1..=4).contains(&t) {
        Ok(t)
    } else {
        Err(TxError::BadRequest {
            table: SPECIAL_FACILITY.0,
            what: format!("type {t} is not in 1..=4"),
        })
    }
}

fn check_start(t: u64) -> Result<u64, TxError> {
    if matches!(t, 0 | 8 | 16) {
        Ok(t)
    } else {
        Err(TxError::BadRequest {
            table: CALL_FORWARDING.0,
            what: format!("start time {t} is not 0, 8 or 16"),
        })
    }
}

/// GET_SUBSCRIBER_DATA: one subscriber row. Read-only.
fn get_subscriber_data(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let s_id = ParamReader::new(params).u64()?;
    let mut row = [0u8; 128];
    let got = tx.read(SUBSCRIBER, s_id, |img| {
        let n = img.len().min(row.len());
        row[..n].copy_from_slice(&img[..n]);
    })?;
    black_box((got, row));
    Ok(())
}

/// GET_NEW_DESTINATION: the forwarding numbers of an active special facility valid for the
/// given times. Read-only.
fn get_new_destination(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let s_id = r.u64()?;
    let sf_type = check_type(u64::from(r.u32()?))?;
    let start = check_start(u64::from(r.u32()?))?;
    let end = u64::from(r.u32()?);
    let ss = tx.schema(SPECIAL_FACILITY);
    let active = tx.read(
        SPECIAL_FACILITY,
        special_facility_key(s_id, sf_type),
        |img| col(ss, img, special_facility::IS_ACTIVE)[0] == 1,
    )?;
    let mut numbers = 0;
    let mut last = [0u8; 15];
    if active == Some(true) {
        let cs = tx.schema(CALL_FORWARDING);
        tx.scan(
            CALL_FORWARDING,
            Included(call_forwarding_key(s_id, sf_type, 0)),
            Included(call_forwarding_key(s_id, sf_type, start)),
            3,
            |_, img| {
                if get_u64(cs, img, call_forwarding::START_TIME) <= start
                    && end < get_u64(cs, img, call_forwarding::END_TIME)
                {
                    last.copy_from_slice(col(cs, img, call_forwarding::NUMBERX));
                    numbers += 1;
                }
                true
            },
        )?;
    }
    black_box((numbers, last));
    Ok(())
}

/// GET_ACCESS_DATA: one access-info row. Read-only.
fn get_access_data(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let s_id = r.u64()?;
    let ai_type = check_type(u64::from(r.u32()?))?;
    let s = tx.schema(ACCESS_INFO);
    let got = tx.read(ACCESS_INFO, access_info_key(s_id, ai_type), |img| {
        let mut data = [0u8; 10];
        data.copy_from_slice(&img[s.offset(access_info::DATA1)..s.offset(access_info::DATA4) + 5]);
        data
    })?;
    black_box(got);
    Ok(())
}

/// UPDATE_SUBSCRIBER_DATA: BIT_1 of the subscriber and DATA_A of one of its special
/// facilities; rolls back if that facility does not exist.
fn update_subscriber_data(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let s_id = r.u64()?;
    let sf_type = check_type(u64::from(r.u32()?))?;
    let bit = r.u32()? as u8;
    let data_a = r.u32()? as u8;
    if !tx.update(SUBSCRIBER, s_id, |w| w.set_bytes(subscriber::BIT_1, &[bit]))? {
        return Err(missing(SUBSCRIBER, s_id));
    }
    if !tx.update(SPECIAL_FACILITY, special_facility_key(s_id, sf_type), |w| {
        w.set_bytes(special_facility::DATA_A, &[data_a])
    })? {
        return Err(TxError::UserAbort(format!(
            "tatp Update-Subscriber-Data: subscriber {s_id} has no facility {sf_type}"
        )));
    }
    Ok(())
}

/// UPDATE_LOCATION: VLR_LOCATION of the subscriber with the given SUB_NBR.
fn update_location(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let nbr = r.bytes()?;
    let vlr = r.u64()?;
    let s_id = lookup(tx, nbr)?;
    if !tx.update(SUBSCRIBER, s_id, |w| {
        w.set_u64(subscriber::VLR_LOCATION, vlr)
    })? {
        return Err(missing(SUBSCRIBER, s_id));
    }
    Ok(())
}

/// INSERT_CALL_FORWARDING: a forwarding row for one of the subscriber's special facilities;
/// rolls back if the facility does not exist or the row already does.
fn insert_call_forwarding(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let nbr = r.bytes()?;
    let sf_type = check_type(u64::from(r.u32()?))?;
    let start = check_start(u64::from(r.u32()?))?;
    let end = u64::from(r.u32()?);
    let numberx = r.bytes()?;
    let s_id = lookup(tx, nbr)?;
    // SELECT sf_type FROM special_facility WHERE s_id = ?
    let mut has_type = false;
    for t in 1..=4 {
        let found = tx
            .read(SPECIAL_FACILITY, special_facility_key(s_id, t), |_| ())?
            .is_some();
        has_type |= found && t == sf_type;
    }
    if !has_type {
        return Err(TxError::UserAbort(format!(
            "tatp Insert-Call-Forwarding: subscriber {s_id} has no facility {sf_type}"
        )));
    }
    let mut img = Image::new(tx.schema(CALL_FORWARDING));
    img.u64(call_forwarding::CF_S_ID, s_id)
        .u64(call_forwarding::CF_SF_TYPE, sf_type)
        .u64(call_forwarding::START_TIME, start)
        .u64(call_forwarding::END_TIME, end)
        .bytes(call_forwarding::NUMBERX, numberx);
    match tx.insert(
        CALL_FORWARDING,
        call_forwarding_key(s_id, sf_type, start),
        img.as_bytes(),
    ) {
        Err(TxError::DuplicateKey { .. }) => Err(TxError::UserAbort(format!(
            "tatp Insert-Call-Forwarding: subscriber {s_id} facility {sf_type} already forwards at {start}"
        ))),
        r => r,
    }
}

/// DELETE_CALL_FORWARDING: rolls back if there is no such row.
fn delete_call_forwarding(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let nbr = r.bytes()?;
    let sf_type = check_type(u64::from(r.u32()?))?;
    let start = check_start(u64::from(r.u32()?))?;
    let s_id = lookup(tx, nbr)?;
    if !tx.delete(CALL_FORWARDING, call_forwarding_key(s_id, sf_type, start))? {
        return Err(TxError::UserAbort(format!(
            "tatp Delete-Call-Forwarding: subscriber {s_id} facility {sf_type} does not forward at {start}"
        )));
    }
    Ok(())
}

impl Workload for Tatp {
    fn name(&self) -> &str {
        "tatp"
    }

    fn params(&self) -> serde_json::Value {
        serde_json::to_value(self.cfg).unwrap_or(serde_json::Value::Null)
    }

    fn catalog(&self) -> Catalog {
        let mut c = Catalog::new();
        for def in [
            subscriber::def(),
            access_info::def(),
            special_facility::def(),
            call_forwarding::def(),
            subscriber_nbr::def(),
        ] {
            c.add(def);
        }
        c
    }

    fn procedures(&self) -> Procedures {
        let mut p = Procedures::new();
        p.register(
            GET_SUBSCRIBER_DATA_TXN,
            "tatp.get_subscriber_data",
            get_subscriber_data,
        );
        p.register(
            GET_NEW_DESTINATION_TXN,
            "tatp.get_new_destination",
            get_new_destination,
        );
        p.register(GET_ACCESS_DATA_TXN, "tatp.get_access_data", get_access_data);
        p.register(
            UPDATE_SUBSCRIBER_DATA_TXN,
            "tatp.update_subscriber_data",
            update_subscriber_data,
        );
        p.register(UPDATE_LOCATION_TXN, "tatp.update_location", update_location);
        p.register(
            INSERT_CALL_FORWARDING_TXN,
            "tatp.insert_call_forwarding",
            insert_call_forwarding,
        );
        p.register(
            DELETE_CALL_FORWARDING_TXN,
            "tatp.delete_call_forwarding",
            delete_call_forwarding,
        );
        p
    }

    /// Expected rows: per subscriber 1 + 1 (index) + 2.5 access-info + 2.5 special-facility
    /// + 3.75 call-forwarding.
    fn initial_rows(&self) -> u64 {
        self.cfg.subscribers * 43 / 4
    }

    fn load(
        &self,
        loader: &Loader<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<(), EngineError> {
        self.cfg.validate()?;
        let p = self.cfg.subscribers;
        let units = p.div_ceil(LOAD_CHUNK);
        run_units(units as usize, progress, |u| {
            let mut rng = unit_rng(self.cfg.seed, u as u64);
            let lo = u as u64 * LOAD_CHUNK + 1;
            let hi = ((u as u64 + 1) * LOAD_CHUNK).min(p);
            self.load_chunk(loader, &mut rng, lo, hi)
        })
    }

    fn client(&self, index: usize, seed: u64) -> Box<dyn Client> {
        Box::new(self.tatp_client(index, seed))
    }

    fn check(&self, db: &Db) -> Result<(), String> {
        let p = self.cfg.subscribers;
        let mut problems = Vec::new();
        let mut add = |s: String| {
            if problems.len() < 20 {
                problems.push(s);
            }
        };
        let n = db.rows(SUBSCRIBER) as u64;
        if n != p {
            add(format!("{n} subscribers, expected {p}"));
        }
        let ss = db.schema(SUBSCRIBER);
        db.for_each_row(SUBSCRIBER, |k, img| {
            if !(1..=p).contains(&k) || col(ss, img, subscriber::SUB_NBR) != sub_nbr(k) {
                add(format!(
                    "subscriber {k} has sub_nbr {:?}",
                    String::from_utf8_lossy(col(ss, img, subscriber::SUB_NBR))
                ));
            }
        });
        let ns = db.schema(SUBSCRIBER_NBR);
        let mut index_rows = 0;
        db.for_each_row(SUBSCRIBER_NBR, |k, img| {
            index_rows += 1;
            if get_u64(ns, img, subscriber_nbr::SN_S_ID) != k || db.peek(SUBSCRIBER, k).is_none() {
                add(format!(
                    "subscriber_nbr {k} points at {}",
                    get_u64(ns, img, subscriber_nbr::SN_S_ID)
                ));
            }
        });
        if index_rows != p {
            add(format!("{index_rows} subscriber_nbr rows, expected {p}"));
        }
        let mut ai_per = vec![0u8; p as usize + 1];
        db.for_each_row(ACCESS_INFO, |k, _| {
            match ai_per.get_mut((k >> 2) as usize) {
                Some(n) => *n += 1,
                None => add(format!("access_info {k:#x} of a missing subscriber")),
            }
        });
        let mut sf_per = vec![0u8; p as usize + 1];
        db.for_each_row(SPECIAL_FACILITY, |k, _| {
            match sf_per.get_mut((k >> 2) as usize) {
                Some(n) => *n += 1,
                None => add(format!("special_facility {k:#x} of a missing subscriber")),
            }
        });
        for s_id in 1..=p as usize {
            if !(1..=4).contains(&ai_per[s_id]) || !(1..=4).contains(&sf_per[s_id]) {
                add(format!(
                    "subscriber {s_id} has {} access-info and {} special-facility rows",
                    ai_per[s_id], sf_per[s_id]
                ));
            }
        }
        let cs = db.schema(CALL_FORWARDING);
        db.for_each_row(CALL_FORWARDING, |k, img| {
            let (s_id, t) = (
                get_u64(cs, img, call_forwarding::CF_S_ID),
                get_u64(cs, img, call_forwarding::CF_SF_TYPE),
            );
            let start = get_u64(cs, img, call_forwarding::START_TIME);
            if !(1..=4).contains(&t)
                || !matches!(start, 0 | 8 | 16)
                || call_forwarding_key(s_id, t, start) != k
            {
                add(format!(
                    "call_forwarding {k:#x} holds s_id {s_id} type {t} start {start}"
                ));
            } else if db
                .peek(SPECIAL_FACILITY, special_facility_key(s_id, t))
                .is_none()
            {
                add(format!(
                    "call_forwarding {k:#x} of missing special facility {s_id}/{t}"
                ));
            }
        });
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("tatp consistency: {}", problems.join("; ")))
        }
    }
}

/// Generates and runs TATP transactions.
pub struct TatpClient {
    cfg: TatpConfig,
    rng: SmallRng,
    params: Params,
    proc_id: u32,
    /// The last attempt failed with a retryable conflict: run the same call again.
    retry: bool,
}

impl std::fmt::Debug for TatpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TatpClient")
            .field("proc_id", &self.proc_id)
            .finish()
    }
}

impl TatpClient {
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

    /// Choose and encode the next transaction; returns its procedure id and parameters.
    pub fn generate(&mut self) -> (u32, &[u8]) {
        let pick = match self.cfg.mix {
            TatpMix::Standard => self.rng.gen_range(0..100),
            TatpMix::UpdateLocationOnly => 82,
        };
        let s_id = self.s_id();
        let p = &mut self.params;
        p.clear();
        self.proc_id = match pick {
            0..35 => {
                p.u64(s_id);
                GET_SUBSCRIBER_DATA_TXN
            }
            35..45 => {
                let (t, start, end) = (
                    self.rng.gen_range(1..=4),
                    self.start_time(),
                    self.rng.gen_range(1..=24),
                );
                self.params.u64(s_id).u32(t).u32(start).u32(end);
                GET_NEW_DESTINATION_TXN
            }
            45..80 => {
                p.u64(s_id).u32(self.rng.gen_range(1..=4));
                GET_ACCESS_DATA_TXN
            }
            80..82 => {
                let (t, bit, data_a) = (
                    self.rng.gen_range(1..=4),
                    self.rng.gen_range(0..=1),
                    self.rng.gen_range(0..=255),
                );
                p.u64(s_id).u32(t).u32(bit).u32(data_a);
                UPDATE_SUBSCRIBER_DATA_TXN
            }
            82..96 => {
                p.bytes(&sub_nbr(s_id))
                    .u64(self.rng.gen_range(1..=u64::from(u32::MAX)));
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
                self.params
                    .bytes(&sub_nbr(s_id))
                    .u32(t)
                    .u32(start)
                    .u32(end)
                    .bytes(&numberx);
                INSERT_CALL_FORWARDING_TXN
            }
            _ => {
                let (t, start) = (self.rng.gen_range(1..=4), self.start_time());
                self.params.bytes(&sub_nbr(s_id)).u32(t).u32(start);
                DELETE_CALL_FORWARDING_TXN
            }
        };
        (self.proc_id, &self.params.bytes)
    }
}

impl Client for TatpClient {
    fn run_one(&mut self, worker: &mut Worker) -> Result<Ticket, TxError> {
        if !self.retry {
            self.generate();
        }
        let r = worker.call(self.proc_id, &self.params.bytes);
        self.retry = matches!(&r, Err(e) if e.is_retryable());
        r
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn sub_nbr_round_trips() {
        assert_eq!(&sub_nbr(42), b"000000000000042");
        assert_eq!(parse_sub_nbr(&sub_nbr(123_456_789)).unwrap(), 123_456_789);
        assert!(parse_sub_nbr(b"12x").is_err());
        assert!(parse_sub_nbr(b"").is_err());
    }

    #[test]
    fn keys_do_not_collide() {
        assert!(call_forwarding_key(1, 4, 16) < call_forwarding_key(2, 1, 0));
        assert_eq!(call_forwarding_key(7, 2, 8) & 3, 1);
        assert_ne!(special_facility_key(1, 4), special_facility_key(2, 1));
    }

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
