//! Offset message ids (§16.1): store-host address + port + commit-log offset, upper-case hex
//! (32 characters for IPv4, 56 for IPv6).

use std::net::SocketAddr;

use super::MessageError;

/// Builds the offset message id of a record stored at `offset` by `store_host`.
pub fn create_offset_msg_id(store_host: SocketAddr, offset: i64) -> String {
    let _ = (store_host, offset);
    todo!()
}

/// Decodes an offset message id into its store host and commit-log offset.
///
/// # Errors
/// [`MessageError::BadMessageId`] unless the text is 32 or 56 hex characters.
pub fn decode_offset_msg_id(id: &str) -> Result<(SocketAddr, i64), MessageError> {
    let _ = id;
    todo!()
}
