//! Kafka record batches, magic v2 (Kafka ≥ 0.11): what a Produce request's `records` field
//! holds (one or more batches back to back) and what a Fetch answer carries.
//!
//! ```text
//! offset  field                 type
//!      0  baseOffset            i64
//!      8  batchLength           i32   bytes after this field (total = batchLength + 12)
//!     12  partitionLeaderEpoch  i32
//!     16  magic                 i8    = 2
//!     17  crc                   u32   CRC-32C (Castagnoli) of bytes 21..end
//!     21  attributes            i16   bits 0-2 compression (0 none, 1 gzip, 2 snappy,
//!                                     3 lz4, 4 zstd), 3 timestamp type (1 = log append
//!                                     time), 4 transactional, 5 control, 6 delete horizon
//!     23  lastOffsetDelta       i32
//!     27  baseTimestamp         i64
//!     35  maxTimestamp          i64
//!     43  producerId            i64
//!     51  producerEpoch         i16
//!     53  baseSequence          i32
//!     57  recordsCount          i32
//!     61  records               the rest; compressed as a whole unless bits 0-2 are 0
//!
//! record := length:varint attributes:i8 timestampDelta:varlong offsetDelta:varint
//!           keyLength:varint key valueLength:varint value
//!           headersCount:varint (headerKeyLength:varint headerKey
//!                                headerValueLength:varint headerValue)*
//! ```
//! Integers in the header are big-endian; varints are zigzag (see `varint`). `length` counts
//! the record's bytes after itself. A key, value or header value of length -1 is null; a
//! header key is never null. The fields before `crc` are outside the checksum, so a broker
//! can rewrite `baseOffset` and `partitionLeaderEpoch` without recomputing it.
//!
//! [`decode_batches`] checks each batch in this order: enough bytes for the header, magic
//! (the CRC's place depends on it, so an older format is refused as [`RecordError::BadMagic`]
//! rather than as a CRC mismatch), `batchLength`, CRC-32C, codec, record count against what
//! the bytes could hold, then decompresses (capped) and reads exactly `recordsCount` records,
//! each filling its `length` exactly and the records filling the batch exactly. Nothing is
//! allocated from a length field before the bytes behind it are known to exist.
//! [`batch_infos`] reads only the 61-byte headers. [`BatchBuilder`] writes one batch.

mod builder;
mod varint;

pub use builder::{BatchBuilder, BuildError};

use bytes::Bytes;

use super::compression::{Compression, CompressionError};
use crate::wire::{Reader, Truncated};
use varint::{read_varint, read_varlong};

/// The record batch format this module reads and writes.
pub const MAGIC: i8 = 2;
/// Bytes of a batch header, up to and including `recordsCount`.
pub const HEADER_LEN: usize = 61;
/// Bytes before the part `batchLength` counts: `baseOffset` and `batchLength`.
pub const LOG_OVERHEAD: usize = 12;
/// Where the bytes the CRC covers start (the `attributes` field).
const CRC_START: usize = 21;
/// The smallest record: a one-byte length and six one-byte fields (attributes, timestamp
/// delta, offset delta, key length, value length, header count).
const MIN_RECORD_LEN: usize = 7;
/// The smallest header: one-byte key and value lengths.
const MIN_HEADER_LEN: usize = 2;

/// Batch attribute bits.
pub mod attributes {
    /// Bits 0-2: the compression codec id.
    pub const COMPRESSION_MASK: i16 = 0x07;
    /// Bit 3: timestamps are the broker's log append time, not the producer's create time.
    pub const TIMESTAMP_TYPE_LOG_APPEND: i16 = 0x08;
    /// Bit 4: the batch is part of a transaction.
    pub const TRANSACTIONAL: i16 = 0x10;
    /// Bit 5: the batch holds control records (transaction markers).
    pub const CONTROL: i16 = 0x20;
    /// Bit 6: `baseTimestamp` is the delete horizon set by log compaction.
    pub const DELETE_HORIZON: i16 = 0x40;
}

/// A record header: a key (UTF-8 by contract, kept as raw bytes) and a nullable value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// The key bytes, kept as sent even when not UTF-8.
    pub key: Bytes,
    /// The value; `None` for a null value (length -1).
    pub value: Option<Bytes>,
}

/// One record of a batch, with its offset and timestamp relative to the batch's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Record {
    /// The record attributes (unused by Kafka so far; kept as sent).
    pub attributes: i8,
    /// Timestamp minus the batch's `baseTimestamp`.
    pub timestamp_delta: i64,
    /// Offset minus the batch's `baseOffset`.
    pub offset_delta: i32,
    /// The key; `None` for a null key.
    pub key: Option<Bytes>,
    /// The value; `None` for a null value (a tombstone).
    pub value: Option<Bytes>,
    /// The headers, in order, duplicates kept.
    pub headers: Vec<Header>,
}

/// A decoded record batch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Batch {
    /// The first offset of the batch.
    pub base_offset: i64,
    /// The leader epoch the batch was appended under (-1 from producers).
    pub partition_leader_epoch: i32,
    /// The attribute bits, see [`attributes`].
    pub attributes: i16,
    /// The last offset minus `base_offset`.
    pub last_offset_delta: i32,
    /// The timestamp the records' deltas count from (or the delete horizon, bit 6).
    pub base_timestamp: i64,
    /// The largest record timestamp (or the log append time, bit 3).
    pub max_timestamp: i64,
    /// The idempotent producer's id, -1 if none.
    pub producer_id: i64,
    /// The producer's epoch, -1 if none.
    pub producer_epoch: i16,
    /// The sequence number of the first record, -1 if none.
    pub base_sequence: i32,
    /// The records, in order.
    pub records: Vec<Record>,
}

impl Batch {
    /// The codec of the records. A decoded batch always names a known codec; for a
    /// hand-built one whose bits 0-2 name none this is [`Compression::None`].
    pub fn compression(&self) -> Compression {
        Compression::from_attributes(self.attributes).unwrap_or(Compression::None)
    }

    /// Bit 4: part of a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes & attributes::TRANSACTIONAL != 0
    }

    /// Bit 5: holds control records.
    pub fn is_control(&self) -> bool {
        self.attributes & attributes::CONTROL != 0
    }

    /// Bit 3: the timestamps are the log append time ([`Batch::max_timestamp`]).
    pub fn timestamp_type_log_append(&self) -> bool {
        self.attributes & attributes::TIMESTAMP_TYPE_LOG_APPEND != 0
    }

    /// Bit 6: `base_timestamp` is a delete horizon.
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes & attributes::DELETE_HORIZON != 0
    }

    /// The batch's last offset, `base_offset + last_offset_delta` (saturating).
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(i64::from(self.last_offset_delta))
    }

    /// A record's absolute offset (saturating).
    pub fn record_offset(&self, record: &Record) -> i64 {
        self.base_offset
            .saturating_add(i64::from(record.offset_delta))
    }

    /// A record's absolute timestamp: the log append time (`max_timestamp`) if bit 3 is
    /// set, else `base_timestamp + timestamp_delta` (saturating).
    pub fn record_timestamp(&self, record: &Record) -> i64 {
        if self.timestamp_type_log_append() {
            self.max_timestamp
        } else {
            self.base_timestamp.saturating_add(record.timestamp_delta)
        }
    }

    /// Encodes this batch again, every field as it is (`base_offset`, `last_offset_delta`,
    /// `max_timestamp`, the record attributes and deltas), with the records compressed by
    /// `compression` (the attributes' bits 0-2 are set to it). The count and CRC are computed.
    pub fn encode(&self, compression: Compression) -> Result<Bytes, BuildError> {
        builder::encode_batch(self, compression)
    }
}

/// The fixed header of a batch, read without touching its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BatchInfo {
    /// Where the batch starts in the bytes given.
    pub position: usize,
    /// The batch's size in bytes (`batchLength + 12`).
    pub size: usize,
    /// The first offset.
    pub base_offset: i64,
    /// The leader epoch.
    pub partition_leader_epoch: i32,
    /// The CRC-32C as stored (not checked here).
    pub crc: u32,
    /// The attribute bits, see [`attributes`].
    pub attributes: i16,
    /// The last offset minus `base_offset`.
    pub last_offset_delta: i32,
    /// The timestamp the records' deltas count from.
    pub base_timestamp: i64,
    /// The largest timestamp.
    pub max_timestamp: i64,
    /// The producer id, -1 if none.
    pub producer_id: i64,
    /// The producer epoch, -1 if none.
    pub producer_epoch: i16,
    /// The first record's sequence number, -1 if none.
    pub base_sequence: i32,
    /// The record count as declared (not checked here beyond being read).
    pub record_count: i32,
}

impl BatchInfo {
    /// The codec named by bits 0-2.
    pub fn compression(&self) -> Result<Compression, CompressionError> {
        Compression::from_attributes(self.attributes)
    }

    /// Bit 4: part of a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes & attributes::TRANSACTIONAL != 0
    }

    /// Bit 5: holds control records.
    pub fn is_control(&self) -> bool {
        self.attributes & attributes::CONTROL != 0
    }

    /// `base_offset + last_offset_delta` (saturating).
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(i64::from(self.last_offset_delta))
    }
}

/// Decoding record batches failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The input ended inside a field or a batch.
    #[error("truncated {what}: need {need} bytes, have {have}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A batch of another format (magic 0 and 1 are the legacy message sets).
    #[error("batch at byte {position}: magic {magic}, only {MAGIC} is supported")]
    BadMagic {
        /// Where the batch starts.
        position: usize,
        /// The magic byte found.
        magic: i8,
    },
    /// `batchLength` is smaller than the header that follows it.
    #[error("batch at byte {position}: batchLength {batch_length} is below the header's {}", HEADER_LEN - LOG_OVERHEAD)]
    BatchLength {
        /// Where the batch starts.
        position: usize,
        /// The length found.
        batch_length: i32,
    },
    /// The stored CRC-32C does not match the bytes.
    #[error("batch at byte {position}: crc {stored:#010x} stored, {computed:#010x} computed")]
    CrcMismatch {
        /// Where the batch starts.
        position: usize,
        /// The CRC in the header.
        stored: u32,
        /// The CRC of the bytes.
        computed: u32,
    },
    /// A varint ran on past its longest form.
    #[error("bad varint for {what}: more than {max_bytes} bytes")]
    BadVarint {
        /// What was being read.
        what: &'static str,
        /// The longest valid form.
        max_bytes: u32,
    },
    /// A count is negative or larger than the bytes left could hold.
    #[error("{what} count {count} out of range (the bytes hold at most {max})")]
    Count {
        /// What was counted.
        what: &'static str,
        /// The count found.
        count: i64,
        /// The most the bytes could hold.
        max: usize,
    },
    /// A length is negative (other than -1 where null is allowed) or runs past its bounds.
    #[error("{what} length {len} out of range ({have} bytes left)")]
    Length {
        /// What the length is of.
        what: &'static str,
        /// The length found.
        len: i64,
        /// The bytes left where it applies.
        have: usize,
    },
    /// Bytes were left over where a length said the data would end.
    #[error("{left} bytes left over after the {what}")]
    TrailingBytes {
        /// What should have filled them.
        what: &'static str,
        /// How many were left.
        left: usize,
    },
    /// Unknown codec, output over the limit, or corrupt compressed data.
    #[error(transparent)]
    Compression(#[from] CompressionError),
}

impl From<Truncated> for RecordError {
    fn from(t: Truncated) -> Self {
        RecordError::Truncated {
            what: t.what,
            need: t.need,
            have: t.have,
        }
    }
}

/// Decodes every batch in a Produce request's `records` bytes (one or more batches back to
/// back). Per batch: magic must be 2, the CRC-32C must match, the records are decompressed
/// into at most `max_uncompressed` bytes (more fails; a decompression bomb does not allocate
/// its size), exactly `recordsCount` records must fill the records bytes exactly.
pub fn decode_batches(bytes: &[u8], max_uncompressed: usize) -> Result<Vec<Batch>, RecordError> {
    let mut out = Vec::new();
    let mut position = 0;
    while let Some(rest) = bytes.get(position..).filter(|r| !r.is_empty()) {
        let info = read_info(rest, position)?;
        let batch = rest.get(..info.size).ok_or(RecordError::Truncated {
            what: "record batch",
            need: info.size,
            have: rest.len(),
        })?;
        out.push(decode_one(&info, batch, max_uncompressed)?);
        position += info.size;
    }
    Ok(out)
}

/// Reads the fixed 61-byte header of each batch, without checking CRCs or decompressing:
/// base offset, record count, producer id/epoch, base sequence, attributes, timestamps.
/// Magic and `batchLength` are checked (they frame the batches) and every batch must be
/// complete.
pub fn batch_infos(bytes: &[u8]) -> Result<Vec<BatchInfo>, RecordError> {
    let mut out = Vec::new();
    let mut position = 0;
    while let Some(rest) = bytes.get(position..).filter(|r| !r.is_empty()) {
        let info = read_info(rest, position)?;
        if rest.len() < info.size {
            return Err(RecordError::Truncated {
                what: "record batch",
                need: info.size,
                have: rest.len(),
            });
        }
        position += info.size;
        out.push(info);
    }
    Ok(out)
}

/// Reads the header of the batch `bytes` starts with.
fn read_info(bytes: &[u8], position: usize) -> Result<BatchInfo, RecordError> {
    let mut r = Reader::new(bytes);
    let base_offset = r.i64("baseOffset")?;
    let batch_length = r.i32("batchLength")?;
    let partition_leader_epoch = r.i32("partitionLeaderEpoch")?;
    let magic = r.u8("magic")? as i8;
    if magic != MAGIC {
        return Err(RecordError::BadMagic { position, magic });
    }
    let size = usize::try_from(batch_length)
        .ok()
        .filter(|&len| len >= HEADER_LEN - LOG_OVERHEAD)
        .ok_or(RecordError::BatchLength {
            position,
            batch_length,
        })?
        + LOG_OVERHEAD;
    Ok(BatchInfo {
        position,
        size,
        base_offset,
        partition_leader_epoch,
        crc: u32::from_be_bytes(r.array4("crc")?),
        attributes: r.i16("attributes")?,
        last_offset_delta: r.i32("lastOffsetDelta")?,
        base_timestamp: r.i64("baseTimestamp")?,
        max_timestamp: r.i64("maxTimestamp")?,
        producer_id: r.i64("producerId")?,
        producer_epoch: r.i16("producerEpoch")?,
        base_sequence: r.i32("baseSequence")?,
        record_count: r.i32("recordsCount")?,
    })
}

/// Decodes one whole batch (`batch` is exactly `info.size` bytes).
fn decode_one(
    info: &BatchInfo,
    batch: &[u8],
    max_uncompressed: usize,
) -> Result<Batch, RecordError> {
    let covered = batch.get(CRC_START..).unwrap_or(&[]);
    let computed = crc32c::crc32c(covered);
    if computed != info.crc {
        return Err(RecordError::CrcMismatch {
            position: info.position,
            stored: info.crc,
            computed,
        });
    }
    let compression = info.compression()?;
    let payload = batch.get(HEADER_LEN..).unwrap_or(&[]);
    let count_error = |max: usize| RecordError::Count {
        what: "record",
        count: i64::from(info.record_count),
        max,
    };
    let count = usize::try_from(info.record_count).map_err(|_| count_error(0))?;
    let data = match compression {
        Compression::None => {
            let max = payload.len() / MIN_RECORD_LEN;
            if count > max {
                return Err(count_error(max));
            }
            Bytes::copy_from_slice(payload)
        }
        codec => {
            let max = max_uncompressed / MIN_RECORD_LEN;
            if count > max {
                return Err(count_error(max));
            }
            let data = Bytes::from(codec.decompress(payload, max_uncompressed)?);
            let max = data.len() / MIN_RECORD_LEN;
            if count > max {
                return Err(count_error(max));
            }
            data
        }
    };
    let records = read_records(&data, count)?;
    Ok(Batch {
        base_offset: info.base_offset,
        partition_leader_epoch: info.partition_leader_epoch,
        attributes: info.attributes,
        last_offset_delta: info.last_offset_delta,
        base_timestamp: info.base_timestamp,
        max_timestamp: info.max_timestamp,
        producer_id: info.producer_id,
        producer_epoch: info.producer_epoch,
        base_sequence: info.base_sequence,
        records,
    })
}

/// Reads exactly `count` records that fill `data` exactly. The caller has checked that
/// `count` records fit in `data`'s length.
fn read_records(data: &Bytes, count: usize) -> Result<Vec<Record>, RecordError> {
    let mut records = Vec::with_capacity(count);
    let mut r = Reader::new(data);
    for _ in 0..count {
        let len = read_varint(&mut r, "record length")?;
        let have = r.remaining();
        let len = usize::try_from(len)
            .ok()
            .filter(|&n| n <= have)
            .ok_or(RecordError::Length {
                what: "record",
                len: i64::from(len),
                have,
            })?;
        let start = r.position();
        r.take(len, "record")?;
        records.push(read_record(&data.slice(start..start + len))?);
    }
    match r.remaining() {
        0 => Ok(records),
        left => Err(RecordError::TrailingBytes {
            what: "records",
            left,
        }),
    }
}

/// Reads one record's fields (after its length), which must fill `rec` exactly.
fn read_record(rec: &Bytes) -> Result<Record, RecordError> {
    let mut r = Reader::new(rec);
    let attributes = r.u8("record attributes")? as i8;
    let timestamp_delta = read_varlong(&mut r, "timestampDelta")?;
    let offset_delta = read_varint(&mut r, "offsetDelta")?;
    let key = read_bytes(rec, &mut r, "key", true)?;
    let value = read_bytes(rec, &mut r, "value", true)?;
    let count = read_varint(&mut r, "headers count")?;
    let max = r.remaining() / MIN_HEADER_LEN;
    let count = usize::try_from(count)
        .ok()
        .filter(|&n| n <= max)
        .ok_or(RecordError::Count {
            what: "header",
            count: i64::from(count),
            max,
        })?;
    let mut headers = Vec::with_capacity(count);
    for _ in 0..count {
        let key = read_bytes(rec, &mut r, "header key", false)?.unwrap_or_default();
        let value = read_bytes(rec, &mut r, "header value", true)?;
        headers.push(Header { key, value });
    }
    match r.remaining() {
        0 => Ok(Record {
            attributes,
            timestamp_delta,
            offset_delta,
            key,
            value,
            headers,
        }),
        left => Err(RecordError::TrailingBytes {
            what: "record",
            left,
        }),
    }
}

/// Reads a varint length and that many bytes, as a slice of `buf` (which `r` reads).
/// Length -1 is `None` when `nullable`.
fn read_bytes(
    buf: &Bytes,
    r: &mut Reader<'_>,
    what: &'static str,
    nullable: bool,
) -> Result<Option<Bytes>, RecordError> {
    let len = read_varint(r, what)?;
    if len == -1 && nullable {
        return Ok(None);
    }
    let have = r.remaining();
    let n = usize::try_from(len)
        .ok()
        .filter(|&n| n <= have)
        .ok_or(RecordError::Length {
            what,
            len: i64::from(len),
            have,
        })?;
    let start = r.position();
    r.take(n, what)?;
    Ok(Some(buf.slice(start..start + n)))
}

#[cfg(test)]
mod tests;
