//! Power cuts of simulated regions ([`crate::CrashSim`]): one region or several at one instant,
//! and the hooks that place a crash point by persist-event count.

#[cfg(any(test, feature = "testing"))]
use std::sync::Arc;

use super::Region;
#[cfg(any(test, feature = "testing"))]
use crate::PersistTrip;
use crate::crash::Sim;
use crate::{CrashMode, PmemError};

impl Region {
    /// Simulate a power failure: a new simulated region (same size and configuration, fresh
    /// counters, not frozen) whose live and durable images are the post-crash image. This
    /// region is left as it was.
    pub fn crash(&self, mode: CrashMode) -> Result<Region, PmemError> {
        let sim = self.inner.sim.as_ref().ok_or(PmemError::NotSimulated)?;
        let image = sim.crash_image(mode);
        Ok(Region::from_sim(
            self.inner.len,
            self.inner.cfg,
            Some(image),
        ))
    }

    /// Cut power to several simulated regions at one instant (see `crash`): no fence in any of
    /// them completes while their images are taken, so a state where one region lost a record
    /// another region's later record depends on cannot arise.
    pub fn crash_together(regions: &[(&Region, CrashMode)]) -> Result<Vec<Region>, PmemError> {
        let mut sims: Vec<(&Sim, CrashMode)> = Vec::with_capacity(regions.len());
        for (r, mode) in regions {
            sims.push((r.inner.sim.as_ref().ok_or(PmemError::NotSimulated)?, *mode));
        }
        let images = Sim::crash_images(&sims);
        Ok(regions
            .iter()
            .zip(images)
            .map(|((r, _), image)| Region::from_sim(r.inner.len, r.inner.cfg, Some(image)))
            .collect())
    }

    /// Test hook for visiting every crash point: freeze the durable image of a simulated region
    /// after `events` further persist events (each flushed line, each streamed line at its
    /// fence, each fence, and under eADR each store). Calling it again replaces the limit.
    #[cfg(any(test, feature = "testing"))]
    pub fn freeze_after(&self, events: u64) -> Result<(), PmemError> {
        let sim = self.inner.sim.as_ref().ok_or(PmemError::NotSimulated)?;
        sim.freeze_after(events);
        Ok(())
    }

    /// Test hook: persist events so far on a simulated region (0 on other regions); see
    /// [`Region::freeze_after`].
    #[cfg(any(test, feature = "testing"))]
    pub fn persist_events(&self) -> u64 {
        self.inner.sim.as_ref().map_or(0, Sim::events)
    }

    /// Test hook: count every fence of this simulated region on `trip`, which holds the fence
    /// that trips (and later ones) before it takes effect (see [`PersistTrip`]). Replaces an
    /// earlier trip. Under eADR stores are durable as they are made; only fences are events.
    #[cfg(any(test, feature = "testing"))]
    pub fn set_trip(&self, trip: Arc<PersistTrip>) -> Result<(), PmemError> {
        let sim = self.inner.sim.as_ref().ok_or(PmemError::NotSimulated)?;
        sim.set_trip(trip);
        Ok(())
    }
}
