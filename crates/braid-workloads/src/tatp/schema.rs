//! The TATP tables (TATP description Sec. 2: SUBSCRIBER, ACCESS_INFO, SPECIAL_FACILITY,
//! CALL_FORWARDING, plus the SUBSCRIBER_NBR index of the `tatp` module doc), their key packing
//! and the SUB_NBR encoding.

use braid_engine::TxError;

use super::SUBSCRIBER_NBR;
use crate::util::table_schema;

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

/// The subscriber id a SUB_NBR encodes; a malformed one is a [`TxError::BadRequest`].
pub(crate) fn parse_sub_nbr(b: &[u8]) -> Result<u64, TxError> {
    if b.is_empty() || b.len() > 15 || !b.iter().all(u8::is_ascii_digit) {
        return Err(TxError::BadRequest {
            table: SUBSCRIBER_NBR.0,
            request: braid_engine::BadRequest::Param(braid_engine::BadParameter::new(
                "tatp",
                "sub_nbr",
                format!("{:?}", String::from_utf8_lossy(b)),
                "1 to 15 decimal digits",
            )),
        });
    }
    Ok(b.iter().fold(0u64, |v, &d| v * 10 + u64::from(d - b'0')))
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
}
