//! Subscription filters: tag expressions (`docs/remoting-protocol.md#tag-filters`) and SQL92 over
//! message properties (`docs/remoting-protocol.md#sql92-filters`).

pub mod sql92;
pub mod tag;
