//! [`RemotingCodec`]: a `tokio_util` codec over [`frame::decode`] and [`RemotingCommand`],
//! used by the gateway's connection tasks and by the test client (`client`).
//!
//! Any decode error is a [`CodecError`] and ends the stream: after a bad length or header
//! the next frame boundary is unknown, so the connection must be closed.

use std::io;

use bytes::BytesMut;
use thiserror::Error;
use tokio_util::codec::{Decoder, Encoder};

use crate::command::RemotingCommand;
use crate::error::FrameError;
use crate::frame;
use crate::limits::FrameLimits;

/// Decodes frames into commands and encodes commands into frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RemotingCodec {
    /// Bounds applied to every incoming frame.
    pub limits: FrameLimits,
}

impl RemotingCodec {
    /// A codec with the given limits.
    pub fn new(limits: FrameLimits) -> Self {
        Self { limits }
    }
}

/// A codec failure: the connection failed, or the peer sent something that is not a frame.
#[derive(Debug, Error)]
pub enum CodecError {
    /// Reading or writing the connection failed.
    #[error("connection i/o failed: {0}")]
    Io(#[from] io::Error),
    /// The bytes are not a valid frame or header, or a command cannot be encoded.
    #[error(transparent)]
    Frame(#[from] FrameError),
}

impl Decoder for RemotingCodec {
    type Item = RemotingCommand;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        match frame::decode(src, &self.limits)? {
            None => Ok(None),
            Some(f) => Ok(Some(RemotingCommand::decode(f)?)),
        }
    }
}

impl Encoder<RemotingCommand> for RemotingCodec {
    type Error = CodecError;

    fn encode(&mut self, item: RemotingCommand, dst: &mut BytesMut) -> Result<(), Self::Error> {
        item.try_encode(dst)?;
        Ok(())
    }
}

impl Encoder<&RemotingCommand> for RemotingCodec {
    type Error = CodecError;

    fn encode(&mut self, item: &RemotingCommand, dst: &mut BytesMut) -> Result<(), Self::Error> {
        item.try_encode(dst)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ResponseCode, SerializeType};

    #[test]
    fn commands_split_across_reads_decode_once_complete() {
        let mut codec = RemotingCodec::default();
        let mut a = RemotingCommand::request(34, 1).with_body(&b"{}"[..]);
        a.serialize_type = SerializeType::RocketMq;
        let b = RemotingCommand::response(1, ResponseCode::Success, Some("ok".into()));
        let mut wire = BytesMut::new();
        codec.encode(&a, &mut wire).unwrap();
        codec.encode(b.clone(), &mut wire).unwrap();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for byte in wire.iter() {
            buf.extend_from_slice(&[*byte]);
            if let Some(cmd) = codec.decode(&mut buf).unwrap() {
                got.push(cmd);
            }
        }
        assert_eq!(got, vec![a, b]);
        assert!(buf.is_empty());
    }

    #[test]
    fn an_oversized_frame_is_an_error() {
        let mut codec = RemotingCodec::new(FrameLimits::try_new(64, 32).unwrap());
        let mut buf = BytesMut::from(&[0u8, 0, 1, 0, 0, 0, 0, 10][..]);
        assert!(matches!(
            codec.decode(&mut buf),
            Err(CodecError::Frame(FrameError::TooLarge {
                len: 256,
                max: 64
            }))
        ));
    }
}
