//! Any header bytes, in both encodings: decoding must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stratus_compat::header::{json, rocketmq};

fuzz_target!(|data: &[u8]| {
    let _ = (json::decode(data), rocketmq::decode(data));
});
