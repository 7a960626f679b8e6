//! The stored / transferred message record (§15.1), V1 layout (1-byte topic length) unless
//! the topic is longer than 127 bytes (then V2, 2-byte topic length).
//!
//! ```text
//! TOTALSIZE i32 | MAGICCODE i32 | BODYCRC i32 | QUEUEID i32 | FLAG i32 | QUEUEOFFSET i64
//! PHYSICALOFFSET i64 | SYSFLAG i32 | BORNTIMESTAMP i64 | BORNHOST 8|20 | STORETIMESTAMP i64
//! STOREHOSTADDRESS 8|20 | RECONSUMETIMES i32 | PREPAREDTRANSACTIONOFFSET i64
//! BODYLEN i32 | BODY | TOPICLEN i8|i16 | TOPIC | PROPLEN i16 | PROPERTIES
//! ```

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};

use super::MessageError;

/// V1 magic code (1-byte topic length).
pub const MAGIC_V1: i32 = 0xDAA3_20A7_u32 as i32;
/// V2 magic code (2-byte topic length).
pub const MAGIC_V2: i32 = 0xDAA3_20AB_u32 as i32;

/// One message as stored and as delivered in pull bodies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageExt {
    /// Queue id.
    pub queue_id: i32,
    /// User flag.
    pub flag: i32,
    /// Logical offset in its queue.
    pub queue_offset: i64,
    /// Commit-log handle (PHYSICALOFFSET).
    pub commit_log_offset: i64,
    /// MessageSysFlag; the V6 host bits are derived from the addresses when encoding.
    pub sys_flag: i32,
    /// Client send time, ms.
    pub born_timestamp: i64,
    /// Producer address.
    pub born_host: SocketAddr,
    /// Server store time, ms.
    pub store_timestamp: i64,
    /// Server address.
    pub store_host: SocketAddr,
    /// Previous delivery failures.
    pub reconsume_times: i32,
    /// Half-message commit-log offset of a committed transactional message, else 0.
    pub prepared_transaction_offset: i64,
    /// Body as stored (possibly compressed).
    pub body: Bytes,
    /// Topic.
    pub topic: String,
    /// Properties string (§15.4), kept as raw text.
    pub properties: String,
}

impl MessageExt {
    /// Size of the encoded record.
    pub fn encoded_len(&self) -> usize {
        todo!()
    }

    /// Appends the encoded record (V1 unless the topic exceeds 127 bytes) to `dst`; BODYCRC
    /// is computed here.
    pub fn encode(&self, dst: &mut BytesMut) {
        let _ = dst;
        todo!()
    }

    /// Decodes one record from the front of `src`, advancing it.
    ///
    /// # Errors
    /// [`MessageError`] when the record is truncated or malformed.
    pub fn decode(src: &mut Bytes) -> Result<Self, MessageError> {
        let _ = src;
        todo!()
    }

    /// Decodes every record of a pull/query body.
    ///
    /// # Errors
    /// [`MessageError`] on the first malformed record.
    pub fn decode_all(mut src: Bytes) -> Result<Vec<Self>, MessageError> {
        let mut out = Vec::new();
        while !src.is_empty() {
            out.push(Self::decode(&mut src)?);
        }
        Ok(out)
    }
}
