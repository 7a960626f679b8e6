use std::net::{IpAddr, SocketAddr};

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use super::*;
use crate::message::sysflag::{self, BORNHOST_V6, STOREHOST_V6};

fn sample() -> MessageExt {
    MessageExt {
        queue_id: 3,
        flag: 0,
        queue_offset: 12,
        commit_log_offset: 79_369,
        sys_flag: 0,
        born_timestamp: 1_795_982_146_619,
        born_host: "127.0.0.1:50000".parse().unwrap(),
        store_timestamp: 1_795_982_146_700,
        store_host: "127.0.0.1:19911".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: Bytes::from_static(b"a-1"),
        topic: "TopicPush".into(),
        properties: "TAGS\u{1}TagA\u{2}".into(),
    }
}

fn encoded(m: &MessageExt) -> Bytes {
    let mut b = BytesMut::new();
    m.encode(&mut b);
    b.freeze()
}

#[test]
fn v1_record_has_the_documented_layout() {
    let m = sample();
    let b = encoded(&m);
    assert_eq!(b.len(), 91 + 3 + 9 + m.properties.len());
    assert_eq!(b.len(), m.encoded_len());
    assert_eq!(&b[0..4], &(b.len() as i32).to_be_bytes());
    assert_eq!(&b[4..8], &MAGIC_V1.to_be_bytes());
    assert_eq!(&b[8..12], &body_crc(b"a-1").to_be_bytes());
    assert_eq!(&b[28..36], &79_369i64.to_be_bytes());
    assert_eq!(&b[48..52], &[127, 0, 0, 1]);
    assert_eq!(&b[52..56], &50_000i32.to_be_bytes());
    assert_eq!(&b[84..88], &3i32.to_be_bytes());
    assert_eq!(&b[88..91], b"a-1");
    assert_eq!(b[91], 9);
    assert_eq!(&b[92..101], b"TopicPush");
    let mut src = b.clone();
    assert_eq!(MessageExt::decode(&mut src).unwrap(), m);
    assert!(src.is_empty());
}

#[test]
fn body_crc_is_masked_to_31_bits() {
    assert_eq!(body_crc(b""), 0);
    // crc32("123456789") = 0xCBF43926
    assert_eq!(body_crc(b"123456789"), 0x4BF4_3926);
}

#[test]
fn a_topic_over_127_bytes_uses_v2() {
    let m = MessageExt {
        topic: "t".repeat(128),
        ..sample()
    };
    let b = encoded(&m);
    assert_eq!(&b[4..8], &MAGIC_V2.to_be_bytes());
    assert_eq!(b.len(), m.encoded_len());
    assert_eq!(MessageExt::decode_all(b).unwrap(), vec![m]);
}

#[test]
fn ipv6_hosts_set_the_sysflag_bits_and_take_20_bytes() {
    let m = MessageExt {
        born_host: "[2001:db8::2]:4000".parse().unwrap(),
        store_host: "[::1]:10911".parse().unwrap(),
        sys_flag: sysflag::COMPRESSED,
        ..sample()
    };
    let b = encoded(&m);
    assert_eq!(b.len(), m.encoded_len());
    assert_eq!(b.len(), encoded(&sample()).len() + 24);
    let back = MessageExt::decode(&mut b.clone()).unwrap();
    assert_eq!(
        back.sys_flag,
        sysflag::COMPRESSED | BORNHOST_V6 | STOREHOST_V6
    );
    assert_eq!(back.born_host, m.born_host);
    assert_eq!(back.store_host, m.store_host);
}

#[test]
fn stale_v6_bits_are_cleared_for_ipv4_hosts() {
    let m = MessageExt {
        sys_flag: BORNHOST_V6 | STOREHOST_V6,
        ..sample()
    };
    assert_eq!(m.wire_sys_flag(), 0);
    let back = MessageExt::decode(&mut encoded(&m)).unwrap();
    assert_eq!(back.sys_flag, 0);
}

#[test]
fn several_records_decode_in_order() {
    let a = sample();
    let b = MessageExt {
        queue_offset: 13,
        body: Bytes::from_static(b"two"),
        ..sample()
    };
    let mut buf = BytesMut::new();
    a.encode(&mut buf);
    b.encode(&mut buf);
    assert_eq!(MessageExt::decode_all(buf.freeze()).unwrap(), vec![a, b]);
}

#[test]
fn truncated_or_inconsistent_records_are_errors_and_leave_the_input() {
    let full = encoded(&sample());
    for cut in 0..full.len() {
        let mut src = full.slice(..cut);
        assert!(MessageExt::decode(&mut src).is_err(), "cut {cut}");
        assert_eq!(src.len(), cut);
    }
    let mut bad_magic = BytesMut::from(&full[..]);
    bad_magic[4] = 0;
    assert!(matches!(
        MessageExt::decode(&mut bad_magic.freeze()),
        Err(MessageError::BadMagic(_))
    ));
    // TOTALSIZE one larger than the fields, with a spare byte present.
    let mut longer = BytesMut::from(&full[..]);
    longer[0..4].copy_from_slice(&(full.len() as i32 + 1).to_be_bytes());
    longer.extend_from_slice(&[0]);
    assert!(MessageExt::decode(&mut longer.freeze()).is_err());
    // A negative body length.
    let mut neg = BytesMut::from(&full[..]);
    neg[84..88].copy_from_slice(&(-5i32).to_be_bytes());
    assert!(matches!(
        MessageExt::decode(&mut neg.freeze()),
        Err(MessageError::BadLength { .. })
    ));
    // A port out of range.
    let mut port = BytesMut::from(&full[..]);
    port[52..56].copy_from_slice(&70_000i32.to_be_bytes());
    assert!(matches!(
        MessageExt::decode(&mut port.freeze()),
        Err(MessageError::BadPort(70_000, _))
    ));
}

#[test]
fn oversized_properties_cannot_be_encoded() {
    let m = MessageExt {
        properties: "x".repeat(40_000),
        ..sample()
    };
    let mut b = BytesMut::new();
    assert!(matches!(
        m.try_encode(&mut b),
        Err(MessageError::TooLong { .. })
    ));
    assert!(b.is_empty());
}

#[test]
fn offset_msg_id_uses_the_store_host_and_physical_offset() {
    let m = MessageExt {
        commit_log_offset: 0,
        ..sample()
    };
    assert_eq!(m.offset_msg_id(), "7F00000100004DC70000000000000000");
}

fn arb_host() -> impl Strategy<Value = SocketAddr> {
    (any::<IpAddr>(), any::<u16>()).prop_map(|(ip, port)| SocketAddr::new(ip, port))
}

prop_compose! {
    fn arb_message()(
        queue_id in any::<i32>(),
        flag in any::<i32>(),
        queue_offset in any::<i64>(),
        commit_log_offset in any::<i64>(),
        sys_flag in any::<i32>(),
        born_timestamp in any::<i64>(),
        born_host in arb_host(),
        store_timestamp in any::<i64>(),
        store_host in arb_host(),
        reconsume_times in any::<i32>(),
        prepared_transaction_offset in any::<i64>(),
        body in proptest::collection::vec(any::<u8>(), 0..64),
        topic in prop_oneof![".{0,30}", "[a-z]{120,200}"],
        properties in ".{0,60}",
    ) -> MessageExt {
        MessageExt {
            queue_id, flag, queue_offset, commit_log_offset, sys_flag, born_timestamp, born_host,
            store_timestamp, store_host, reconsume_times, prepared_transaction_offset,
            body: body.into(), topic, properties,
        }
    }
}

proptest! {
    #[test]
    fn message_records_round_trip(m in arb_message()) {
        let b = encoded(&m);
        prop_assert_eq!(b.len(), m.encoded_len());
        let magic = if m.topic.len() <= MAX_V1_TOPIC_LEN { MAGIC_V1 } else { MAGIC_V2 };
        prop_assert_eq!(&b[4..8], &magic.to_be_bytes());
        let mut src = b;
        let back = MessageExt::decode(&mut src).unwrap();
        prop_assert!(src.is_empty());
        let want = MessageExt { sys_flag: m.wire_sys_flag(), ..m };
        prop_assert_eq!(back, want);
    }

    #[test]
    fn message_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..160)) {
        let _ = MessageExt::decode_all(Bytes::from(bytes));
    }
}

#[test]
fn a_view_borrows_what_decoding_copies() {
    let mut long = sample();
    long.topic = "t".repeat(200);
    let mut v6 = sample();
    v6.born_host = "[::1]:5000".parse().unwrap();
    v6.store_host = "[::2]:10911".parse().unwrap();
    for m in [sample(), long, v6] {
        let bytes = encoded(&m);
        let full = MessageExt::decode(&mut bytes.clone()).unwrap();
        let view = MessageExt::view(&bytes).unwrap();
        assert_eq!(view.queue_offset, full.queue_offset);
        assert_eq!(view.sys_flag, full.sys_flag);
        assert_eq!(view.born_timestamp, full.born_timestamp);
        assert_eq!(view.store_timestamp, full.store_timestamp);
        assert_eq!(view.body, full.body);
        assert_eq!(view.properties_str(), full.properties);
        for cut in [0, 4, 30, bytes.len() - 1] {
            assert!(
                MessageExt::view(&bytes.slice(..cut)).is_err(),
                "cut at {cut}"
            );
        }
    }
}
