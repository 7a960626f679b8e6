//! RemotingCommand: the logical header (code, language, version, opaque, flag, remark,
//! extFields) plus the body. Decoding from and encoding to a frame's header bytes in either
//! serialize type.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};

use crate::code::{LanguageCode, ResponseCode, SerializeType};
use crate::error::FrameError;
use crate::frame::Frame;

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
        let _ = (code, opaque);
        todo!()
    }

    /// A response to `opaque` with `code` and optional remark (flag = response).
    pub fn response(opaque: i32, code: ResponseCode, remark: Option<String>) -> Self {
        let _ = (opaque, code, remark);
        todo!()
    }

    /// True when flag bit 0 is set.
    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    /// True when flag bit 1 is set (the request must not be answered).
    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
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
        let _ = frame;
        todo!()
    }

    /// Encodes the whole frame (length prefix, type/length word, header in
    /// `self.serialize_type`, body) onto `dst`.
    pub fn encode(&self, dst: &mut BytesMut) {
        let _ = dst;
        todo!()
    }
}
