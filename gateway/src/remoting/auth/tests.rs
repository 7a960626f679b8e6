//! The check against an in-memory meta: signatures of captured client frames, users'
//! states, authorization, what meta holds, and what happens when meta cannot be read.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use bytes::BytesMut;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::auth::{AclInfo, PolicyEntryInfo, PolicyInfo};
use stratus_compat::{FrameLimits, RequestCode, frame};
use stratus_meta::MetaStore;

use super::crypto::sign;
use super::model::{Acl, UserStatus, UserType};
use super::{Auth, USERS_NS, User};
use crate::config::AuthSettings;
use crate::error::GatewayError;

const KEY: &str = "an-encryption-key-for-tests";

fn settings(adjust: impl FnOnce(&mut AuthSettings)) -> AuthSettings {
    let mut s = AuthSettings {
        authentication_enabled: true,
        authorization_enabled: true,
        encryption_key: Some(KEY.into()),
        ..AuthSettings::default()
    };
    adjust(&mut s);
    s
}

async fn meta() -> Arc<dyn MetaStore> {
    stratus_meta::open("memory://").await.expect("meta")
}

fn user(name: &str, password: &str, kind: UserType, status: UserStatus) -> User {
    User {
        name: name.into(),
        password: password.into(),
        kind,
        status,
    }
}

const IP: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

fn remark(r: Result<(), GatewayError>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(GatewayError::AccessDenied(m)) => m,
        Err(e) => panic!("not an access refusal: {e}"),
    }
}

/// A request signed as a Java client signs it.
fn signed(code: RequestCode, fields: &[(&str, &str)], ak: &str, sk: &str) -> RemotingCommand {
    let mut c = RemotingCommand::request(code.to_i32(), 1).with_body(&b"body"[..]);
    c.version = 500;
    for (k, v) in fields {
        c.put_ext(k, v);
    }
    c.put_ext("AccessKey", ak);
    let sig = sign(sk, &stratus_compat::acl::signing_content(&c, &[]));
    c.put_ext("Signature", sig);
    c
}

/// Every captured frame signed by `stratusAK` (`compat/tests/vectors`).
fn captured_signed_frames() -> Vec<(String, RemotingCommand)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../compat/tests/vectors");
    let mut out = Vec::new();
    for client in ["cpp-1.x", "cpp-2.1", "rust-1.0"] {
        let dir = root.join(client);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .expect("vector folder")
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "bin"))
            .collect();
        names.sort();
        for path in names {
            let raw = std::fs::read(&path).expect("read");
            let mut buf = BytesMut::from(&raw[..]);
            let f = frame::decode(&mut buf, &FrameLimits::default())
                .expect("frame")
                .expect("complete");
            let cmd = RemotingCommand::decode(f).expect("command");
            if cmd.ext_fields.get("AccessKey").map(String::as_str) == Some("stratusAK") {
                out.push((path.display().to_string(), cmd));
            }
        }
    }
    out
}

#[tokio::test]
async fn captured_client_signatures_verify_and_a_wrong_secret_does_not() {
    let frames = captured_signed_frames();
    assert!(frames.len() >= 13, "{} signed frames", frames.len());
    let m = meta().await;
    // Authentication only, name-server codes checked too (routes are among the frames).
    let auth = Auth::new(
        &settings(|s| {
            s.authorization_enabled = false;
            s.namesrv_checks = true;
        }),
        "DefaultCluster",
    );
    auth.put_user(
        m.as_ref(),
        &user(
            "stratusAK",
            "stratusSK",
            UserType::Normal,
            UserStatus::Enable,
        ),
    )
    .await
    .expect("put");
    for (name, cmd) in &frames {
        assert_eq!(remark(auth.check(cmd, IP)), "ok", "{name}");
        let mut tampered = cmd.clone();
        tampered.body = bytes::Bytes::from_static(b"tampered");
        if tampered.body != cmd.body {
            assert_eq!(
                remark(auth.check(&tampered, IP)),
                "check signature failed.",
                "{name}"
            );
        }
    }
    auth.put_user(
        m.as_ref(),
        &user("stratusAK", "otherSK", UserType::Normal, UserStatus::Enable),
    )
    .await
    .expect("update");
    for (name, cmd) in &frames {
        assert_eq!(
            remark(auth.check(cmd, IP)),
            "check signature failed.",
            "{name}"
        );
    }
}

#[tokio::test]
async fn unknown_disabled_unsigned_and_anonymous_requests_are_refused() {
    let m = meta().await;
    let auth = Auth::new(&settings(|s| s.authorization_enabled = false), "c");
    auth.put_user(
        m.as_ref(),
        &user("alice", "alice-sk", UserType::Normal, UserStatus::Enable),
    )
    .await
    .expect("put");
    auth.put_user(
        m.as_ref(),
        &user("dave", "dave-sk", UserType::Normal, UserStatus::Disable),
    )
    .await
    .expect("put");
    let send = |ak, sk| {
        signed(
            RequestCode::SendMessageV2,
            &[("b", "T"), ("a", "pg")],
            ak,
            sk,
        )
    };
    assert_eq!(remark(auth.check(&send("alice", "alice-sk"), IP)), "ok");
    assert_eq!(
        remark(auth.check(&send("alice", "wrong"), IP)),
        "check signature failed."
    );
    assert_eq!(
        remark(auth.check(&send("bob", "x"), IP)),
        "User:bob is not found."
    );
    assert_eq!(
        remark(auth.check(&send("dave", "dave-sk"), IP)),
        "User:dave is disabled."
    );
    let mut unsigned = send("alice", "alice-sk");
    unsigned.ext_fields.remove("Signature");
    assert_eq!(remark(auth.check(&unsigned, IP)), "check signature failed.");
    let mut anonymous = RemotingCommand::request(RequestCode::SendMessageV2.to_i32(), 1);
    anonymous.put_ext("b", "T");
    assert_eq!(
        remark(auth.check(&anonymous, IP)),
        "username cannot be null."
    );
    // `_UNIQUE_KEY_QUERY` is not signed by clients up to V4_9_3.
    let mut old = RemotingCommand::request(RequestCode::QueryMessage.to_i32(), 1);
    old.version = 399;
    old.put_ext("topic", "T");
    old.put_ext("AccessKey", "alice");
    let content = stratus_compat::acl::signing_content(&old, &[]);
    old.put_ext("_UNIQUE_KEY_QUERY", "true");
    old.put_ext("Signature", sign("alice-sk", &content));
    assert_eq!(remark(auth.check(&old, IP)), "ok");
    old.version = 400;
    assert_eq!(remark(auth.check(&old, IP)), "check signature failed.");
}

#[tokio::test]
async fn whitelisted_and_name_server_codes_pass_and_broker_codes_never_do() {
    let auth = Auth::new(
        &settings(|s| s.whitelist = vec![RequestCode::HeartBeat.to_i32()]),
        "c",
    );
    let m = meta().await;
    auth.refresh(m.as_ref()).await.expect("load");
    let bare = |code: RequestCode| {
        let mut c = RemotingCommand::request(code.to_i32(), 1);
        c.put_ext("topic", "T");
        c
    };
    assert_eq!(
        remark(auth.check(&bare(RequestCode::GetRouteinfoByTopic), IP)),
        "ok"
    );
    assert_eq!(
        remark(auth.check(&bare(RequestCode::GetBrokerClusterInfo), IP)),
        "ok"
    );
    assert_eq!(remark(auth.check(&bare(RequestCode::HeartBeat), IP)), "ok");
    assert_eq!(
        remark(auth.check(&bare(RequestCode::PullMessage), IP)),
        "username cannot be null."
    );
    let strict = Auth::new(&settings(|s| s.namesrv_checks = true), "c");
    strict.refresh(m.as_ref()).await.expect("load");
    assert_eq!(
        remark(strict.check(&bare(RequestCode::GetRouteinfoByTopic), IP)),
        "username cannot be null."
    );
}

fn acl(subject: &str, resource: &str, actions: &[&str], decision: &str) -> Acl {
    let info = AclInfo {
        subject: Some(subject.into()),
        policies: Some(vec![PolicyInfo {
            policy_type: None,
            entries: Some(vec![PolicyEntryInfo {
                resource: Some(resource.into()),
                actions: Some(actions.iter().map(|a| (*a).to_owned()).collect()),
                source_ips: None,
                decision: Some(decision.into()),
            }]),
        }]),
    };
    Acl::from_info(&info, None).expect("acl")
}

#[tokio::test]
async fn normal_users_need_an_allowing_entry_and_super_users_do_not() {
    let m = meta().await;
    let auth = Auth::new(&settings(|_| {}), "DefaultCluster");
    let meta = m.as_ref();
    auth.put_user(
        meta,
        &user("root", "root-sk", UserType::Super, UserStatus::Enable),
    )
    .await
    .expect("put");
    auth.put_user(
        meta,
        &user("pub", "pub-sk", UserType::Normal, UserStatus::Enable),
    )
    .await
    .expect("put");
    auth.put_acl(meta, &acl("User:pub", "Topic:T", &["Pub"], "Allow"))
        .await
        .expect("acl");
    let send = |topic: &str, ak, sk| {
        signed(
            RequestCode::SendMessageV2,
            &[("b", topic), ("a", "pg")],
            ak,
            sk,
        )
    };
    assert_eq!(remark(auth.check(&send("T", "pub", "pub-sk"), IP)), "ok");
    assert_eq!(
        remark(auth.check(&send("U", "pub", "pub-sk"), IP)),
        "User:pub has no permission to access Topic:U from 127.0.0.1, no matched policies."
    );
    let pull = signed(
        RequestCode::PullMessage,
        &[("topic", "T"), ("consumerGroup", "g")],
        "pub",
        "pub-sk",
    );
    assert!(
        remark(auth.check(&pull, IP)).contains("Topic:T"),
        "Pub is not Sub"
    );
    assert_eq!(
        remark(auth.check(&send("U", "root", "root-sk"), IP)),
        "ok",
        "super"
    );
    let admin = signed(
        RequestCode::AuthCreateUser,
        &[("username", "x")],
        "pub",
        "pub-sk",
    );
    assert!(remark(auth.check(&admin, IP)).contains("Cluster:DefaultCluster"));
    // A deny entry wins over a broader allow.
    auth.put_acl(meta, &acl("User:pub", "Topic:*", &["Pub"], "Allow"))
        .await
        .expect("acl");
    auth.put_acl(meta, &acl("User:pub", "Topic:T", &["Pub"], "Deny"))
        .await
        .expect("acl");
    let mut merged = auth
        .get_acl(meta, "User:pub")
        .await
        .expect("get")
        .expect("acl");
    merged.merge(acl("User:pub", "Topic:*", &["Pub"], "Allow").policies);
    auth.put_acl(meta, &merged).await.expect("acl");
    assert!(remark(auth.check(&send("T", "pub", "pub-sk"), IP)).ends_with("the decision is deny."));
    assert_eq!(remark(auth.check(&send("V", "pub", "pub-sk"), IP)), "ok");
}

#[tokio::test]
async fn passwords_are_sealed_in_meta_and_the_rules_survive_meta_going_away() {
    let m = meta().await;
    let auth = Auth::new(&settings(|_| {}), "c");
    auth.put_user(
        m.as_ref(),
        &user(
            "alice",
            "very-secret-password",
            UserType::Super,
            UserStatus::Enable,
        ),
    )
    .await
    .expect("put");
    let row = m
        .get_kv(USERS_NS, "alice")
        .await
        .expect("get")
        .expect("row");
    assert!(!row.contains("very-secret-password"), "{row}");
    assert!(row.contains("passwordSealed"), "{row}");
    let back = auth
        .get_user(m.as_ref(), "alice")
        .await
        .expect("get")
        .expect("user");
    assert_eq!(back.password, "very-secret-password");
    // Another node without this key cannot read it (and leaves the user out).
    let other = Auth::new(
        &settings(|s| s.encryption_key = Some("a-different-key-altogether".into())),
        "c",
    );
    other.refresh(m.as_ref()).await.expect("load");
    let req = signed(
        RequestCode::SendMessageV2,
        &[("b", "T")],
        "alice",
        "very-secret-password",
    );
    assert_eq!(remark(other.check(&req, IP)), "User:alice is not found.");
    assert!(other.get_user(m.as_ref(), "alice").await.is_err());

    // Meta unreadable: the last rules stay in force.
    assert_eq!(remark(auth.check(&req, IP)), "ok");
    let bad = signed(RequestCode::SendMessageV2, &[("b", "T")], "alice", "guess");
    m.close().await;
    assert!(auth.refresh(m.as_ref()).await.is_err());
    assert_eq!(remark(auth.check(&req, IP)), "ok");
    assert_eq!(remark(auth.check(&bad, IP)), "check signature failed.");
    // A node whose first load failed refuses what it cannot check.
    let fresh = Auth::new(&settings(|_| {}), "c");
    assert!(fresh.refresh(m.as_ref()).await.is_err());
    assert_eq!(
        remark(fresh.check(&req, IP)),
        "access control data is not loaded from meta yet"
    );
}

#[tokio::test]
async fn the_bootstrap_user_is_created_once_and_kept() {
    let m = meta().await;
    let s = settings(|s| {
        s.init_user = Some("root".into());
        s.init_password = Some("root-password".into());
    });
    let auth = Auth::new(&s, "c");
    auth.ensure_init_user(m.as_ref()).await.expect("init");
    let u = auth
        .get_user(m.as_ref(), "root")
        .await
        .expect("get")
        .expect("root");
    assert_eq!((u.kind, u.status), (UserType::Super, UserStatus::Enable));
    // Changed in meta since (a new password): a restart keeps it.
    auth.put_user(
        m.as_ref(),
        &user("root", "rotated", UserType::Super, UserStatus::Enable),
    )
    .await
    .expect("put");
    auth.ensure_init_user(m.as_ref()).await.expect("init again");
    let u = auth
        .get_user(m.as_ref(), "root")
        .await
        .expect("get")
        .expect("root");
    assert_eq!(u.password, "rotated");
}
