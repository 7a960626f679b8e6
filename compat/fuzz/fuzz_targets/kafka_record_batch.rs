//! Any bytes as a Produce request's records: decoding the batches (with a 1 MiB cap on each
//! batch's decompressed records) and reading their headers must never panic. The input is
//! also decoded once more with the first batch's `batchLength` and CRC-32C made true to its
//! bytes, so mutations reach the record and codec decoders behind the checksum.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stratus_compat::kafka::records::{batch_infos, decode_batches};

fuzz_target!(|data: &[u8]| {
    let _ = decode_batches(data, 1 << 20);
    let _ = batch_infos(data);
    if data.len() >= 21 {
        let mut fixed = data.to_vec();
        if let Ok(len) = u32::try_from(data.len() - 12) {
            fixed[8..12].copy_from_slice(&len.to_be_bytes());
        }
        let crc = crc32c::crc32c(&fixed[21..]);
        fixed[17..21].copy_from_slice(&crc.to_be_bytes());
        let _ = decode_batches(&fixed, 1 << 20);
    }
});
