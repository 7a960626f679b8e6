//! The stored / transferred message record (`docs/remoting-protocol.md#message-records`), V1 layout
//! (1-byte topic length) unless the topic is longer than 127 bytes (then V2, 2-byte topic
//! length).
//!
//! ```text
//! TOTALSIZE i32 | MAGICCODE i32 | BODYCRC i32 | QUEUEID i32 | FLAG i32 | QUEUEOFFSET i64
//! PHYSICALOFFSET i64 | SYSFLAG i32 | BORNTIMESTAMP i64 | BORNHOST 8|20 | STORETIMESTAMP i64
//! STOREHOSTADDRESS 8|20 | RECONSUMETIMES i32 | PREPAREDTRANSACTIONOFFSET i64
//! BODYLEN i32 | BODY | TOPICLEN i8|i16 | TOPIC | PROPLEN i16 | PROPERTIES
//! ```

//!
//! Only the V6 host bits of SYSFLAG (0x10 born host, 0x20 store host) are interpreted: when
//! decoding they say how long each host field is; when encoding they are set from the address
//! kinds. Everything else is carried as is (a compressed body stays compressed).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::MessageError;
use super::sysflag::{BORNHOST_V6, STOREHOST_V6};
use crate::wire::Reader;

/// V1 magic code (1-byte topic length).
pub const MAGIC_V1: i32 = 0xDAA3_20A7_u32 as i32;
/// V2 magic code (2-byte topic length).
pub const MAGIC_V2: i32 = 0xDAA3_20AB_u32 as i32;

/// Longest topic written with the V1 layout (its length byte is read as signed by every Java
/// version and by C++).
pub const MAX_V1_TOPIC_LEN: usize = 127;

/// Size of a record with IPv4 hosts, V1 layout, and empty body, topic and properties.
pub const MIN_RECORD_LEN: usize = 91;

/// Fixed fields without the two host fields and the topic-length prefix.
const FIXED_LEN: usize = 74;

/// Some fields of a stored record, borrowed from its bytes ([`MessageExt::view`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView {
    /// Logical offset in its queue.
    pub queue_offset: i64,
    /// MessageSysFlag.
    pub sys_flag: i32,
    /// Client send time, ms.
    pub born_timestamp: i64,
    /// Server store time, ms.
    pub store_timestamp: i64,
    /// Body as stored (possibly compressed).
    pub body: Bytes,
    /// Properties, UTF-8 (checked).
    pub properties: Bytes,
}

impl RecordView {
    /// The properties as text.
    pub fn properties_str(&self) -> &str {
        std::str::from_utf8(&self.properties).unwrap_or_default()
    }
}

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
    /// Properties string (`docs/remoting-protocol.md#properties`), kept as raw text.
    pub properties: String,
}

fn host_len(addr: &SocketAddr) -> usize {
    match addr {
        SocketAddr::V4(_) => 8,
        SocketAddr::V6(_) => 20,
    }
}

fn put_host(dst: &mut BytesMut, addr: &SocketAddr) {
    match addr.ip() {
        IpAddr::V4(ip) => dst.put_slice(&ip.octets()),
        IpAddr::V6(ip) => dst.put_slice(&ip.octets()),
    }
    dst.put_i32(i32::from(addr.port()));
}

fn read_host(r: &mut Reader<'_>, v6: bool, what: &'static str) -> Result<SocketAddr, MessageError> {
    let ip = if v6 {
        IpAddr::V6(Ipv6Addr::from(r.array16(what)?))
    } else {
        IpAddr::V4(Ipv4Addr::from(r.array4(what)?))
    };
    let port = r.i32(what)?;
    let port = u16::try_from(port).map_err(|_| MessageError::BadPort(port, what))?;
    Ok(SocketAddr::new(ip, port))
}

fn utf8(bytes: &[u8], what: &'static str) -> Result<String, MessageError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| MessageError::BadUtf8(what))
}

fn non_negative(len: i64, what: &'static str) -> Result<usize, MessageError> {
    usize::try_from(len).map_err(|_| MessageError::BadLength { what, len })
}

impl MessageExt {
    /// True when this record is written with the V1 layout (topic ≤ 127 bytes).
    pub fn uses_v1(&self) -> bool {
        self.topic.len() <= MAX_V1_TOPIC_LEN
    }

    /// SYSFLAG as written: `sys_flag` with the V6 host bits set from the addresses.
    pub fn wire_sys_flag(&self) -> i32 {
        let mut f = self.sys_flag & !(BORNHOST_V6 | STOREHOST_V6);
        if self.born_host.is_ipv6() {
            f |= BORNHOST_V6;
        }
        if self.store_host.is_ipv6() {
            f |= STOREHOST_V6;
        }
        f
    }

    /// Size of the encoded record.
    pub fn encoded_len(&self) -> usize {
        let topic_prefix = if self.uses_v1() { 1 } else { 2 };
        FIXED_LEN
            .saturating_add(host_len(&self.born_host))
            .saturating_add(host_len(&self.store_host))
            .saturating_add(self.body.len())
            .saturating_add(topic_prefix)
            .saturating_add(self.topic.len())
            .saturating_add(self.properties.len())
    }

    /// Checks the lengths that [`Self::encode`] must write, returning the record length.
    ///
    /// # Errors
    /// [`MessageError::TooLong`] when the topic or properties exceed `i16::MAX` bytes or the
    /// record `i32::MAX` bytes.
    pub fn check_encodable(&self) -> Result<usize, MessageError> {
        let max16 = i16::MAX as usize;
        if self.topic.len() > max16 {
            return Err(MessageError::TooLong {
                what: "topic",
                len: self.topic.len(),
                max: max16,
            });
        }
        if self.properties.len() > max16 {
            let len = self.properties.len();
            return Err(MessageError::TooLong {
                what: "properties",
                len,
                max: max16,
            });
        }
        let len = self.encoded_len();
        if len > i32::MAX as usize {
            return Err(MessageError::TooLong {
                what: "record",
                len,
                max: i32::MAX as usize,
            });
        }
        Ok(len)
    }

    /// Appends the encoded record (V1 unless the topic exceeds 127 bytes) to `dst`; BODYCRC
    /// is computed here. Nothing is written on error.
    ///
    /// # Errors
    /// As [`Self::check_encodable`].
    pub fn try_encode(&self, dst: &mut BytesMut) -> Result<(), MessageError> {
        let total = self.check_encodable()?;
        // check_encodable bounds every length narrowed below.
        dst.reserve(total);
        dst.put_i32(total as i32);
        dst.put_i32(if self.uses_v1() { MAGIC_V1 } else { MAGIC_V2 });
        dst.put_i32(body_crc(&self.body));
        dst.put_i32(self.queue_id);
        dst.put_i32(self.flag);
        dst.put_i64(self.queue_offset);
        dst.put_i64(self.commit_log_offset);
        dst.put_i32(self.wire_sys_flag());
        dst.put_i64(self.born_timestamp);
        put_host(dst, &self.born_host);
        dst.put_i64(self.store_timestamp);
        put_host(dst, &self.store_host);
        dst.put_i32(self.reconsume_times);
        dst.put_i64(self.prepared_transaction_offset);
        dst.put_i32(self.body.len() as i32);
        dst.put_slice(&self.body);
        if self.uses_v1() {
            dst.put_u8(self.topic.len() as u8);
        } else {
            dst.put_i16(self.topic.len() as i16);
        }
        dst.put_slice(self.topic.as_bytes());
        dst.put_i16(self.properties.len() as i16);
        dst.put_slice(self.properties.as_bytes());
        Ok(())
    }

    /// Appends the encoded record (V1 unless the topic exceeds 127 bytes) to `dst`; BODYCRC
    /// is computed here.
    ///
    /// # Panics
    /// When [`Self::check_encodable`] fails (topic or properties over 32767 bytes): callers
    /// validate those limits when a message is accepted. Use [`Self::try_encode`] otherwise.
    pub fn encode(&self, dst: &mut BytesMut) {
        if let Err(e) = self.try_encode(dst) {
            panic!("cannot encode message record: {e}");
        }
    }

    /// Decodes one record from the front of `src`, advancing it past the record. `src` is
    /// left as it was on error.
    ///
    /// # Errors
    /// [`MessageError`] when the record is truncated or malformed, or TOTALSIZE disagrees
    /// with the fields.
    pub fn decode(src: &mut Bytes) -> Result<Self, MessageError> {
        let (msg, total) = Self::decode_at(src)?;
        src.advance(total);
        Ok(msg)
    }

    fn decode_at(src: &Bytes) -> Result<(Self, usize), MessageError> {
        let mut r = Reader::new(src);
        let total = r.i32("TOTALSIZE")?;
        let total = non_negative(i64::from(total), "TOTALSIZE")?;
        if total < MIN_RECORD_LEN {
            return Err(MessageError::BadLength {
                what: "TOTALSIZE",
                len: total as i64,
            });
        }
        if total > src.len() {
            return Err(MessageError::Truncated {
                what: "record",
                need: total,
                have: src.len(),
            });
        }
        let mut r = Reader::new(&src[..total]);
        r.i32("TOTALSIZE")?;
        let magic = r.i32("MAGICCODE")?;
        if magic != MAGIC_V1 && magic != MAGIC_V2 {
            return Err(MessageError::BadMagic(magic));
        }
        let _body_crc = r.i32("BODYCRC")?;
        let queue_id = r.i32("QUEUEID")?;
        let flag = r.i32("FLAG")?;
        let queue_offset = r.i64("QUEUEOFFSET")?;
        let commit_log_offset = r.i64("PHYSICALOFFSET")?;
        let sys_flag = r.i32("SYSFLAG")?;
        let born_timestamp = r.i64("BORNTIMESTAMP")?;
        let born_host = read_host(&mut r, sys_flag & BORNHOST_V6 != 0, "BORNHOST")?;
        let store_timestamp = r.i64("STORETIMESTAMP")?;
        let store_host = read_host(&mut r, sys_flag & STOREHOST_V6 != 0, "STOREHOSTADDRESS")?;
        let reconsume_times = r.i32("RECONSUMETIMES")?;
        let prepared_transaction_offset = r.i64("PREPAREDTRANSACTIONOFFSET")?;
        let body_len = non_negative(i64::from(r.i32("BODYLEN")?), "BODY")?;
        let body_start = r.position();
        r.take(body_len, "BODY")?;
        let body = src.slice(body_start..body_start + body_len);
        let topic_len = if magic == MAGIC_V1 {
            usize::from(r.u8("TOPICLEN")?)
        } else {
            non_negative(i64::from(r.i16("TOPICLEN")?), "TOPIC")?
        };
        let topic = utf8(r.take(topic_len, "TOPIC")?, "TOPIC")?;
        let prop_len = non_negative(i64::from(r.i16("PROPERTIESLEN")?), "PROPERTIES")?;
        let properties = utf8(r.take(prop_len, "PROPERTIES")?, "PROPERTIES")?;
        if r.remaining() != 0 {
            return Err(MessageError::BadLength {
                what: "TOTALSIZE",
                len: total as i64,
            });
        }
        let msg = Self {
            queue_id,
            flag,
            queue_offset,
            commit_log_offset,
            sys_flag,
            born_timestamp,
            born_host,
            store_timestamp,
            store_host,
            reconsume_times,
            prepared_transaction_offset,
            body,
            topic,
            properties,
        };
        Ok((msg, total))
    }

    /// The fields of one record a reader needs that does not want the topic or the hosts,
    /// without copying: body and properties are slices of `src`.
    ///
    /// # Errors
    /// As [`MessageExt::decode`].
    pub fn view(src: &Bytes) -> Result<RecordView, MessageError> {
        let mut r = Reader::new(src);
        let total = non_negative(i64::from(r.i32("TOTALSIZE")?), "TOTALSIZE")?;
        if total < MIN_RECORD_LEN || total > src.len() {
            return Err(MessageError::BadLength {
                what: "TOTALSIZE",
                len: total as i64,
            });
        }
        let mut r = Reader::new(&src[..total]);
        r.i32("TOTALSIZE")?;
        let magic = r.i32("MAGICCODE")?;
        if magic != MAGIC_V1 && magic != MAGIC_V2 {
            return Err(MessageError::BadMagic(magic));
        }
        r.take(12, "BODYCRC, QUEUEID, FLAG")?;
        let queue_offset = r.i64("QUEUEOFFSET")?;
        r.take(8, "PHYSICALOFFSET")?;
        let sys_flag = r.i32("SYSFLAG")?;
        let born_timestamp = r.i64("BORNTIMESTAMP")?;
        r.take(if sys_flag & BORNHOST_V6 != 0 { 20 } else { 8 }, "BORNHOST")?;
        let store_timestamp = r.i64("STORETIMESTAMP")?;
        r.take(
            if sys_flag & STOREHOST_V6 != 0 { 20 } else { 8 },
            "STOREHOSTADDRESS",
        )?;
        r.take(12, "RECONSUMETIMES, PREPAREDTRANSACTIONOFFSET")?;
        let body_len = non_negative(i64::from(r.i32("BODYLEN")?), "BODY")?;
        let body_start = r.position();
        r.take(body_len, "BODY")?;
        let topic_len = if magic == MAGIC_V1 {
            usize::from(r.u8("TOPICLEN")?)
        } else {
            non_negative(i64::from(r.i16("TOPICLEN")?), "TOPIC")?
        };
        r.take(topic_len, "TOPIC")?;
        let prop_len = non_negative(i64::from(r.i16("PROPERTIESLEN")?), "PROPERTIES")?;
        let prop_start = r.position();
        r.take(prop_len, "PROPERTIES")?;
        let properties = src.slice(prop_start..prop_start + prop_len);
        if std::str::from_utf8(&properties).is_err() {
            return Err(MessageError::BadUtf8("PROPERTIES"));
        }
        Ok(RecordView {
            queue_offset,
            sys_flag,
            born_timestamp,
            store_timestamp,
            body: src.slice(body_start..body_start + body_len),
            properties,
        })
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

    /// The parsed properties string.
    pub fn parsed_properties(&self) -> super::Properties {
        super::Properties::parse(&self.properties)
    }

    /// The offset message id of this record: store host + PHYSICALOFFSET
    /// (`docs/remoting-protocol.md#offset-message-ids`).
    pub fn offset_msg_id(&self) -> String {
        super::create_offset_msg_id(self.store_host, self.commit_log_offset)
    }
}

/// BODYCRC: CRC-32 of the body as stored, masked to 31 bits
/// (`docs/remoting-protocol.md#message-records`).
pub fn body_crc(body: &[u8]) -> i32 {
    (crc32fast::hash(body) & 0x7FFF_FFFF) as i32
}

#[cfg(test)]
mod tests;
