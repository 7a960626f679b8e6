//! RemotingCommand: the logical header (code, language, version, opaque, flag, remark,
//! extFields) plus the body. Decoding from and encoding to a frame's header bytes in either
//! serialize type.
//!
//! A command remembers the encoding it arrived in (`serialize_type`) so a reply can mirror
//! it (`docs/remoting-protocol.md#reply-encoding`). Binary headers carry `code` and `version`
//! in 16 bits; a command whose numbers do not fit is written as JSON instead, whatever
//! `serialize_type` says.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};

use crate::code::{LanguageCode, RequestCode, ResponseCode, SerializeType};
use crate::error::FrameError;
use crate::frame::{Frame, encode_frame};
use crate::header::{CommandHeader, json, rocketmq};

/// The version ordinal Stratus puts in every frame it sends (V5_3_3 = 479).
pub const SERVER_VERSION: i32 = 479;

/// Flag bit 0: the command is a response.
pub const FLAG_RESPONSE: i32 = 0b01;
/// Flag bit 1: the request is one-way (must not be answered).
pub const FLAG_ONEWAY: i32 = 0b10;

/// The custom-header fields of a command. Sorted by key (fastjson and ACL order).
pub type ExtFields = BTreeMap<String, String>;

/// One decoded remoting command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotingCommand {
    /// Request code in requests, response code in responses.
    pub code: i32,
    /// Sender's language.
    pub language: LanguageCode,
    /// Sender's version ordinal.
    pub version: i32,
    /// Request id; a response carries its request's opaque.
    pub opaque: i32,
    /// Bit 0 response, bit 1 one-way.
    pub flag: i32,
    /// Free text, error message in error responses.
    pub remark: Option<String>,
    /// Custom header fields, all as strings (JSON numbers/booleans converted to text).
    pub ext_fields: ExtFields,
    /// Encoding the command arrived in (or should be sent in).
    pub serialize_type: SerializeType,
    /// Body bytes (may be empty).
    pub body: Bytes,
}

impl RemotingCommand {
    /// A new request with the given code, JAVA language, [`SERVER_VERSION`], JSON encoding.
    pub fn request(code: i32, opaque: i32) -> Self {
        Self {
            code,
            language: LanguageCode::Java,
            version: SERVER_VERSION,
            opaque,
            flag: 0,
            remark: None,
            ext_fields: ExtFields::new(),
            serialize_type: SerializeType::Json,
            body: Bytes::new(),
        }
    }

    /// A response to `opaque` with `code` and optional remark (flag = response).
    pub fn response(opaque: i32, code: ResponseCode, remark: Option<String>) -> Self {
        Self {
            flag: FLAG_RESPONSE,
            remark,
            ..Self::request(code.to_i32(), opaque)
        }
    }

    /// A response to this request: its opaque, and the encoding a reply to it should use
    /// ([`Self::reply_serialize_type`]).
    pub fn response_to(&self, code: ResponseCode, remark: Option<String>) -> Self {
        Self {
            serialize_type: self.reply_serialize_type(),
            ..Self::response(self.opaque, code, remark)
        }
    }

    /// The encoding to answer this command in: the one it arrived in, except JSON for the
    /// C++ client, which cannot read binary headers (`docs/remoting-protocol.md#reply-encoding`).
    pub fn reply_serialize_type(&self) -> SerializeType {
        match self.language {
            LanguageCode::Cpp => SerializeType::Json,
            _ => self.serialize_type,
        }
    }

    /// Builds a command from a decoded header, its encoding and its body.
    pub fn from_header(header: CommandHeader, serialize_type: SerializeType, body: Bytes) -> Self {
        Self {
            code: header.code,
            language: header.language,
            version: header.version,
            opaque: header.opaque,
            flag: header.flag,
            remark: header.remark,
            ext_fields: header.ext_fields,
            serialize_type,
            body,
        }
    }

    /// Replaces the body.
    #[must_use]
    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// The code read as a request code.
    pub fn request_code(&self) -> RequestCode {
        RequestCode::from_i32(self.code)
    }

    /// The code read as a response code.
    pub fn response_code(&self) -> ResponseCode {
        ResponseCode::from_i32(self.code)
    }

    /// True when flag bit 0 is set.
    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    /// True when flag bit 1 is set (the request must not be answered).
    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    /// Sets flag bit 1 (one-way request).
    pub fn mark_oneway(&mut self) {
        self.flag |= FLAG_ONEWAY;
    }

    /// Sets one ext field.
    pub fn put_ext(&mut self, key: &str, value: impl ToString) {
        self.ext_fields.insert(key.to_owned(), value.to_string());
    }

    /// Decodes a frame's header (per its serialize type) and takes its body.
    ///
    /// # Errors
    /// [`FrameError::BadHeader`] when the header bytes cannot be decoded.
    pub fn decode(frame: Frame) -> Result<Self, FrameError> {
        let header = match frame.serialize_type {
            SerializeType::Json => json::decode(&frame.header)?,
            SerializeType::RocketMq => rocketmq::decode(&frame.header)?,
        };
        Ok(Self::from_header(header, frame.serialize_type, frame.body))
    }

    /// The header bytes and the encoding actually used: `self.serialize_type`, or JSON when
    /// the command cannot be written as a binary header.
    pub fn encode_header(&self) -> (SerializeType, Vec<u8>) {
        let mut header = Vec::with_capacity(128);
        if self.serialize_type == SerializeType::RocketMq
            && rocketmq::encode(self, &mut header).is_ok()
        {
            return (SerializeType::RocketMq, header);
        }
        header.clear();
        json::encode(self, &mut header);
        (SerializeType::Json, header)
    }

    /// Encodes the whole frame (length prefix, type/length word, header in
    /// `self.serialize_type`, body) onto `dst`. Nothing is written on error.
    ///
    /// # Errors
    /// [`FrameError::HeaderTooLarge`] / [`FrameError::TooLarge`] when the header exceeds the
    /// 24-bit length field or the frame exceeds `i32::MAX` bytes.
    pub fn try_encode(&self, dst: &mut BytesMut) -> Result<(), FrameError> {
        let (serialize_type, header) = self.encode_header();
        encode_frame(serialize_type, &header, &self.body, dst)
    }

    /// Encodes the whole frame (length prefix, type/length word, header in
    /// `self.serialize_type`, body) onto `dst`.
    ///
    /// # Panics
    /// When the header exceeds 16 MiB or the frame `i32::MAX` bytes: a bug in the caller,
    /// which bounds what it sends. Use [`Self::try_encode`] to handle that case instead.
    pub fn encode(&self, dst: &mut BytesMut) {
        if let Err(e) = self.try_encode(dst) {
            panic!("cannot encode remoting command {}: {e}", self.code);
        }
    }
}

#[cfg(test)]
mod tests;
