//! `RemotingClient` and `RemotingCodec` against a scripted server on loopback.
#![cfg(feature = "client")]

use std::time::Duration;

use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use stratus_compat::client::{ClientError, RemotingClient};
use stratus_compat::codec::{CodecError, RemotingCodec};
use stratus_compat::command::{FLAG_ONEWAY, RemotingCommand};
use stratus_compat::{FrameError, RequestCode, ResponseCode, SerializeType};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Framed;

type ServerConn = Framed<TcpStream, RemotingCodec>;

async fn listen() -> (TcpListener, std::net::SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("listener address");
    (listener, addr)
}

async fn accept(listener: &TcpListener) -> ServerConn {
    let (stream, _) = listener.accept().await.expect("accept");
    Framed::new(stream, RemotingCodec::default())
}

const LONG: Duration = Duration::from_secs(30);

#[tokio::test]
async fn concurrent_calls_are_matched_by_opaque_when_replies_come_out_of_order() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let mut conn = accept(&listener).await;
        let mut requests = Vec::new();
        for _ in 0..8 {
            requests.push(conn.next().await.unwrap().unwrap());
        }
        for req in requests.iter().rev() {
            let mut resp = req.response_to(ResponseCode::Success, None);
            resp.put_ext("echo", &req.ext_fields["n"]);
            conn.send(resp).await.unwrap();
        }
        requests
    });
    let client = std::sync::Arc::new(RemotingClient::connect(addr).await.unwrap());
    let mut calls = Vec::new();
    for n in 0..8 {
        let client = std::sync::Arc::clone(&client);
        calls.push(tokio::spawn(async move {
            let mut cmd = RemotingCommand::request(RequestCode::HeartBeat.to_i32(), 0);
            cmd.put_ext("n", n);
            if n % 2 == 0 {
                cmd.serialize_type = SerializeType::RocketMq;
            }
            let resp = client.invoke(cmd, LONG).await.unwrap();
            (n, resp)
        }));
    }
    for call in calls {
        let (n, resp) = call.await.unwrap();
        assert_eq!(resp.ext_fields["echo"], n.to_string());
        assert_eq!(resp.response_code(), ResponseCode::Success);
        let want = if n % 2 == 0 {
            SerializeType::RocketMq
        } else {
            SerializeType::Json
        };
        assert_eq!(resp.serialize_type, want);
    }
    let requests = server.await.unwrap();
    let mut opaques: Vec<_> = requests.iter().map(|r| r.opaque).collect();
    opaques.sort_unstable();
    opaques.dedup();
    assert_eq!(opaques.len(), 8, "opaques are unique");
}

#[tokio::test]
async fn requests_from_the_server_arrive_on_the_server_requests_queue() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let mut conn = accept(&listener).await;
        let mut notify =
            RemotingCommand::request(RequestCode::NotifyConsumerIdsChanged.to_i32(), 900);
        notify.mark_oneway();
        notify.put_ext("consumerGroup", "CG");
        conn.send(notify).await.unwrap();
        let mut running =
            RemotingCommand::request(RequestCode::GetConsumerRunningInfo.to_i32(), 901);
        running.put_ext("consumerGroup", "CG");
        conn.send(running).await.unwrap();
        // The client's reply to the synchronous request.
        conn.next().await.unwrap().unwrap()
    });
    let client = RemotingClient::connect(addr).await.unwrap();
    let mut requests = client.server_requests().unwrap();
    assert!(
        client.server_requests().is_none(),
        "the queue is handed out once"
    );
    let notify = requests.recv().await.unwrap();
    assert_eq!(notify.request_code(), RequestCode::NotifyConsumerIdsChanged);
    assert!(notify.is_oneway());
    let running = requests.recv().await.unwrap();
    assert_eq!(running.opaque, 901);
    client
        .send(&running.response_to(ResponseCode::Success, None))
        .await
        .unwrap();
    let reply = server.await.unwrap();
    assert!(reply.is_response());
    assert_eq!(reply.opaque, 901);
}

#[tokio::test(start_paused = true)]
async fn a_call_without_a_reply_times_out() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let mut conn = accept(&listener).await;
        let req = conn.next().await.unwrap().unwrap();
        (conn, req)
    });
    let client = RemotingClient::connect(addr).await.unwrap();
    let err = client
        .invoke(RemotingCommand::request(14, 0), Duration::from_millis(500))
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Timeout), "{err}");
    // The late reply is dropped and the connection stays usable.
    let (mut conn, req) = server.await.unwrap();
    conn.send(req.response_to(ResponseCode::Success, None))
        .await
        .unwrap();
    assert!(!client.is_closed());
}

#[tokio::test]
async fn calls_fail_as_closed_when_the_server_goes_away() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let mut conn = accept(&listener).await;
        let _ = conn.next().await;
        drop(conn);
    });
    let client = RemotingClient::connect(addr).await.unwrap();
    let err = client
        .invoke(RemotingCommand::request(14, 0), LONG)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Closed), "{err}");
    server.await.unwrap();
    assert!(client.is_closed());
    assert!(client.close_reason().is_some());
    let err = client
        .invoke(RemotingCommand::request(14, 0), LONG)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Closed), "{err}");
}

#[tokio::test]
async fn oneway_sets_the_flag_and_raw_bytes_reach_the_server_unchanged() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let mut conn = accept(&listener).await;
        let oneway = conn.next().await.unwrap().unwrap();
        let garbage = conn.next().await.unwrap();
        (oneway, garbage)
    });
    let client = RemotingClient::connect(addr).await.unwrap();
    client
        .invoke_oneway(RemotingCommand::request(15, 0))
        .await
        .unwrap();
    // A frame announcing serialize type 7.
    client
        .send_raw(vec![0u8, 0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0])
        .await
        .unwrap();
    let (oneway, garbage) = server.await.unwrap();
    assert_eq!(oneway.flag & FLAG_ONEWAY, FLAG_ONEWAY);
    assert!(matches!(
        garbage,
        Err(CodecError::Frame(FrameError::UnknownSerializeType(7)))
    ));
}

#[tokio::test]
async fn a_frame_error_from_the_server_closes_the_client() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let mut conn = accept(&listener).await;
        let _ = conn.next().await;
        use tokio::io::AsyncWriteExt;
        let stream = conn.get_mut();
        stream.write_all(&[0xff, 0xff, 0xff, 0xff]).await.unwrap();
        conn
    });
    let client = RemotingClient::connect(addr).await.unwrap();
    let err = client
        .invoke(RemotingCommand::request(14, 0), LONG)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Closed), "{err}");
    assert!(
        client
            .close_reason()
            .unwrap()
            .contains("invalid frame length")
    );
    drop(server.await.unwrap());
}

#[test]
fn the_codec_encodes_what_frame_decode_reads() {
    use tokio_util::codec::{Decoder, Encoder};
    let mut codec = RemotingCodec::default();
    let mut buf = BytesMut::new();
    let cmd = RemotingCommand::response(3, ResponseCode::SystemBusy, Some("[OVERLOAD]".into()));
    codec.encode(&cmd, &mut buf).unwrap();
    assert_eq!(codec.decode(&mut buf).unwrap(), Some(cmd));
    assert_eq!(codec.decode(&mut buf).unwrap(), None);
}
