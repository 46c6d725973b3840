//! A device that keeps nothing: the no-logging baseline.
