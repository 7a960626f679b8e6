//! Writing one record batch: [`BatchBuilder`] for new records, [`Batch::encode`] for a
//! decoded batch.

use bytes::Bytes;

use super::varint::{put_varint, put_varlong};
use super::{Batch, CRC_START, HEADER_LEN, Header, LOG_OVERHEAD, MAGIC, attributes};
use crate::kafka::compression::{Compression, CompressionError};

/// Building a batch failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// An offset not above the previous record's (or below the base offset).
    #[error("offset {offset} does not follow {previous}")]
    OffsetOrder {
        /// The offset pushed.
        offset: i64,
        /// The lowest offset it had to pass (the previous one, or base offset - 1).
        previous: i64,
    },
    /// An offset or timestamp too far from the batch's base for its delta field.
    #[error("{what} {value} is too far from the base {base}")]
    Delta {
        /// "offset" or "timestamp".
        what: &'static str,
        /// The value pushed.
        value: i64,
        /// The batch's base.
        base: i64,
    },
    /// A key, value, record, record count or batch too long for its i32 length field.
    #[error("{what} of {len} is too large for the format")]
    TooLarge {
        /// What was too long.
        what: &'static str,
        /// Its length.
        len: usize,
    },
    /// Compressing the records failed.
    #[error(transparent)]
    Compression(#[from] CompressionError),
}

/// Builds one record batch (magic 2), as a broker answers a Fetch: records are pushed with
/// their absolute offsets (increasing) and timestamps, [`BatchBuilder::finish`] computes
/// `lastOffsetDelta`, `maxTimestamp`, the count and the CRC-32C.
///
/// Producer fields default to "none" (-1), the partition leader epoch to -1, the timestamp
/// type to create time.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    base_offset: i64,
    base_timestamp: i64,
    compression: Compression,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    flags: i16,
    log_append_time: Option<i64>,
    records: Vec<u8>,
    count: i32,
    last_offset: Option<i64>,
    max_timestamp: Option<i64>,
}

impl BatchBuilder {
    /// A builder for a batch starting at `base_offset`, record timestamps counted from
    /// `base_timestamp`, records compressed with `compression`.
    pub fn new(base_offset: i64, base_timestamp: i64, compression: Compression) -> Self {
        Self {
            base_offset,
            base_timestamp,
            compression,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            flags: 0,
            log_append_time: None,
            records: Vec::new(),
            count: 0,
            last_offset: None,
            max_timestamp: None,
        }
    }

    /// Sets the idempotent producer's id, epoch and first sequence number.
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Sets the partition leader epoch.
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Marks the batch transactional (attributes bit 4).
    pub fn transactional(mut self, on: bool) -> Self {
        self.set_flag(attributes::TRANSACTIONAL, on);
        self
    }

    /// Marks the batch as holding control records (attributes bit 5).
    pub fn control(mut self, on: bool) -> Self {
        self.set_flag(attributes::CONTROL, on);
        self
    }

    /// Uses log append time `time` (attributes bit 3): written as `maxTimestamp`, which
    /// readers take as every record's timestamp.
    pub fn log_append_time(mut self, time: i64) -> Self {
        self.set_flag(attributes::TIMESTAMP_TYPE_LOG_APPEND, true);
        self.log_append_time = Some(time);
        self
    }

    fn set_flag(&mut self, bit: i16, on: bool) {
        if on {
            self.flags |= bit;
        } else {
            self.flags &= !bit;
        }
    }

    /// Records pushed so far.
    pub fn len(&self) -> usize {
        usize::try_from(self.count).unwrap_or(0)
    }

    /// Whether no record was pushed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Appends a record. `offset` must be at least the base offset and above the previous
    /// record's; offset and timestamp must lie within an i32 / i64 delta of the base. On
    /// error the builder is unchanged.
    pub fn push(
        &mut self,
        offset: i64,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
    ) -> Result<(), BuildError> {
        let in_order = match self.last_offset {
            Some(last) => offset > last,
            None => offset >= self.base_offset,
        };
        if !in_order {
            let previous = self
                .last_offset
                .unwrap_or_else(|| self.base_offset.saturating_sub(1));
            return Err(BuildError::OffsetOrder { offset, previous });
        }
        let offset_delta = offset
            .checked_sub(self.base_offset)
            .and_then(|d| i32::try_from(d).ok())
            .ok_or(BuildError::Delta {
                what: "offset",
                value: offset,
                base: self.base_offset,
            })?;
        let timestamp_delta =
            timestamp
                .checked_sub(self.base_timestamp)
                .ok_or(BuildError::Delta {
                    what: "timestamp",
                    value: timestamp,
                    base: self.base_timestamp,
                })?;
        let count = self.count.checked_add(1).ok_or(BuildError::TooLarge {
            what: "record count",
            len: self.len(),
        })?;
        let record = Record {
            attributes: 0,
            timestamp_delta,
            offset_delta,
            key,
            value,
            headers,
        };
        write_record(&mut self.records, &record)?;
        self.count = count;
        self.last_offset = Some(offset);
        self.max_timestamp = Some(self.max_timestamp.map_or(timestamp, |m| m.max(timestamp)));
        Ok(())
    }

    /// The finished batch. An empty batch has `lastOffsetDelta` 0 and `maxTimestamp` -1.
    pub fn finish(self) -> Result<Bytes, BuildError> {
        let last_offset_delta = match self.last_offset {
            // push kept every delta within i32.
            Some(last) => i32::try_from(last.saturating_sub(self.base_offset)).unwrap_or(0),
            None => 0,
        };
        let max_timestamp = self.log_append_time.or(self.max_timestamp).unwrap_or(-1);
        let fields = Fields {
            base_offset: self.base_offset,
            partition_leader_epoch: self.partition_leader_epoch,
            attributes: self.flags,
            last_offset_delta,
            base_timestamp: self.base_timestamp,
            max_timestamp,
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            base_sequence: self.base_sequence,
            count: self.count,
        };
        write_batch(&fields, self.compression, &self.records)
    }
}

/// The header fields a batch is written with (besides magic, length and CRC).
struct Fields {
    base_offset: i64,
    partition_leader_epoch: i32,
    attributes: i16,
    last_offset_delta: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    count: i32,
}

/// A record to write, borrowing its parts.
struct Record<'a> {
    attributes: i8,
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
    headers: &'a [Header],
}

/// [`Batch::encode`].
pub(super) fn encode_batch(batch: &Batch, compression: Compression) -> Result<Bytes, BuildError> {
    let mut records = Vec::new();
    for r in &batch.records {
        write_record(
            &mut records,
            &Record {
                attributes: r.attributes,
                timestamp_delta: r.timestamp_delta,
                offset_delta: r.offset_delta,
                key: r.key.as_deref(),
                value: r.value.as_deref(),
                headers: &r.headers,
            },
        )?;
    }
    let count = i32::try_from(batch.records.len()).map_err(|_| BuildError::TooLarge {
        what: "record count",
        len: batch.records.len(),
    })?;
    let fields = Fields {
        base_offset: batch.base_offset,
        partition_leader_epoch: batch.partition_leader_epoch,
        attributes: batch.attributes & !attributes::COMPRESSION_MASK,
        last_offset_delta: batch.last_offset_delta,
        base_timestamp: batch.base_timestamp,
        max_timestamp: batch.max_timestamp,
        producer_id: batch.producer_id,
        producer_epoch: batch.producer_epoch,
        base_sequence: batch.base_sequence,
        count,
    };
    write_batch(&fields, compression, &records)
}

fn write_batch(f: &Fields, compression: Compression, records: &[u8]) -> Result<Bytes, BuildError> {
    let compressed;
    let payload = match compression {
        Compression::None => records,
        codec => {
            compressed = codec.compress(records)?;
            &compressed[..]
        }
    };
    let size = HEADER_LEN
        .checked_add(payload.len())
        .ok_or(BuildError::TooLarge {
            what: "batch",
            len: payload.len(),
        })?;
    let batch_length = i32::try_from(size - LOG_OVERHEAD).map_err(|_| BuildError::TooLarge {
        what: "batch",
        len: size,
    })?;
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&f.base_offset.to_be_bytes());
    out.extend_from_slice(&batch_length.to_be_bytes());
    out.extend_from_slice(&f.partition_leader_epoch.to_be_bytes());
    out.extend_from_slice(&MAGIC.to_be_bytes());
    out.extend_from_slice(&[0; 4]);
    let attrs = f.attributes | i16::from(compression.id());
    out.extend_from_slice(&attrs.to_be_bytes());
    out.extend_from_slice(&f.last_offset_delta.to_be_bytes());
    out.extend_from_slice(&f.base_timestamp.to_be_bytes());
    out.extend_from_slice(&f.max_timestamp.to_be_bytes());
    out.extend_from_slice(&f.producer_id.to_be_bytes());
    out.extend_from_slice(&f.producer_epoch.to_be_bytes());
    out.extend_from_slice(&f.base_sequence.to_be_bytes());
    out.extend_from_slice(&f.count.to_be_bytes());
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c(&out[CRC_START..]);
    out[CRC_START - 4..CRC_START].copy_from_slice(&crc.to_be_bytes());
    Ok(Bytes::from(out))
}

/// Appends `r` (length prefix included) to `out`; on error `out` is unchanged.
fn write_record(out: &mut Vec<u8>, r: &Record<'_>) -> Result<(), BuildError> {
    let mut body = Vec::new();
    body.push(r.attributes as u8);
    put_varlong(&mut body, r.timestamp_delta);
    put_varint(&mut body, r.offset_delta);
    put_bytes(&mut body, r.key, "key")?;
    put_bytes(&mut body, r.value, "value")?;
    put_varint(&mut body, len_i32(r.headers.len(), "header count")?);
    for h in r.headers {
        put_bytes(&mut body, Some(&h.key), "header key")?;
        put_bytes(&mut body, h.value.as_deref(), "header value")?;
    }
    put_varint(out, len_i32(body.len(), "record")?);
    out.extend_from_slice(&body);
    Ok(())
}

fn put_bytes(out: &mut Vec<u8>, b: Option<&[u8]>, what: &'static str) -> Result<(), BuildError> {
    match b {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, len_i32(b.len(), what)?);
            out.extend_from_slice(b);
        }
    }
    Ok(())
}

fn len_i32(len: usize, what: &'static str) -> Result<i32, BuildError> {
    i32::try_from(len).map_err(|_| BuildError::TooLarge { what, len })
}
