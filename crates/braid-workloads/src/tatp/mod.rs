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

mod check;
mod client;
mod load;
mod schema;
mod txn;

use braid_engine::{BadParameter, Catalog, Db, EngineError, Loader, Procedures, TableId};
use serde::{Deserialize, Serialize};

use crate::client::OnConflict;
use crate::error::{ConsistencyError, UnknownMix};
use crate::oltp;
use crate::util::client_rng;
use crate::{Client, Workload};

pub use client::{TatpClient, TatpSource};
pub use schema::*;

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

/// Which transactions a client runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TatpMix {
    /// 35/10/35/2/14/2/2 (TATP Sec. 4).
    Standard,
    /// Update-Location only.
    UpdateLocationOnly,
}

impl std::fmt::Display for TatpMix {
    /// The name [`TatpMix`]'s `FromStr` reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TatpMix::Standard => "standard",
            TatpMix::UpdateLocationOnly => "update-location-only",
        })
    }
}

impl std::str::FromStr for TatpMix {
    type Err = UnknownMix;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "standard" | "full" => Ok(TatpMix::Standard),
            "update-location-only" | "update-location" => Ok(TatpMix::UpdateLocationOnly),
            _ => Err(UnknownMix {
                workload: "TATP",
                given: s.to_string(),
                choices: "standard or update-location-only",
            }),
        }
    }
}

/// TATP parameters. Built from [`TatpConfig::default`] with the setters (or by assigning
/// fields): `TatpConfig::default().subscribers(10_000).mix(TatpMix::UpdateLocationOnly)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
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
    /// [`TatpConfig::subscribers`] set to `subscribers`.
    pub fn subscribers(mut self, subscribers: u64) -> TatpConfig {
        self.subscribers = subscribers;
        self
    }
    /// [`TatpConfig::mix`] set to `mix`.
    pub fn mix(mut self, mix: TatpMix) -> TatpConfig {
        self.mix = mix;
        self
    }
    /// [`TatpConfig::seed`] set to `seed`.
    pub fn seed(mut self, seed: u64) -> TatpConfig {
        self.seed = seed;
        self
    }

    /// Refuse subscriber counts the key packing cannot represent (it needs 1..2^48).
    pub fn validate(&self) -> Result<(), EngineError> {
        if self.subscribers == 0 || self.subscribers >= 1 << 48 {
            return Err(EngineError::BadOption(BadParameter::new(
                "tatp",
                "subscribers",
                self.subscribers,
                "1..2^48",
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
        let source = TatpSource {
            cfg: self.cfg,
            rng: client_rng(seed, index),
        };
        TatpClient::new(source, OnConflict::Resubmit)
    }
}

impl Workload for Tatp {
    fn name(&self) -> &str {
        "tatp"
    }

    fn params(&self) -> serde_json::Value {
        oltp::params_json(&self.cfg)
    }

    fn catalog(&self) -> Catalog {
        oltp::catalog([
            subscriber::def(),
            access_info::def(),
            special_facility::def(),
            call_forwarding::def(),
            subscriber_nbr::def(),
        ])
    }

    fn procedures(&self) -> Procedures {
        oltp::procedures(&[
            (
                GET_SUBSCRIBER_DATA_TXN,
                "tatp.get_subscriber_data",
                txn::get_subscriber_data,
            ),
            (
                GET_NEW_DESTINATION_TXN,
                "tatp.get_new_destination",
                txn::get_new_destination,
            ),
            (
                GET_ACCESS_DATA_TXN,
                "tatp.get_access_data",
                txn::get_access_data,
            ),
            (
                UPDATE_SUBSCRIBER_DATA_TXN,
                "tatp.update_subscriber_data",
                txn::update_subscriber_data,
            ),
            (
                UPDATE_LOCATION_TXN,
                "tatp.update_location",
                txn::update_location,
            ),
            (
                INSERT_CALL_FORWARDING_TXN,
                "tatp.insert_call_forwarding",
                txn::insert_call_forwarding,
            ),
            (
                DELETE_CALL_FORWARDING_TXN,
                "tatp.delete_call_forwarding",
                txn::delete_call_forwarding,
            ),
        ])
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
        load::load(&self.cfg, loader, progress)
    }

    fn client(&self, index: usize, seed: u64) -> Box<dyn Client> {
        Box::new(self.tatp_client(index, seed))
    }

    fn check(&self, db: &Db) -> Result<(), ConsistencyError> {
        check::check(&self.cfg, db)
    }
}
