//! The model runner shared by the loom test modules. Under `--cfg loom` it is loom's model
//! checker with preemptions bounded to 3 unless `LOOM_MAX_PREEMPTIONS` sets a bound:
//! exhaustive exploration of three threads is too slow, and bounding preemptions (the usual
//! loom practice) keeps a check to seconds while still covering every interleaving with few
//! context switches, which is where ordering bugs of protocols this small show up. Without
//! `--cfg loom` the scenario runs `rounds` times on real threads, as a stress test.

/// Check `f` under loom, or run it `rounds` times (see the module documentation).
pub fn model(rounds: usize, f: impl Fn() + Sync + Send + 'static) {
    #[cfg(loom)]
    {
        let _ = rounds;
        let mut b = loom::model::Builder::new();
        if b.preemption_bound.is_none() {
            b.preemption_bound = Some(3);
        }
        b.check(f);
    }
    #[cfg(not(loom))]
    for _ in 0..rounds {
        f();
    }
}
