//! Any bytes as a Kafka request frame (after its length): decoding must never panic. The
//! first four bytes are also rewritten to every served API at its newest version, so the
//! body decoders of each are reached, not just the header check.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use stratus_compat::kafka::request::{SUPPORTED, decode};

fuzz_target!(|data: &[u8]| {
    let _ = decode(Bytes::copy_from_slice(data));
    if data.len() >= 5 {
        let (key, lo, hi) = SUPPORTED[usize::from(data[0]) % SUPPORTED.len()];
        let version = lo + i16::from(data[1]) % (hi - lo + 1);
        let mut f = data.to_vec();
        f[..2].copy_from_slice(&(key as i16).to_be_bytes());
        f[2..4].copy_from_slice(&version.to_be_bytes());
        let _ = decode(Bytes::from(f));
    }
});
