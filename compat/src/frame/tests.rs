use bytes::BytesMut;
use proptest::prelude::*;

use super::*;

fn limits() -> FrameLimits {
    FrameLimits::try_new(1024, 256).unwrap()
}

fn frame_bytes(st: SerializeType, header: &[u8], body: &[u8]) -> BytesMut {
    let mut b = BytesMut::new();
    encode_frame(st, header, body, &mut b).unwrap();
    b
}

#[test]
fn documented_heart_beat_prefix_is_what_encode_writes() {
    // docs/remoting-protocol.md#worked-examples: binary HEART_BEAT, 21-byte header, no body.
    let header = [
        0x00, 0x22, 0x00, 0x01, 0x91, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    let b = frame_bytes(SerializeType::RocketMq, &header, &[]);
    assert_eq!(&b[..8], &[0, 0, 0, 0x19, 1, 0, 0, 0x15]);
}

#[test]
fn a_complete_frame_is_split_off_and_the_rest_is_kept() {
    let mut b = frame_bytes(SerializeType::Json, b"{}", b"body");
    b.extend_from_slice(&[0, 0]);
    let f = decode(&mut b, &limits()).unwrap().unwrap();
    assert_eq!(f.serialize_type, SerializeType::Json);
    assert_eq!(&f.header[..], b"{}");
    assert_eq!(&f.body[..], b"body");
    assert_eq!(&b[..], &[0, 0]);
}

#[test]
fn every_strict_prefix_of_a_frame_is_incomplete() {
    let full = frame_bytes(SerializeType::RocketMq, b"hdr", b"xyz");
    for cut in 0..full.len() {
        let mut b = BytesMut::from(&full[..cut]);
        assert_eq!(decode(&mut b, &limits()), Ok(None), "cut {cut}");
        assert_eq!(b.len(), cut);
    }
}

#[test]
fn cpp_plain_header_length_reads_as_json() {
    // The C++ client writes the header length without a type byte.
    let mut b = BytesMut::from(&[0u8, 0, 0, 6, 0, 0, 0, 2, b'{', b'}'][..]);
    let f = decode(&mut b, &limits()).unwrap().unwrap();
    assert_eq!(f.serialize_type, SerializeType::Json);
    assert!(f.body.is_empty());
}

#[test]
fn bad_lengths_are_rejected_before_the_frame_arrives() {
    let l = limits();
    let check = |bytes: &[u8], want: FrameError| {
        let mut b = BytesMut::from(bytes);
        assert_eq!(decode(&mut b, &l), Err(want));
    };
    check(&[0xff, 0xff, 0xff, 0xff], FrameError::BadLength(-1));
    check(&[0, 0, 0, 3], FrameError::BadLength(3));
    check(
        &[0, 0, 4, 1],
        FrameError::TooLarge {
            len: 1025,
            max: 1024,
        },
    );
    check(
        &[0, 0, 1, 0, 2, 0, 0, 0],
        FrameError::UnknownSerializeType(2),
    );
    check(
        &[0, 0, 1, 0, 0, 0, 1, 1],
        FrameError::HeaderTooLarge { len: 257, max: 256 },
    );
    check(
        &[0, 0, 0, 10, 0, 0, 0, 7],
        FrameError::HeaderTooLarge { len: 7, max: 6 },
    );
}

#[test]
fn a_frame_of_exactly_the_limit_is_accepted() {
    let body = vec![7u8; 1024 - 4 - 2];
    let mut b = frame_bytes(SerializeType::Json, b"{}", &body);
    let f = decode(&mut b, &limits()).unwrap().unwrap();
    assert_eq!(f.body.len(), body.len());
}

#[test]
fn encode_refuses_a_header_beyond_24_bits() {
    let header = vec![b' '; MAX_HEADER_FIELD + 1];
    let mut b = BytesMut::new();
    assert!(matches!(
        encode_frame(SerializeType::Json, &header, &[], &mut b),
        Err(FrameError::HeaderTooLarge { .. })
    ));
    assert!(b.is_empty());
}

proptest! {
    #[test]
    fn frame_round_trips(
        rocketmq in any::<bool>(),
        header in proptest::collection::vec(any::<u8>(), 0..200),
        body in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        let st = if rocketmq { SerializeType::RocketMq } else { SerializeType::Json };
        let mut b = frame_bytes(st, &header, &body);
        let f = decode(&mut b, &limits()).unwrap().unwrap();
        prop_assert_eq!(f.serialize_type, st);
        prop_assert_eq!(&f.header[..], &header[..]);
        prop_assert_eq!(&f.body[..], &body[..]);
        prop_assert!(b.is_empty());
    }

    #[test]
    fn frame_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut b = BytesMut::from(&bytes[..]);
        let _ = decode(&mut b, &limits());
    }
}
