//! Subscription filters: tag expressions (§19.4.4); SQL92 comes later.

pub mod tag;
