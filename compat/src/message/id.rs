//! Offset message ids (`docs/remoting-protocol.md#offset-message-ids`): store-host address + port +
//! commit-log offset, upper-case hex (32 characters for IPv4, 56 for IPv6).
//!
//! ```text
//! IPv4: ip (4) | port i32 (4) | offset i64 (8)  -> 16 bytes -> 32 hex characters
//! IPv6: ip (16) | port i32 (4) | offset i64 (8) -> 28 bytes -> 56 hex characters
//! ```
//!
//! Decoding accepts either case of hex digits but nothing else: other lengths, non-hex
//! characters and ports outside 0..=65535 are errors (Java's `MessageDecoder#decodeMessageId`
//! looks only at the length and fails only on a bad port; Go panics on a bad port, so Stratus
//! never issues one).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::MessageError;

/// Length of an IPv4 offset message id.
pub const OFFSET_MSG_ID_LEN_V4: usize = 32;
/// Length of an IPv6 offset message id.
pub const OFFSET_MSG_ID_LEN_V6: usize = 56;

/// Builds the offset message id of a record stored at `offset` by `store_host`.
pub fn create_offset_msg_id(store_host: SocketAddr, offset: i64) -> String {
    let mut raw = Vec::with_capacity(28);
    match store_host.ip() {
        IpAddr::V4(ip) => raw.extend_from_slice(&ip.octets()),
        IpAddr::V6(ip) => raw.extend_from_slice(&ip.octets()),
    }
    raw.extend_from_slice(&i32::from(store_host.port()).to_be_bytes());
    raw.extend_from_slice(&offset.to_be_bytes());
    hex::encode_upper(raw)
}

/// Decodes an offset message id into its store host and commit-log offset.
///
/// # Errors
/// [`MessageError::BadMessageId`] unless the text is 32 or 56 hex characters with a port in
/// 0..=65535.
pub fn decode_offset_msg_id(id: &str) -> Result<(SocketAddr, i64), MessageError> {
    let bad = || MessageError::BadMessageId(id.chars().take(64).collect());
    let ip_len = match id.len() {
        OFFSET_MSG_ID_LEN_V4 => 4,
        OFFSET_MSG_ID_LEN_V6 => 16,
        _ => return Err(bad()),
    };
    let raw = hex::decode(id).map_err(|_| bad())?;
    let (ip, rest) = raw.split_at(ip_len);
    let ip = match <[u8; 4]>::try_from(ip) {
        Ok(v4) => IpAddr::V4(Ipv4Addr::from(v4)),
        Err(_) => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(ip).map_err(|_| bad())?)),
    };
    let (port, offset) = rest.split_at(4);
    let port = i32::from_be_bytes(port.try_into().map_err(|_| bad())?);
    let port = u16::try_from(port).map_err(|_| bad())?;
    let offset = i64::from_be_bytes(offset.try_into().map_err(|_| bad())?);
    Ok((SocketAddr::new(ip, port), offset))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ipv4_id_matches_the_captured_send_response() {
        // cpp-1.x responses/0002: 127.0.0.1:19911, offset 0.
        let host: SocketAddr = "127.0.0.1:19911".parse().unwrap();
        assert_eq!(
            create_offset_msg_id(host, 0),
            "7F00000100004DC70000000000000000"
        );
        assert_eq!(
            decode_offset_msg_id("7F00000100004DC70000000000000000").unwrap(),
            (host, 0)
        );
        assert_eq!(
            decode_offset_msg_id("7f00000100004dc70000000000000000").unwrap(),
            (host, 0)
        );
    }

    #[test]
    fn ipv6_id_is_56_characters() {
        let host: SocketAddr = "[2001:db8::1]:10911".parse().unwrap();
        let id = create_offset_msg_id(host, 1234);
        assert_eq!(id.len(), 56);
        assert_eq!(id, id.to_uppercase());
        assert_eq!(decode_offset_msg_id(&id).unwrap(), (host, 1234));
    }

    #[test]
    fn malformed_ids_are_rejected() {
        for id in [
            "",
            "7F00000100004DC7000000000000000",
            "7F00000100004DC700000000000000000",
            "7G00000100004DC70000000000000000",
            "7F000001FFFFFFFF0000000000000000",
            "é700000100004DC70000000000000000",
        ] {
            assert!(decode_offset_msg_id(id).is_err(), "{id:?}");
        }
    }

    proptest! {
        #[test]
        fn offset_msg_id_round_trips(ip in any::<IpAddr>(), port in any::<u16>(), offset in any::<i64>()) {
            let host = SocketAddr::new(ip, port);
            let id = create_offset_msg_id(host, offset);
            prop_assert_eq!(id.len(), if ip.is_ipv4() { 32 } else { 56 });
            prop_assert_eq!(decode_offset_msg_id(&id).unwrap(), (host, offset));
        }

        #[test]
        fn offset_msg_id_decode_never_panics(s in ".{0,60}") {
            let _ = decode_offset_msg_id(&s);
        }
    }
}
