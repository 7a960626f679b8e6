//! Header encodings: [`json`] (serializeType 0) and [`rocketmq`] (serializeType 1).

pub mod json;
pub mod rocketmq;
