//! The codecs a record batch's records may be compressed with (attributes bits 0-2), framed
//! the way Kafka clients frame them.
//!
//! | id | codec | framing |
//! | --- | --- | --- |
//! | 0 | none | |
//! | 1 | gzip | a gzip stream (RFC 1952); several members are read one after another |
//! | 2 | snappy | the Java client's xerial `snappy-java` stream: `\x82SNAPPY\0`, version i32, compatible version i32, then blocks of length i32 (big-endian) + a raw snappy block (32 KiB of input each); concatenated streams and a bare raw snappy block (as librdkafka may send) are read too |
//! | 3 | lz4 | the LZ4 frame format, with a correct header checksum (magic ≥ 1) |
//! | 4 | zstd | zstd frames |
//!
//! [`Compression::decompress`] takes a limit on the output: a stream that would decompress to
//! more fails with [`CompressionError::TooLarge`] once the limit is passed, so a
//! decompression bomb costs at most `limit` bytes of memory.

use std::io::{Read, Write};

/// The magic that opens a xerial `snappy-java` stream.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Version and compatible version written after the magic, as `snappy-java` writes them.
const XERIAL_VERSION: i32 = 1;
/// Magic, version, compatible version.
const XERIAL_HEADER_LEN: usize = 16;
/// Uncompressed bytes per xerial block (`snappy-java`'s default block size).
const XERIAL_BLOCK: usize = 32 * 1024;
/// Largest zstd window accepted when decompressing: 2^27 (zstd's own default limit).
const ZSTD_WINDOW_LOG_MAX: u32 = 27;
/// Smallest zstd window limit, whatever the output limit: what the Java client's levels use.
const ZSTD_WINDOW_LOG_MIN: u32 = 23;
/// The zstd level the Java client uses by default.
const ZSTD_LEVEL: i32 = 3;

/// A record batch's compression codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Uncompressed (id 0).
    #[default]
    None,
    /// gzip (id 1).
    Gzip,
    /// snappy (id 2), xerial framing.
    Snappy,
    /// lz4 (id 3), LZ4 frame format.
    Lz4,
    /// zstd (id 4).
    Zstd,
}

/// Compressing or decompressing failed.
#[derive(Debug, thiserror::Error)]
pub enum CompressionError {
    /// Attribute bits 0-2 name no codec (5, 6 or 7).
    #[error("unknown compression codec id {id}")]
    Unknown {
        /// The id found.
        id: u8,
    },
    /// The output would pass the limit.
    #[error("{codec:?} data decompresses to more than the limit of {limit} bytes")]
    TooLarge {
        /// The codec.
        codec: Compression,
        /// The limit in bytes.
        limit: usize,
    },
    /// The input is not valid for the codec.
    #[error("{codec:?} data is corrupt: {reason}")]
    Corrupt {
        /// The codec.
        codec: Compression,
        /// What the decoder reported.
        reason: String,
    },
    /// The encoder failed.
    #[error("{codec:?} compression failed: {reason}")]
    Encode {
        /// The codec.
        codec: Compression,
        /// What the encoder reported.
        reason: String,
    },
}

impl Compression {
    /// The codec of a batch's attributes (bits 0-2).
    pub fn from_attributes(attributes: i16) -> Result<Self, CompressionError> {
        // Masked to three bits, so the cast cannot truncate.
        Self::from_id((attributes & 0x07) as u8)
    }

    /// The codec with id `id`.
    pub fn from_id(id: u8) -> Result<Self, CompressionError> {
        match id {
            0 => Ok(Self::None),
            1 => Ok(Self::Gzip),
            2 => Ok(Self::Snappy),
            3 => Ok(Self::Lz4),
            4 => Ok(Self::Zstd),
            _ => Err(CompressionError::Unknown { id }),
        }
    }

    /// The codec's id, as in attributes bits 0-2.
    pub fn id(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Gzip => 1,
            Self::Snappy => 2,
            Self::Lz4 => 3,
            Self::Zstd => 4,
        }
    }

    /// Compresses `data` the way the Java client does (xerial framing for snappy, 64 KiB
    /// independent blocks for lz4, level 3 for zstd). [`Compression::None`] copies.
    pub fn compress(self, data: &[u8]) -> Result<Vec<u8>, CompressionError> {
        let encode = |e: &dyn std::fmt::Display| CompressionError::Encode {
            codec: self,
            reason: e.to_string(),
        };
        match self {
            Self::None => Ok(data.to_vec()),
            Self::Gzip => {
                let mut enc =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                enc.write_all(data).map_err(|e| encode(&e))?;
                enc.finish().map_err(|e| encode(&e))
            }
            Self::Snappy => xerial_compress(data).map_err(|e| encode(&e)),
            Self::Lz4 => {
                let info = lz4_flex::frame::FrameInfo::new()
                    .block_size(lz4_flex::frame::BlockSize::Max64KB)
                    .block_mode(lz4_flex::frame::BlockMode::Independent);
                let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
                enc.write_all(data).map_err(|e| encode(&e))?;
                enc.finish().map_err(|e| encode(&e))
            }
            Self::Zstd => zstd::stream::encode_all(data, ZSTD_LEVEL).map_err(|e| encode(&e)),
        }
    }

    /// Decompresses `data`, failing with [`CompressionError::TooLarge`] if the output would
    /// pass `limit` bytes. Bytes after the end of the compressed stream are ignored.
    pub fn decompress(self, data: &[u8], limit: usize) -> Result<Vec<u8>, CompressionError> {
        match self {
            Self::None => {
                if data.len() > limit {
                    return Err(CompressionError::TooLarge { codec: self, limit });
                }
                Ok(data.to_vec())
            }
            Self::Gzip => self.read_capped(flate2::read::MultiGzDecoder::new(data), limit),
            Self::Snappy => snappy_decompress(data, limit),
            Self::Lz4 => self.read_capped(lz4_flex::frame::FrameDecoder::new(data), limit),
            Self::Zstd => {
                let mut dec =
                    zstd::stream::read::Decoder::with_buffer(data).map_err(|e| self.corrupt(&e))?;
                dec.window_log_max(zstd_window_log(limit))
                    .map_err(|e| self.corrupt(&e))?;
                self.read_capped(dec, limit)
            }
        }
    }

    fn corrupt(self, e: &dyn std::fmt::Display) -> CompressionError {
        CompressionError::Corrupt {
            codec: self,
            reason: e.to_string(),
        }
    }

    /// Reads `reader` to its end, at most `limit` bytes (one more shows the limit passed).
    fn read_capped(self, reader: impl Read, limit: usize) -> Result<Vec<u8>, CompressionError> {
        let mut out = Vec::new();
        let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
        reader
            .take(cap)
            .read_to_end(&mut out)
            .map_err(|e| self.corrupt(&e))?;
        if out.len() > limit {
            return Err(CompressionError::TooLarge { codec: self, limit });
        }
        Ok(out)
    }
}

/// The zstd window limit for an output limit: the limit's size class, within
/// [`ZSTD_WINDOW_LOG_MIN`, `ZSTD_WINDOW_LOG_MAX`].
fn zstd_window_log(limit: usize) -> u32 {
    let bits = usize::BITS - limit.leading_zeros();
    bits.clamp(ZSTD_WINDOW_LOG_MIN, ZSTD_WINDOW_LOG_MAX)
}

fn xerial_compress(data: &[u8]) -> Result<Vec<u8>, snap::Error> {
    let mut out = Vec::with_capacity(XERIAL_HEADER_LEN + data.len() / 2);
    out.extend_from_slice(&XERIAL_MAGIC);
    out.extend_from_slice(&XERIAL_VERSION.to_be_bytes());
    out.extend_from_slice(&XERIAL_VERSION.to_be_bytes());
    let mut enc = snap::raw::Encoder::new();
    for chunk in data.chunks(XERIAL_BLOCK) {
        let block = enc.compress_vec(chunk)?;
        // A block of at most 32 KiB compresses to well under 2 GiB.
        let len = i32::try_from(block.len()).map_err(|_| snap::Error::TooBig {
            given: block.len() as u64,
            max: i32::MAX as u64,
        })?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&block);
    }
    Ok(out)
}

/// Snappy in xerial framing (detected by its magic) or as one raw block.
fn snappy_decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, CompressionError> {
    let codec = Compression::Snappy;
    let corrupt = |reason: String| CompressionError::Corrupt { codec, reason };
    let mut dec = snap::raw::Decoder::new();
    let mut out = Vec::new();
    let mut block = |input: &[u8], out: &mut Vec<u8>| -> Result<(), CompressionError> {
        let len = snap::raw::decompress_len(input).map_err(|e| corrupt(e.to_string()))?;
        let start = out.len();
        let end = start
            .checked_add(len)
            .filter(|&end| end <= limit)
            .ok_or(CompressionError::TooLarge { codec, limit })?;
        out.resize(end, 0);
        let n = dec
            .decompress(input, &mut out[start..])
            .map_err(|e| corrupt(e.to_string()))?;
        out.truncate(start + n);
        Ok(())
    };
    let Some(mut rest) = data
        .strip_prefix(&XERIAL_MAGIC)
        .filter(|_| data.len() >= XERIAL_HEADER_LEN)
    else {
        block(data, &mut out)?;
        return Ok(out);
    };
    // The versions are informational; snappy-java reads any.
    rest = rest
        .get(XERIAL_HEADER_LEN - XERIAL_MAGIC.len()..)
        .unwrap_or(&[]);
    while !rest.is_empty() {
        // snappy-java reads concatenated streams: a header again where a block length would
        // be (a block length never starts with 0x82, which would make it negative).
        if rest.len() >= XERIAL_HEADER_LEN && rest.starts_with(&XERIAL_MAGIC) {
            rest = &rest[XERIAL_HEADER_LEN..];
            continue;
        }
        let (len, after) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| corrupt(format!("{} bytes left for a block length", rest.len())))?;
        let len = i32::from_be_bytes(*len);
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len <= after.len())
            .ok_or_else(|| {
                corrupt(format!(
                    "block length {len} with {} bytes left",
                    after.len()
                ))
            })?;
        let (input, after) = after.split_at(len);
        block(input, &mut out)?;
        rest = after;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    fn sample(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8 ^ (i / 1000) as u8).collect()
    }

    #[test]
    fn every_codec_round_trips_empty_small_and_multi_block_data() {
        for codec in ALL {
            for n in [0, 1, 100, XERIAL_BLOCK, XERIAL_BLOCK + 1, 200_000] {
                let data = sample(n);
                let packed = codec.compress(&data).expect("compress");
                let back = codec.decompress(&packed, n).expect("decompress");
                assert_eq!(back, data, "{codec:?}, {n} bytes");
            }
        }
    }

    #[test]
    fn ids_match_the_attribute_bits() {
        for codec in ALL {
            assert_eq!(Compression::from_id(codec.id()).expect("id"), codec);
            assert_eq!(
                Compression::from_attributes(0x7ff8 | i16::from(codec.id())).expect("attrs"),
                codec
            );
        }
        for id in 5..8 {
            assert!(matches!(
                Compression::from_id(id),
                Err(CompressionError::Unknown { id: got }) if got == id
            ));
        }
    }

    #[test]
    fn output_over_the_limit_is_refused_for_every_codec() {
        let data = vec![0u8; 100_000];
        for codec in ALL {
            let packed = codec.compress(&data).expect("compress");
            assert!(codec.decompress(&packed, data.len()).is_ok());
            let err = codec
                .decompress(&packed, data.len() - 1)
                .expect_err("limit");
            assert!(
                matches!(err, CompressionError::TooLarge { limit, .. } if limit == data.len() - 1),
                "{codec:?}: {err}"
            );
        }
    }

    #[test]
    fn a_gzip_bomb_fails_at_the_limit_without_allocating_its_size() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..100 {
            enc.write_all(&zeros).expect("write");
        }
        let bomb = enc.finish().expect("finish");
        assert!(bomb.len() < 200_000, "{} bytes", bomb.len());
        let err = Compression::Gzip
            .decompress(&bomb, 1 << 20)
            .expect_err("bomb");
        assert!(matches!(err, CompressionError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn snappy_reads_raw_blocks_and_xerial_streams() {
        let data = sample(70_000);
        let raw = snap::raw::Encoder::new()
            .compress_vec(&data)
            .expect("compress");
        assert_eq!(
            Compression::Snappy
                .decompress(&raw, data.len())
                .expect("raw"),
            data
        );
        let xerial = Compression::Snappy.compress(&data).expect("compress");
        assert_eq!(&xerial[..8], &XERIAL_MAGIC);
        assert_eq!(&xerial[8..16], &[0, 0, 0, 1, 0, 0, 0, 1]);
        // A raw block that claims more than the limit is refused before decoding.
        assert!(matches!(
            Compression::Snappy.decompress(&raw, 69_999),
            Err(CompressionError::TooLarge { .. })
        ));
    }

    #[test]
    fn snappy_reads_concatenated_xerial_streams() {
        let mut two = Compression::Snappy.compress(b"first ").expect("compress");
        two.extend_from_slice(&Compression::Snappy.compress(b"second").expect("compress"));
        assert_eq!(
            Compression::Snappy
                .decompress(&two, 100)
                .expect("two streams"),
            b"first second"
        );
    }

    #[test]
    fn snappy_xerial_block_lengths_past_the_end_are_corrupt() {
        let mut xerial = Compression::Snappy
            .compress(b"hello hello")
            .expect("compress");
        xerial[16..20].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(
            Compression::Snappy.decompress(&xerial, 1 << 20),
            Err(CompressionError::Corrupt { .. })
        ));
        xerial[16..20].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(Compression::Snappy.decompress(&xerial, 1 << 20).is_err());
        xerial.truncate(18);
        assert!(Compression::Snappy.decompress(&xerial, 1 << 20).is_err());
    }

    #[test]
    fn lz4_frames_use_independent_64k_blocks_without_checksums() {
        let packed = Compression::Lz4.compress(b"abc").expect("compress");
        assert_eq!(&packed[..4], &[0x04, 0x22, 0x4d, 0x18]);
        // FLG: version 01, block independence; BD: 64 KiB blocks. As the Java client writes.
        assert_eq!(packed[4], 0x60);
        assert_eq!(packed[5], 0x40);
    }

    #[test]
    fn garbage_is_an_error_for_every_codec() {
        let junk = [0x13u8, 0x37, 0xff, 0x00, 0x42, 0x99, 0x01, 0x02];
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            for n in 0..=junk.len() {
                let _ = codec.decompress(&junk[..n], 1 << 16);
            }
            assert!(codec.decompress(&junk, 1 << 16).is_err(), "{codec:?}");
        }
    }
}
