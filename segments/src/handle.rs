//! Commit-log handles: the 64-bit `PHYSICALOFFSET` of a record, `shard << 48 | local`, where
//! `local` is the byte position of the record in its shard's logical commit log. Offset
//! message ids carry this handle, so any node can resolve one to its shard and segment.

use stratus_compat::types::CommitLogOffset;
use stratus_meta::ShardId;

/// Bits of the per-shard local offset (256 TiB per shard).
pub const LOCAL_BITS: u32 = 48;

/// Builds the handle of byte `local` of `shard`'s commit log.
pub fn encode(shard: ShardId, local: u64) -> CommitLogOffset {
    CommitLogOffset(((u64::from(shard.0) << LOCAL_BITS) | (local & ((1 << LOCAL_BITS) - 1))) as i64)
}

/// Splits a handle into shard and local offset; `None` for a negative handle.
pub fn decode(handle: CommitLogOffset) -> Option<(ShardId, u64)> {
    let raw = u64::try_from(handle.0).ok()?;
    let shard = u32::try_from(raw >> LOCAL_BITS).ok()?;
    Some((ShardId(shard), raw & ((1 << LOCAL_BITS) - 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip() {
        let h = encode(ShardId(3), 123_456);
        assert_eq!(decode(h), Some((ShardId(3), 123_456)));
        assert_eq!(decode(CommitLogOffset(-1)), None);
    }
}
