//! Any pull/query body: decoding message records must never panic.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use stratus_compat::message::MessageExt;

fuzz_target!(|data: &[u8]| {
    let _ = MessageExt::decode_all(Bytes::copy_from_slice(data));
});
