//! Any byte stream: cutting frames and decoding their commands must never panic.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use stratus_compat::{FrameLimits, RemotingCommand, frame};

fuzz_target!(|data: &[u8]| {
    let mut buf = BytesMut::from(data);
    while let Ok(Some(f)) = frame::decode(&mut buf, &FrameLimits::default()) {
        let _ = RemotingCommand::decode(f);
    }
});
