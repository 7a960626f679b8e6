//! MessageSysFlag bits (`docs/remoting-protocol.md#message-sysflag`).

/// Body compressed.
pub const COMPRESSED: i32 = 0x1;
/// Topic filter type MULTI_TAG.
pub const MULTI_TAGS: i32 = 0x2;
/// Normal message (bits 2–3 clear).
pub const TRANSACTION_NOT_TYPE: i32 = 0x0;
/// Half message.
pub const TRANSACTION_PREPARED_TYPE: i32 = 0x4;
/// Committed transactional message.
pub const TRANSACTION_COMMIT_TYPE: i32 = 0x8;
/// Rolled back; also the mask of bits 2–3.
pub const TRANSACTION_ROLLBACK_TYPE: i32 = 0xC;
/// BORNHOST is IPv6.
pub const BORNHOST_V6: i32 = 0x10;
/// STOREHOSTADDRESS is IPv6.
pub const STOREHOST_V6: i32 = 0x20;

/// The transaction type bits of a sysflag.
pub const fn transaction_type(sys_flag: i32) -> i32 {
    sys_flag & TRANSACTION_ROLLBACK_TYPE
}
