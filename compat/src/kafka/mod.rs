//! The Kafka wire protocol, sans I/O.
//!
//! | module | contents |
//! | --- | --- |
//! | [`records`] | record batches (magic v2): decoding a Produce request's records, building a batch for a Fetch answer |
//! | [`compression`] | the batch codecs (gzip, snappy, lz4, zstd) as Kafka clients frame them |

pub mod compression;
pub mod records;
