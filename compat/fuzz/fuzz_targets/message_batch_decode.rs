//! Any batch body: splitting it into entries must never panic.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use stratus_compat::message::decode_batch;

fuzz_target!(|data: &[u8]| {
    let _ = decode_batch(&Bytes::copy_from_slice(data));
});
