//! Membership: who is up. Heartbeats feed a phi-accrual failure detector.

mod failure_detector;

pub use failure_detector::{FailureDetector, FailureDetectorConfig};
