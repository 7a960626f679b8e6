//! Storage: CommitLog segments in object storage, ConsumeQueue indexes, caches.
//!
//! Life of a segment: [`writer::Writer::append`] assigns queue offsets and commit-log
//! handles and encodes records into the node's open buffer (one buffer for every shard the
//! node owns); on size or linger the buffer is sealed ([`format`](mod@format)), uploaded
//! once with `PutMode::Create` ([`store::SegmentStore`]), each shard's section is committed in meta
//! under that shard's epoch, and only then are the appends acknowledged and made visible to
//! readers ([`heads::QueueHeads`]). Reads ([`reader::Reader`]) come from the tail cache
//! (recent segments kept whole in memory), the block cache, or ranged GETs.
//!
//! Modules: [`format`](mod@format) (object layout, builder, footers; see `docs/segment-format.md`),
//! [`writer`] (offsets, group commit, upload, ordered meta commits), [`reader`] (pulls, lookups by
//! handle and time), [`store`] (object store calls with retries; fault-injecting wrapper),
//! [`cache`] (tail, footer and block caches, recent index), [`heads`] (visible offsets and
//! long-poll watches), [`paths`] (object keys), [`handle`] (commit-log handles), [`clock`],
//! [`metrics`].
//!
//! Invariants: objects are never overwritten; commits for one shard advance in order; a
//! reader never sees an entry before its commit; bytes returned are checksum-verified.
#![warn(missing_docs)]

pub mod cache;
pub mod clock;
pub mod error;
pub mod format;
pub mod handle;
pub mod heads;
pub mod keys;
pub mod metrics;
pub mod paths;
pub mod reader;
pub mod store;
pub mod writer;

#[cfg(test)]
mod testkit;

pub use error::SegmentError;
