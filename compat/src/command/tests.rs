use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use super::*;
use crate::frame;
use crate::header::tests_support::arb_header;
use crate::limits::FrameLimits;

fn round_trip(cmd: &RemotingCommand) -> RemotingCommand {
    let mut buf = BytesMut::new();
    cmd.encode(&mut buf);
    let f = frame::decode(&mut buf, &FrameLimits::default())
        .unwrap()
        .unwrap();
    assert!(buf.is_empty());
    RemotingCommand::decode(f).unwrap()
}

#[test]
fn request_and_response_have_the_server_defaults() {
    let r = RemotingCommand::request(105, 9);
    assert_eq!(
        (r.code, r.opaque, r.flag, r.version),
        (105, 9, 0, SERVER_VERSION)
    );
    assert_eq!(
        (r.language, r.serialize_type),
        (LanguageCode::Java, SerializeType::Json)
    );
    assert!(!r.is_response() && !r.is_oneway());
    let s = RemotingCommand::response(9, ResponseCode::TopicNotExist, Some("no".into()));
    assert_eq!((s.code, s.opaque, s.flag), (17, 9, FLAG_RESPONSE));
    assert!(s.is_response());
    assert_eq!(s.response_code(), ResponseCode::TopicNotExist);
}

#[test]
fn replies_mirror_the_request_encoding_except_for_cpp() {
    let mut req = RemotingCommand::request(34, 5);
    req.serialize_type = SerializeType::RocketMq;
    assert_eq!(
        req.response_to(ResponseCode::Success, None).serialize_type,
        SerializeType::RocketMq
    );
    req.language = LanguageCode::Cpp;
    let resp = req.response_to(ResponseCode::Success, None);
    assert_eq!((resp.serialize_type, resp.opaque), (SerializeType::Json, 5));
}

#[test]
fn binary_commands_round_trip_through_a_frame() {
    let mut cmd = RemotingCommand::request(310, 77).with_body(Bytes::from_static(b"payload"));
    cmd.serialize_type = SerializeType::RocketMq;
    cmd.put_ext("b", "TopicTest");
    cmd.remark = Some("r".into());
    assert_eq!(round_trip(&cmd), cmd);
}

#[test]
fn codes_beyond_i16_are_sent_as_json_even_when_binary_was_asked() {
    let mut cmd = RemotingCommand::request(200_050, 1);
    cmd.serialize_type = SerializeType::RocketMq;
    let back = round_trip(&cmd);
    assert_eq!(back.serialize_type, SerializeType::Json);
    assert_eq!(back.code, 200_050);
}

#[test]
fn a_malformed_header_is_a_bad_header_frame_error() {
    let f = Frame {
        serialize_type: SerializeType::Json,
        header: Bytes::from_static(b"{nope"),
        body: Bytes::new(),
    };
    assert!(matches!(
        RemotingCommand::decode(f),
        Err(FrameError::BadHeader(_))
    ));
    let f = Frame {
        serialize_type: SerializeType::RocketMq,
        header: Bytes::from_static(&[0, 1]),
        body: Bytes::new(),
    };
    assert!(matches!(
        RemotingCommand::decode(f),
        Err(FrameError::BadHeader(_))
    ));
}

proptest! {
    #[test]
    fn json_commands_round_trip(h in arb_header(), body in proptest::collection::vec(any::<u8>(), 0..64)) {
        let cmd = RemotingCommand::from_header(h, SerializeType::Json, body.into());
        prop_assert_eq!(round_trip(&cmd), cmd);
    }
}
