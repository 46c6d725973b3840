//! The stream's limits and lifecycle (close, a panicking encoder), and what real records and
//! the null device carry.

use super::*;

#[test]
fn limits_and_lifecycle() {
    let fake = Fake::new(1024, false, 0);
    let stream = Stream::start(fake.clone(), 0, cfg(2)).unwrap();
    assert_eq!(stream.id(), 7);
    assert_eq!(stream.device().info().kind, "fake");
    let mut w1 = stream.writer().unwrap();
    let w2 = stream.writer().unwrap();
    assert!(matches!(
        stream.writer(),
        Err(WalError::TooMany { max: 2, .. })
    ));
    drop(w2);
    let _w2 = stream.writer().unwrap();
    assert!(matches!(
        w1.append_with(2048, |l, _, _, o| encode_test(l, o)),
        Err(WalError::RecordTooLarge {
            len: 2048,
            max: 1024
        })
    ));
    assert!(w1.append_with(12, |_, _, _, _| {}).is_err());
    assert!(stream.wait_durable(8).is_err(), "beyond the tail");
    let (_, e) = w1.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap();
    // Dropping every handle closes the stream, flushing what was appended.
    drop(w1);
    drop(_w2);
    drop(stream);
    assert_eq!(fake.flushed.load(SeqCst), e);
}

#[test]
fn close_flushes_and_refuses_appends() {
    for durable_on_fill in [false, true] {
        let fake = Fake::new(1 << 16, durable_on_fill, 0);
        let stream = Stream::start(fake.clone(), 0, cfg(2)).unwrap();
        let mut w = stream.writer().unwrap();
        let mut end = 0;
        for _ in 0..10 {
            end = w.append_with(40, |l, _, _, o| encode_test(l, o)).unwrap().1;
        }
        stream.close().unwrap();
        stream.close().unwrap();
        assert_eq!(stream.durable(), end);
        stream.wait_durable(end).unwrap();
        assert!(matches!(
            w.append_with(40, |l, _, _, o| encode_test(l, o)),
            Err(WalError::Closed(7))
        ));
        assert!(matches!(stream.writer(), Err(WalError::Closed(7))));
    }
}

#[test]
fn panicking_encoder_poisons() {
    for durable_on_fill in [false, true] {
        let fake = Fake::new(1 << 16, durable_on_fill, 0);
        let stream = Stream::start(fake.clone(), 0, cfg(2)).unwrap();
        let mut w = stream.writer().unwrap();
        let (_, e1) = w.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = w.append_with(64, |_, _, _, _| panic!("encoder bug"));
        }));
        assert!(r.is_err());
        drop(w);
        let mut w = match stream.writer() {
            Err(WalError::Poisoned { .. }) => None,
            other => Some(other),
        };
        assert!(w.is_none(), "a writer on a poisoned stream");
        w.take();
        assert!(matches!(
            stream.wait_durable(e1 + 64),
            Err(WalError::Poisoned { .. })
        ));
        assert!(stream.durable() <= e1);
    }
}

#[test]
fn real_records_carry_lsn_salt_and_synced() {
    let fake = Fake::new(1 << 16, false, 0);
    let stream = Stream::start(fake.clone(), 0, cfg(2)).unwrap();
    let mut w = stream.writer().unwrap();
    let stamp = Stamp::Gsn(42);
    let payload: [&[u8]; 2] = [b"hello ", b"world"];
    let spec = RecordSpec {
        kind: Kind::Redo,
        flags: record::FLAG_COMMIT,
        txn: 9,
        stamp: &stamp,
        payload: &payload,
    };
    let (l1, e1) = w.append(&spec).unwrap();
    assert_eq!(e1 - l1, spec.encoded_len() as u64);
    stream.wait_durable(e1).unwrap();
    let (l2, e2) = w.append(&spec).unwrap();
    stream.wait_durable(e2).unwrap();
    let file = fake.file.lock().clone();
    for (l, e, synced) in [(l1, e1, 0), (l2, e2, e1)] {
        match record::decode(&file[l as usize..e as usize], l, fake.salt_for(l)) {
            Decoded::Record(r) => {
                assert_eq!(r.header.lsn, l);
                assert_eq!(r.header.txn, 9);
                assert_eq!(r.header.synced, synced);
                assert_eq!(r.payload, b"hello world");
                assert_eq!(r.end(), e);
            }
            other => panic!("record at {l} does not decode: {other:?}"),
        }
    }
    stream.close().unwrap();
}

#[test]
fn null_device_stream() {
    use braid_wal::device::null::NullDevice;
    let stream = Stream::start(Arc::new(NullDevice::new()), 0, cfg(2)).unwrap();
    let mut w = stream.writer().unwrap();
    let mut end = 0;
    for _ in 0..1000 {
        end = w
            .append_with(256, |l, _, _, o| encode_test(l, o))
            .unwrap()
            .1;
    }
    stream.wait_durable(end).unwrap();
    assert_eq!(stream.durable(), 256_000);
    assert_eq!(stream.stats().records, 1000);
    assert_eq!(stream.device().info().kind, "null");
    stream.close().unwrap();
}
