//! ACL 1.0 request signatures (`docs/remoting-protocol.md#acl-signatures`): the bytes a `Signature`
//! is computed over.
//!
//! `Signature = Base64(HMAC-SHA1(secretKey, content))` where `content` is the concatenation of
//! the ext-field **values** sorted by key, without `Signature`, followed by the body. This
//! module builds `content` only; the HMAC and Base64 belong to whoever holds the secrets.
//! Values the C++ client sent as JSON numbers were signed as their decimal text, which is
//! exactly how the JSON header decoder stores them.

use crate::command::RemotingCommand;

/// Ext field carrying the access key (empty from the C++ client without credentials).
pub const ACCESS_KEY: &str = "AccessKey";
/// Ext field carrying the signature.
pub const SIGNATURE: &str = "Signature";
/// Ext field carrying the security token (signed by Java, not by Go).
pub const SECURITY_TOKEN: &str = "SecurityToken";
/// Ext field the C++ client always adds (`ALIYUN`).
pub const ONS_CHANNEL: &str = "OnsChannel";

/// The signed content of `cmd`: ext values sorted by key (byte order, which equals Java's
/// order for the ASCII keys clients use), leaving out `Signature` and every key in `skip`,
/// then the body.
pub fn signing_content(cmd: &RemotingCommand, skip: &[&str]) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + cmd.body.len());
    for (k, v) in &cmd.ext_fields {
        if k != SIGNATURE && !skip.contains(&k.as_str()) {
            out.extend_from_slice(v.as_bytes());
        }
    }
    out.extend_from_slice(&cmd.body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_sorted_values_without_signature_then_body() {
        let mut cmd = RemotingCommand::request(105, 0).with_body(&b"BODY"[..]);
        cmd.put_ext("topic", "T");
        cmd.put_ext(SIGNATURE, "sig");
        cmd.put_ext(ACCESS_KEY, "ak");
        cmd.put_ext(SECURITY_TOKEN, "tok");
        assert_eq!(signing_content(&cmd, &[]), b"aktokTBODY");
        assert_eq!(signing_content(&cmd, &[SECURITY_TOKEN]), b"akTBODY");
    }
}
