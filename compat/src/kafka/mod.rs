//! The Kafka wire protocol, sans I/O.
//!
//! | module | contents |
//! | --- | --- |
//! | [`compression`] | the batch codecs (gzip, snappy, lz4, zstd) as Kafka clients frame them |

pub mod compression;
