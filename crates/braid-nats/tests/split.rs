//! A flush larger than the largest message is published as several messages, each
//! conditional on the one before, and reads back as the same bytes in the same LSN space.

use std::sync::Arc;

use braid_nats::{Cluster as Client, NatsLog};
use braid_wal::device::Device;
use braid_wal::record::{Kind, RecordSpec, Stamp};
use braid_wal::scan::{ScanMode, Scanner, StreamSource};
use braid_wal::testing::MemSource;

use crate::support::Cluster;

/// Transactions `1..=n`, one 300-byte redo record each, framed as a stream frames them with
/// the device's salt.
fn records(cfg: &braid_nats::NatsConfig, n: u64) -> MemSource {
    let mut mem = MemSource::new("mem", 0, cfg.salt(0));
    let payload = [7u8; 300];
    for txn in 1..=n {
        let spec = RecordSpec {
            kind: Kind::Redo,
            flags: 0,
            txn,
            stamp: &Stamp::None,
            payload: &[&payload],
        };
        mem.append(&spec, 0).unwrap();
    }
    mem
}

#[test]
fn a_large_flush_is_split_and_reads_back_whole() {
    let cluster = Cluster::start();
    let mut cfg = cluster.config("split");
    cfg.max_message = 4096;
    let c = Arc::new(Client::connect(cfg.clone()).unwrap());
    let dev = NatsLog::open_device(c.clone(), 0, 1).unwrap();
    let mem = records(&cfg, 60);
    let end = mem.tail();
    assert!(end > 4 * 4096, "{end}");
    dev.fill(0, &mem.bytes);
    dev.flush(0, end).unwrap();
    drop(dev);
    let again = NatsLog::open_device(c, 0, 2).unwrap();
    assert_eq!(again.store().image().msgs.len() as u64, end.div_ceil(4096));
    assert_eq!((again.start(), again.limit()), (0, end));
    let mut sc = Scanner::new(&again, ScanMode::Strict);
    let mut txns = 0;
    while let Some(r) = sc.next_record().unwrap() {
        txns += 1;
        assert_eq!(r.header.txn, txns);
    }
    assert_eq!(txns, 60);
}

/// A writer killed between the messages of one split flush leaves the first part, ending inside
/// a record: a torn tail, trimmed by recovery with a truncate message, and the next writer's
/// bytes replace it.
#[test]
fn a_flush_cut_between_its_messages_is_a_torn_tail() {
    use braid_nats::publish::{MsgKind, Publisher};
    use braid_wal::scan::EndKind;
    use bytes::Bytes;

    let cluster = Cluster::start();
    let cfg = cluster.config("torn");
    let c = Arc::new(Client::connect(cfg.clone()).unwrap());
    let first = NatsLog::open_device(c.clone(), 0, 1).unwrap();
    drop(first);
    let mut mem = MemSource::new("mem", 0, cfg.salt(0));
    for txn in 1..=3 {
        let spec = RecordSpec {
            kind: Kind::Redo,
            flags: 0,
            txn,
            stamp: &Stamp::None,
            payload: &[&[9u8; 200]],
        };
        mem.append(&spec, 0).unwrap();
    }
    // Only the first 500 bytes (two whole records and part of the third) reach the stream.
    let p = Publisher::new(&c, 0, 1);
    let last = braid_nats::image::read(&c, p.stream_name(), 1)
        .unwrap()
        .last_seq;
    p.publish(
        &c,
        MsgKind::Data,
        0,
        Bytes::copy_from_slice(&mem.bytes[..500]),
        Some(last),
    )
    .unwrap();
    let dev = NatsLog::open_device(c.clone(), 0, 2).unwrap();
    let mut sc = Scanner::new(&dev, ScanMode::Strict);
    let mut txns = 0;
    while sc.next_record().unwrap().is_some() {
        txns += 1;
    }
    let end = sc.end().unwrap().clone();
    assert_eq!(txns, 2);
    assert_eq!(end.kind, EndKind::TornTail, "{end}");
    dev.reset_tail(end.end).unwrap();
    drop(dev);
    let after = NatsLog::open_device(c, 0, 3).unwrap();
    assert_eq!(after.limit(), end.end);
}

/// A split flush that gets no answer (a majority down) is retried, once the servers return,
/// as exactly the same messages followed by the rest: the stream reads back as the bytes
/// written, once each, whichever of the first attempt's messages were stored.
#[test]
fn a_flush_retried_after_an_outage_sends_the_same_messages_again() {
    let cluster = Cluster::start();
    let mut cfg = crate::support::short(cluster.config("retry"), 3);
    cfg.max_message = 4096;
    let c = Arc::new(Client::connect(cfg.clone()).unwrap());
    let dev = NatsLog::open_device(c.clone(), 0, 1).unwrap();
    let mem = records(&cfg, 90);
    let end = mem.tail();
    dev.fill(0, &mem.bytes);
    let first = end / 2;
    cluster.kill(1);
    cluster.kill(2);
    let err = dev.flush(0, first).unwrap_err();
    assert!(matches!(err, braid_wal::WalError::Remote { .. }), "{err}");
    cluster.revive(1);
    cluster.revive(2);
    // The stream retries from the same durable point, with more bytes ready by now.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while let Err(e) = dev.flush(0, end) {
        assert!(
            matches!(e, braid_wal::WalError::Remote { .. }),
            "the retry failed otherwise: {e}"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "no retry succeeded: {e}"
        );
    }
    drop(dev);
    let again = NatsLog::open_device(c, 0, 2).unwrap();
    assert_eq!((again.start(), again.limit()), (0, end));
    let mut sc = Scanner::new(&again, ScanMode::Strict);
    let mut txns = 0;
    while let Some(r) = sc.next_record().unwrap() {
        txns += 1;
        assert_eq!(r.header.txn, txns);
    }
    assert_eq!(txns, 90);
}
