//! The Kafka wire protocol, sans I/O.
//!
//! | module | contents |
//! | --- | --- |
//! | [`records`] | record batches (magic v2): decoding a Produce request's records, building a batch for a Fetch answer |
//! | [`compression`] | the batch codecs (gzip, snappy, lz4, zstd) as Kafka clients frame them |
//! | [`validate`] | walking a request body by its layout (generated from Kafka's message schemas) so impossible counts are refused before decoding |
//! | [`request`] | request frames: header, the served APIs and versions, bodies decoded into the `kafka-protocol` crate's types |

pub mod compression;
mod layouts;
pub mod records;
pub mod request;
pub mod validate;

pub use kafka_protocol as protocol;
