//! Device failures seen by the stream: flush errors poison it, ENOSPC fails only the
//! affected waiters and recovers, a ring that cannot drain is `LogFull`.

use std::time::Instant;

use super::*;

#[test]
fn poison_on_flush_error() {
    let fake = Fake::new(1 << 16, false, 0);
    let stream = Stream::start(fake.clone(), 0, cfg(4)).unwrap();
    let mut w = stream.writer().unwrap();
    let (_, e1) = w.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap();
    stream.wait_durable(e1).unwrap();
    fake.mode.store(IOERR, SeqCst);
    let (_, e2) = w.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap();
    let err = stream.wait_durable(e2).unwrap_err();
    match &err {
        WalError::Poisoned {
            stream: 7, cause, ..
        } => {
            // The source chain keeps the device's error itself.
            assert!(
                matches!(&**cause, WalError::Io { .. })
                    && cause.to_string().contains("injected EIO"),
                "{cause}"
            )
        }
        other => panic!("expected Poisoned, got {other:?}"),
    }
    assert!(err.to_string().contains("poisoned"));
    // Later appends and waits fail too, even once the device would work again.
    fake.mode.store(OK, SeqCst);
    assert!(matches!(
        w.append_with(64, |l, _, _, o| encode_test(l, o)),
        Err(WalError::Poisoned { .. })
    ));
    assert!(matches!(
        stream.wait_durable(e2),
        Err(WalError::Poisoned { .. })
    ));
    assert!(matches!(
        stream.check_durable(e2),
        Err(WalError::Poisoned { .. })
    ));
    assert!(matches!(stream.writer(), Err(WalError::Poisoned { .. })));
    // What was durable before the failure stays acknowledged; nothing after it ever is:
    // closing joins the flusher (which would flush everything appended on its way out if it
    // ignored the poison), so what is durable after it is final.
    stream.wait_durable(e1).unwrap();
    assert!(matches!(stream.close(), Err(WalError::Poisoned { .. })));
    assert_eq!(stream.durable(), e1);
    assert_eq!(fake.flushed.load(SeqCst), e1);
}

/// Poll `done` until it holds; panics with `what` if it does not within a generous deadline.
fn poll_until<T>(what: &str, mut done: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = done() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn poison_fails_pending_waiters() {
    let fake = Fake::new(1 << 16, false, 0);
    let stream = Stream::start(fake.clone(), 0, cfg(4)).unwrap();
    let mut w = stream.writer().unwrap();
    // Hold a writer mid-fill so the next records stay pending, start waiters, then fail.
    fake.block_fill_at(0);
    let s2 = stream.clone();
    let a = std::thread::spawn(move || {
        let mut w = s2.writer().unwrap();
        w.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap()
    });
    fake.wait_entered();
    let (_, e) = w.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let s = stream.clone();
            std::thread::spawn(move || s.wait_durable(e))
        })
        .collect();
    fake.mode.store(IOERR, SeqCst);
    fake.open_gate();
    a.join().unwrap();
    for h in waiters {
        assert!(matches!(h.join().unwrap(), Err(WalError::Poisoned { .. })));
    }
    assert_eq!(stream.durable(), 0);
}

#[test]
fn nospace_fails_affected_waiters_then_recovers() {
    let fake = Fake::new(1 << 16, false, 0);
    let stream = Stream::start(fake.clone(), 0, cfg(4)).unwrap();
    let mut w = stream.writer().unwrap();
    let (_, e1) = w.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap();
    stream.wait_durable(e1).unwrap();
    fake.mode.store(NOSPACE, SeqCst);
    let (_, e2) = w.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap();
    let err = stream.wait_durable(e2).unwrap_err();
    assert!(matches!(err, WalError::NoSpace { .. }), "{err:?}");
    // While stalled, new appends fail fast without reserving.
    let tail = stream.tail();
    assert!(matches!(
        w.append_with(64, |l, _, _, o| encode_test(l, o)),
        Err(WalError::NoSpace { .. })
    ));
    assert_eq!(stream.tail(), tail);
    assert_eq!(stream.durable(), e1);
    // The flusher keeps retrying.
    let calls = fake.flush_calls.load(SeqCst);
    poll_until("the flusher retries the failed flush twice", || {
        (fake.flush_calls.load(SeqCst) >= calls + 2).then_some(())
    });
    // Space comes back: the stalled bytes become durable and appends work again.
    fake.mode.store(OK, SeqCst);
    // Until the next retry lands, a wait for e2 still reports the stall.
    poll_until("a retry makes the stalled bytes durable", || {
        match stream.wait_durable(e2) {
            Ok(()) => Some(()),
            Err(WalError::NoSpace { .. }) => None,
            Err(e) => panic!("{e}"),
        }
    });
    // The stall is lifted by the flush that made e2 durable; a fast append can still see it
    // set for a moment only if that flush has not published yet.
    let (_, e3) = poll_until("appends work again after the stall", || {
        match w.append_with(64, |l, _, _, o| encode_test(l, o)) {
            Ok(r) => Some(r),
            Err(WalError::NoSpace { .. }) => None,
            Err(e) => panic!("{e}"),
        }
    });
    stream.wait_durable(e3).unwrap();
    assert_eq!(fake.flushed.load(SeqCst), e3);
    stream.close().unwrap();
}

#[test]
fn close_with_nospace_reports_it() {
    let fake = Fake::new(1 << 16, false, 0);
    let stream = Stream::start(fake.clone(), 0, cfg(2)).unwrap();
    let mut w = stream.writer().unwrap();
    fake.mode.store(NOSPACE, SeqCst);
    let (_, e) = w.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap();
    assert!(matches!(stream.close(), Err(WalError::NoSpace { .. })));
    assert!(stream.wait_durable(e).is_err());
    assert!(matches!(
        w.append_with(64, |l, _, _, o| encode_test(l, o)),
        Err(WalError::Closed(7))
    ));
}

#[test]
fn log_full_when_ring_cannot_drain() {
    let mut f = Fake::new(256, true, 0);
    Arc::get_mut(&mut f).unwrap().no_recycle = true;
    let stream = Stream::start(f.clone(), 0, cfg(2)).unwrap();
    let mut w = stream.writer().unwrap();
    for _ in 0..4 {
        w.append_with(64, |l, _, _, o| encode_test(l, o)).unwrap();
    }
    let err = w
        .append_with(64, |l, _, _, o| encode_test(l, o))
        .unwrap_err();
    assert!(matches!(err, WalError::LogFull { .. }), "{err:?}");
    assert_eq!(stream.tail(), 256);
    stream.wait_durable(256).unwrap();
    assert!(!f.ring_violation.load(SeqCst));
}
