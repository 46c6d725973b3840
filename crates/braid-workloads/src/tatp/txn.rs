//! The seven TATP transactions (TATP description Sec. 4.1-4.7) as stored procedures: every
//! input comes from the parameters, so re-executing a call on the same state gives the same
//! writes. Outputs the specification returns are computed and discarded.

use std::hint::black_box;
use std::ops::Bound::Included;

use braid_engine::{BadParameter, BadRequest, ParamReader, TxError, Txn};

use super::schema::parse_sub_nbr;
use super::*;
use crate::util::{Image, col, missing};

/// The subscriber with this SUB_NBR, through the SUBSCRIBER_NBR index.
fn lookup(tx: &mut Txn<'_>, nbr: &[u8]) -> Result<u64, TxError> {
    let key = parse_sub_nbr(nbr)?;
    tx.get::<u64>(SUBSCRIBER_NBR, key, subscriber_nbr::SN_S_ID)?
        .ok_or(missing(SUBSCRIBER_NBR, key))
}

fn check_type(t: u64) -> Result<u64, TxError> {
    if (1..=4).contains(&t) {
        Ok(t)
    } else {
        Err(TxError::BadRequest {
            table: SPECIAL_FACILITY.0,
            request: BadRequest::Param(BadParameter::new("tatp", "sf_type", t, "1..=4")),
        })
    }
}

fn check_start(t: u64) -> Result<u64, TxError> {
    if matches!(t, 0 | 8 | 16) {
        Ok(t)
    } else {
        Err(TxError::BadRequest {
            table: CALL_FORWARDING.0,
            request: BadRequest::Param(BadParameter::new("tatp", "start_time", t, "0, 8 or 16")),
        })
    }
}

/// GET_SUBSCRIBER_DATA: one subscriber row. Read-only.
pub(super) fn get_subscriber_data(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let s_id = ParamReader::new(params).get::<u64>()?;
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
pub(super) fn get_new_destination(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let s_id = r.get::<u64>()?;
    let sf_type = check_type(u64::from(r.get::<u32>()?))?;
    let start = check_start(u64::from(r.get::<u32>()?))?;
    let end = u64::from(r.get::<u32>()?);
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
                if cs.get::<u64>(img, call_forwarding::START_TIME) <= start
                    && end < cs.get::<u64>(img, call_forwarding::END_TIME)
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
pub(super) fn get_access_data(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let s_id = r.get::<u64>()?;
    let ai_type = check_type(u64::from(r.get::<u32>()?))?;
    let s = tx.schema(ACCESS_INFO);
    let got = tx.read(ACCESS_INFO, access_info_key(s_id, ai_type), |img| {
        let mut data = [0u8; 10];
        data.copy_from_slice(
            &img[s.range(access_info::DATA1).start..s.range(access_info::DATA4).end],
        );
        data
    })?;
    black_box(got);
    Ok(())
}

/// UPDATE_SUBSCRIBER_DATA: BIT_1 of the subscriber and DATA_A of one of its special
/// facilities; rolls back if that facility does not exist.
pub(super) fn update_subscriber_data(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let s_id = r.get::<u64>()?;
    let sf_type = check_type(u64::from(r.get::<u32>()?))?;
    let bit = r.get::<u32>()? as u8;
    let data_a = r.get::<u32>()? as u8;
    if !tx.update(SUBSCRIBER, s_id, |w| w.set_bytes(subscriber::BIT_1, &[bit]))? {
        return Err(missing(SUBSCRIBER, s_id));
    }
    if !tx.update(SPECIAL_FACILITY, special_facility_key(s_id, sf_type), |w| {
        w.set_bytes(special_facility::DATA_A, &[data_a])
    })? {
        return Err(TxError::user_abort(format!(
            "tatp Update-Subscriber-Data: subscriber {s_id} has no facility {sf_type}"
        )));
    }
    Ok(())
}

/// UPDATE_LOCATION: VLR_LOCATION of the subscriber with the given SUB_NBR.
pub(super) fn update_location(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let nbr = r.bytes()?;
    let vlr = r.get::<u64>()?;
    let s_id = lookup(tx, nbr)?;
    if !tx.update(SUBSCRIBER, s_id, |w| {
        w.set::<u64>(subscriber::VLR_LOCATION, vlr)
    })? {
        return Err(missing(SUBSCRIBER, s_id));
    }
    Ok(())
}

/// INSERT_CALL_FORWARDING: a forwarding row for one of the subscriber's special facilities;
/// rolls back if the facility does not exist or the row already does.
pub(super) fn insert_call_forwarding(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let nbr = r.bytes()?;
    let sf_type = check_type(u64::from(r.get::<u32>()?))?;
    let start = check_start(u64::from(r.get::<u32>()?))?;
    let end = u64::from(r.get::<u32>()?);
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
        return Err(TxError::user_abort(format!(
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
        Err(TxError::DuplicateKey { .. }) => Err(TxError::user_abort(format!(
            "tatp Insert-Call-Forwarding: subscriber {s_id} facility {sf_type} already forwards at {start}"
        ))),
        r => r,
    }
}

/// DELETE_CALL_FORWARDING: rolls back if there is no such row.
pub(super) fn delete_call_forwarding(tx: &mut Txn<'_>, params: &[u8]) -> Result<(), TxError> {
    let mut r = ParamReader::new(params);
    let nbr = r.bytes()?;
    let sf_type = check_type(u64::from(r.get::<u32>()?))?;
    let start = check_start(u64::from(r.get::<u32>()?))?;
    let s_id = lookup(tx, nbr)?;
    if !tx.delete(CALL_FORWARDING, call_forwarding_key(s_id, sf_type, start))? {
        return Err(TxError::user_abort(format!(
            "tatp Delete-Call-Forwarding: subscriber {s_id} facility {sf_type} does not forward at {start}"
        )));
    }
    Ok(())
}
