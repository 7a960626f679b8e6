//! Batch bodies of SEND_BATCH_MESSAGE / the batch flag (§15.5).
//!
//! ```text
//! entry := TOTALSIZE i32 | MAGICCODE i32 | BODYCRC i32 | FLAG i32 | BODYLEN i32 | BODY | PROPLEN i16 | PROPERTIES
//! ```

use bytes::{Bytes, BytesMut};

use super::MessageError;

/// One message of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchEntry {
    /// User flag.
    pub flag: i32,
    /// Body.
    pub body: Bytes,
    /// Properties string.
    pub properties: String,
}

/// Splits a batch body into its entries.
///
/// # Errors
/// [`MessageError`] when an entry is truncated or its lengths disagree.
pub fn decode_batch(body: &Bytes) -> Result<Vec<BatchEntry>, MessageError> {
    let _ = body;
    todo!()
}

/// Encodes entries as a batch body (as clients do: magic and CRC written as 0).
pub fn encode_batch(entries: &[BatchEntry], dst: &mut BytesMut) {
    let _ = (entries, dst);
    todo!()
}
