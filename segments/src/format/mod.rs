//! The segment object format, version 1.
//!
//! A segment is one immutable object holding one flush of one node: a section per shard the
//! node owned at that flush. Each section is the shard's stored records back to back, exactly
//! the bytes a PULL_MESSAGE response carries (`docs/remoting-protocol.md#message-records`),
//! followed by the section's footer: the ConsumeQueue entries of every queue the section
//! touches.
//!
//! ```text
//!  object
//!  +--------------------------------------------------------------+
//!  | header    magic "SSEG" | version u16 | reserved u16 = 0 (8 B) |
//!  +--------------------------------------------------------------+
//!  | section 0 data: record | record | ... (shard A)               |  <- section_pos / len
//!  | section 0 footer                                              |  <- footer_pos / len
//!  +--------------------------------------------------------------+
//!  | section 1 data (shard B) | section 1 footer                    |
//!  +--------------------------------------------------------------+
//!  | ...                                                          |
//!  +--------------------------------------------------------------+
//!  | section table: count u32                                     |
//!  |   count x (shard u32 | section_pos u64 | section_len u64      |
//!  |            | footer_pos u64 | footer_len u64)                 |
//!  |   crc32 u32 (over the table bytes before it)                 |
//!  +--------------------------------------------------------------+
//!  | trailer   table_pos u64 | table_len u32 | magic "SSEG" (16 B) |
//!  +--------------------------------------------------------------+
//!
//!  footer
//!  +--------------------------------------------------------------+
//!  | magic "SFTR" | shard u32 | commit_log_start u64 | data_len u64 |
//!  | queue_count u32                                              |
//!  | queue_count x ( topic_len u16 | topic utf-8 | queue_id i32    |
//!  |                 | first_offset i64 | entry_count u32          |
//!  |                 | entry_count x entry )                       |
//!  | crc32 u32 (over every footer byte before it)                 |
//!  +--------------------------------------------------------------+
//!
//!  entry (28 B): pos u32 | size u32 | tags_code i64 | store_ts i64 | crc32 u32
//! ```
//!
//! All integers are big-endian, like the records themselves. `pos` is the record's byte
//! position inside its section's data; the record's local commit-log offset is
//! `commit_log_start + pos`. Entries of a queue have consecutive queue offsets starting at
//! `first_offset`; queues are sorted by (topic, queue id). `crc32` of an entry covers the
//! whole record, so a flipped byte anywhere in a record or a footer is detected before any
//! byte is returned to a client.
//!
//! Invariants: a section's data is at most `u32::MAX` bytes; the sections of one shard in
//! consecutive segments are contiguous in that shard's commit log.

mod builder;
mod footer;

pub use builder::{SealedSection, SealedSegment, SegmentBuilder};
pub use footer::{EntryMeta, Footer, FooterQueue, IndexEntry};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use stratus_meta::ShardId;

use crate::SegmentError;

/// Magic at the start and end of every segment object.
pub const MAGIC: [u8; 4] = *b"SSEG";
/// Magic at the start of every section footer.
pub const FOOTER_MAGIC: [u8; 4] = *b"SFTR";
/// Format version written by this code.
pub const VERSION: u16 = 1;
/// Length of the object header.
pub const HEADER_LEN: usize = 8;
/// Length of the fixed trailer at the end of the object.
pub const TRAILER_LEN: usize = 16;
/// Length of one footer entry.
pub const ENTRY_LEN: usize = 28;
const TABLE_ROW_LEN: usize = 36;

/// One row of the section table: where a shard's section and footer are in the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionLocation {
    /// Shard.
    pub shard: ShardId,
    /// Position of the section's records.
    pub section_pos: u64,
    /// Length of the records.
    pub section_len: u64,
    /// Position of the footer.
    pub footer_pos: u64,
    /// Length of the footer.
    pub footer_len: u64,
}

/// Reads the header, trailer and section table of a whole object.
///
/// # Errors
/// [`SegmentError::Corrupt`] (with an empty key) if the object is truncated, has a wrong
/// magic or version, or its table fails its checksum or points outside the object.
pub fn decode_section_table(object: &[u8]) -> Result<Vec<SectionLocation>, SegmentError> {
    if object.len() < HEADER_LEN + TRAILER_LEN {
        return Err(corrupt("object shorter than header and trailer"));
    }
    if object[..4] != MAGIC {
        return Err(corrupt("bad segment magic"));
    }
    let version = u16::from_be_bytes([object[4], object[5]]);
    if version != VERSION {
        return Err(corrupt(format!("unsupported segment version {version}")));
    }
    if object[6..8] != [0, 0] {
        return Err(corrupt("reserved header bytes are not zero"));
    }
    let mut trailer = &object[object.len() - TRAILER_LEN..];
    let table_pos = trailer.get_u64();
    let table_len = u64::from(trailer.get_u32());
    if trailer != MAGIC {
        return Err(corrupt("bad trailer magic"));
    }
    let table_end = table_pos
        .checked_add(table_len)
        .ok_or_else(|| corrupt("table overflows"))?;
    let limit = (object.len() - TRAILER_LEN) as u64;
    if table_pos < HEADER_LEN as u64 || table_end != limit || table_len < 8 {
        return Err(corrupt("section table out of bounds"));
    }
    // Bounds checked just above.
    let table = &object[table_pos as usize..table_end as usize];
    let (body, crc) = table.split_at(table.len() - 4);
    if crc32fast::hash(body).to_be_bytes() != crc {
        return Err(corrupt("section table checksum mismatch"));
    }
    let mut b = body;
    let count = b.get_u32() as usize;
    if b.len()
        != count
            .checked_mul(TABLE_ROW_LEN)
            .ok_or_else(|| corrupt("table count"))?
    {
        return Err(corrupt("section table length mismatch"));
    }
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let loc = SectionLocation {
            shard: ShardId(b.get_u32()),
            section_pos: b.get_u64(),
            section_len: b.get_u64(),
            footer_pos: b.get_u64(),
            footer_len: b.get_u64(),
        };
        let ends = [
            loc.section_pos.checked_add(loc.section_len),
            loc.footer_pos.checked_add(loc.footer_len),
        ];
        if ends.iter().any(|e| e.is_none_or(|e| e > table_pos))
            || loc.section_pos < HEADER_LEN as u64
        {
            return Err(corrupt("section out of bounds"));
        }
        out.push(loc);
    }
    Ok(out)
}

pub(crate) fn encode_header(dst: &mut BytesMut) {
    dst.put_slice(&MAGIC);
    dst.put_u16(VERSION);
    dst.put_u16(0);
}

pub(crate) fn encode_table(dst: &mut BytesMut, rows: &[SectionLocation]) {
    let table_pos = dst.len() as u64;
    let start = dst.len();
    dst.put_u32(u32::try_from(rows.len()).expect("fewer than 2^32 shards"));
    for r in rows {
        dst.put_u32(r.shard.0);
        dst.put_u64(r.section_pos);
        dst.put_u64(r.section_len);
        dst.put_u64(r.footer_pos);
        dst.put_u64(r.footer_len);
    }
    let crc = crc32fast::hash(&dst[start..]);
    dst.put_u32(crc);
    let table_len = u32::try_from(dst.len() - start).expect("table fits in u32");
    dst.put_u64(table_pos);
    dst.put_u32(table_len);
    dst.put_slice(&MAGIC);
}

/// Checks one record against its footer entry: size and CRC-32.
///
/// # Errors
/// [`SegmentError::Corrupt`] with the given key when they differ.
pub fn verify_record(key: &str, entry: &IndexEntry, record: &Bytes) -> Result<(), SegmentError> {
    if record.len() != entry.size as usize {
        return Err(SegmentError::Corrupt {
            key: key.to_owned(),
            what: format!(
                "record at {} has {} bytes, index says {}",
                entry.pos,
                record.len(),
                entry.size
            ),
        });
    }
    if crc32fast::hash(record) != entry.crc {
        return Err(SegmentError::Corrupt {
            key: key.to_owned(),
            what: format!("record at {} fails its checksum", entry.pos),
        });
    }
    Ok(())
}

/// A corruption error without a key; callers add it with [`with_key`].
pub(crate) fn corrupt(what: impl Into<String>) -> SegmentError {
    SegmentError::Corrupt {
        key: String::new(),
        what: what.into(),
    }
}

/// Fills in the object key of a [`SegmentError::Corrupt`] built without one.
pub(crate) fn with_key(e: SegmentError, key: &str) -> SegmentError {
    match e {
        SegmentError::Corrupt { key: k, what } if k.is_empty() => SegmentError::Corrupt {
            key: key.to_owned(),
            what,
        },
        other => other,
    }
}

/// A bounds-checked big-endian reader over untrusted bytes.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], SegmentError> {
        if self.buf.len() < n {
            return Err(corrupt(format!("truncated {what}")));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    pub(crate) fn u16(&mut self, what: &str) -> Result<u16, SegmentError> {
        self.buf
            .try_get_u16()
            .map_err(|_| corrupt(format!("truncated {what}")))
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, SegmentError> {
        self.buf
            .try_get_u32()
            .map_err(|_| corrupt(format!("truncated {what}")))
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, SegmentError> {
        self.buf
            .try_get_u64()
            .map_err(|_| corrupt(format!("truncated {what}")))
    }

    pub(crate) fn i32(&mut self, what: &str) -> Result<i32, SegmentError> {
        self.buf
            .try_get_i32()
            .map_err(|_| corrupt(format!("truncated {what}")))
    }

    pub(crate) fn i64(&mut self, what: &str) -> Result<i64, SegmentError> {
        self.buf
            .try_get_i64()
            .map_err(|_| corrupt(format!("truncated {what}")))
    }
}

#[cfg(test)]
mod tests;
