//! Subscription filters: tag expressions (§19.4.4) and SQL92 over message properties (§19.4.5).

pub mod sql92;
pub mod tag;
