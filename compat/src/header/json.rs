//! The JSON header encoding (§2.1).
