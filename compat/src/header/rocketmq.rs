//! The ROCKETMQ binary header encoding (§2.2).
