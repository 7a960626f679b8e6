//! ACL admin requests (3001–3010) and the access check, through dispatch on the test node.

use std::sync::Arc;

use stratus_compat::command::RemotingCommand;
use stratus_compat::request::auth::{
    AclInfo, AclSubjectHeader, DeleteAclRequestHeader, ListAclsRequestHeader,
    ListUsersRequestHeader, PolicyEntryInfo, PolicyInfo, UserInfo, UserRequestHeader,
};
use stratus_compat::{RequestCode, ResponseCode};
use tokio::sync::mpsc;

use crate::remoting::Remoting;
use crate::remoting::auth::crypto::sign;
use crate::remoting::net::Channel;
use crate::remoting::testing::{TestFront, channel, create_topic, dispatch, front_with};

const ROOT: (&str, &str) = ("root", "root-password");

async fn secured() -> (TestFront, Arc<Channel>, mpsc::Receiver<RemotingCommand>) {
    let t = front_with(|s| {
        s.auth.authentication_enabled = true;
        s.auth.authorization_enabled = true;
        s.auth.init_user = Some(ROOT.0.into());
        s.auth.init_password = Some(ROOT.1.into());
        s.auth.encryption_key = Some("processor-test-encryption-key".into());
    })
    .await;
    let meta = t.rmq.node.meta.clone();
    t.rmq
        .auth
        .ensure_init_user(meta.as_ref())
        .await
        .expect("init");
    t.rmq.auth.refresh(meta.as_ref()).await.expect("load");
    let (ch, rx) = channel(1);
    (t, ch, rx)
}

fn signed(mut cmd: RemotingCommand, (ak, sk): (&str, &str)) -> RemotingCommand {
    cmd.put_ext("AccessKey", ak);
    let sig = sign(sk, &stratus_compat::acl::signing_content(&cmd, &[]));
    cmd.put_ext("Signature", sig);
    cmd
}

fn request(
    code: RequestCode,
    write: impl FnOnce(&mut RemotingCommand),
    body: &impl serde::Serialize,
) -> RemotingCommand {
    let mut c = RemotingCommand::request(code.to_i32(), 7)
        .with_body(serde_json::to_vec(body).expect("json"));
    write(&mut c);
    c
}

fn user_req(code: RequestCode, name: &str, info: &UserInfo) -> RemotingCommand {
    request(
        code,
        |c| {
            UserRequestHeader {
                username: Some(name.into()),
            }
            .write_to(c)
        },
        info,
    )
}

fn info(password: &str, kind: Option<&str>) -> UserInfo {
    UserInfo {
        username: None,
        password: Some(password.into()),
        user_type: kind.map(str::to_owned),
        user_status: None,
    }
}

fn acl_body(resource: &str, actions: &[&str], decision: &str) -> AclInfo {
    AclInfo {
        subject: None,
        policies: Some(vec![PolicyInfo {
            policy_type: None,
            entries: Some(vec![PolicyEntryInfo {
                resource: Some(resource.into()),
                actions: Some(actions.iter().map(|a| (*a).to_owned()).collect()),
                source_ips: Some(vec!["127.0.0.0/8".into()]),
                decision: Some(decision.into()),
            }]),
        }]),
    }
}

fn acl_req(code: RequestCode, subject: &str, body: &AclInfo) -> RemotingCommand {
    request(
        code,
        |c| {
            AclSubjectHeader {
                subject: Some(subject.into()),
            }
            .write_to(c)
        },
        body,
    )
}

async fn run(
    rmq: &Arc<Remoting>,
    ch: &Arc<Channel>,
    rx: &mut mpsc::Receiver<RemotingCommand>,
    cmd: RemotingCommand,
    who: (&str, &str),
) -> (ResponseCode, String, Vec<u8>) {
    let r = dispatch(rmq, ch, rx, signed(cmd, who))
        .await
        .expect("an answer");
    (
        r.response_code(),
        r.remark.clone().unwrap_or_default(),
        r.body.to_vec(),
    )
}

#[tokio::test]
async fn users_are_created_repeated_listed_updated_and_deleted() {
    let (t, ch, mut rx) = secured().await;
    let rmq = &t.rmq;
    let alice = info("alice-sk", None);
    let (code, _, _) = run(
        rmq,
        &ch,
        &mut rx,
        user_req(RequestCode::AuthCreateUser, "alice", &alice),
        ROOT,
    )
    .await;
    assert_eq!(code, ResponseCode::Success);
    // The same write again (one per shard from mqadmin) succeeds; a different one does not.
    let again = run(
        rmq,
        &ch,
        &mut rx,
        user_req(RequestCode::AuthCreateUser, "alice", &alice),
        ROOT,
    )
    .await;
    assert_eq!(again.0, ResponseCode::Success);
    let other = run(
        rmq,
        &ch,
        &mut rx,
        user_req(RequestCode::AuthCreateUser, "alice", &info("x", None)),
        ROOT,
    )
    .await;
    assert_eq!(
        (other.0, other.1.as_str()),
        (ResponseCode::NoPermission, "The user is existed")
    );
    let blank = run(
        rmq,
        &ch,
        &mut rx,
        user_req(RequestCode::AuthCreateUser, "", &alice),
        ROOT,
    )
    .await;
    assert_eq!(
        (blank.0, blank.1.as_str()),
        (ResponseCode::InvalidParameter, "The username is blank")
    );
    let nopw = run(
        rmq,
        &ch,
        &mut rx,
        user_req(RequestCode::AuthCreateUser, "carol", &info("", None)),
        ROOT,
    )
    .await;
    assert_eq!(
        (nopw.0, nopw.1.as_str()),
        (ResponseCode::NoPermission, "password can not be blank")
    );

    // A normal user may not make super users (nor, without an ACL, do anything admin).
    let create_acl = acl_req(
        RequestCode::AuthCreateAcl,
        "User:alice",
        &acl_body("Cluster:DefaultCluster", &["Update", "Get"], "Allow"),
    );
    assert_eq!(
        run(rmq, &ch, &mut rx, create_acl, ROOT).await.0,
        ResponseCode::Success
    );
    let sup = run(
        rmq,
        &ch,
        &mut rx,
        user_req(
            RequestCode::AuthCreateUser,
            "eve",
            &info("e", Some("Super")),
        ),
        ("alice", "alice-sk"),
    )
    .await;
    assert_eq!(
        (sup.0, sup.1.as_str()),
        (
            ResponseCode::SystemError,
            "The super user can only be create by super user"
        )
    );
    let upd_root = run(
        rmq,
        &ch,
        &mut rx,
        user_req(RequestCode::AuthUpdateUser, "root", &info("new", None)),
        ("alice", "alice-sk"),
    )
    .await;
    assert_eq!(
        (upd_root.0, upd_root.1.as_str()),
        (
            ResponseCode::NoPermission,
            "The super user can only be update by super user"
        )
    );

    let list = request(
        RequestCode::AuthListUser,
        |c| {
            ListUsersRequestHeader {
                filter: Some("ali".into()),
            }
            .write_to(c)
        },
        &(),
    );
    let (code, _, body) = run(rmq, &ch, &mut rx, list, ROOT).await;
    assert_eq!(code, ResponseCode::Success);
    let users: Vec<UserInfo> = serde_json::from_slice(&body).expect("users");
    assert_eq!(users.len(), 1);
    assert_eq!(users[0].username.as_deref(), Some("alice"));
    assert_eq!(
        users[0].password.as_deref(),
        Some("alice-sk"),
        "to the super user"
    );
    assert_eq!(users[0].user_type.as_deref(), Some("Normal"));
    assert_eq!(users[0].user_status.as_deref(), Some("enable"));
    let get = user_req(RequestCode::AuthGetUser, "alice", &UserInfo::default());
    let (_, _, body) = run(rmq, &ch, &mut rx, get, ("alice", "alice-sk")).await;
    let me: UserInfo = serde_json::from_slice(&body).expect("user");
    assert_eq!(me.password, None, "not to a normal user");

    // Disable alice: her requests are refused from now on.
    let disable = UserInfo {
        user_status: Some("disable".into()),
        ..UserInfo::default()
    };
    assert_eq!(
        run(
            rmq,
            &ch,
            &mut rx,
            user_req(RequestCode::AuthUpdateUser, "alice", &disable),
            ROOT
        )
        .await
        .0,
        ResponseCode::Success
    );
    let refused = run(
        rmq,
        &ch,
        &mut rx,
        user_req(RequestCode::AuthGetUser, "alice", &UserInfo::default()),
        ("alice", "alice-sk"),
    )
    .await;
    assert_eq!(
        (refused.0, refused.1.as_str()),
        (ResponseCode::NoPermission, "User:alice is disabled.")
    );

    let del = user_req(RequestCode::AuthDeleteUser, "alice", &UserInfo::default());
    assert_eq!(
        run(rmq, &ch, &mut rx, del.clone(), ROOT).await.0,
        ResponseCode::Success
    );
    assert_eq!(
        run(rmq, &ch, &mut rx, del, ROOT).await.0,
        ResponseCode::Success,
        "already gone"
    );
    let meta = rmq.node.meta.clone();
    assert!(
        rmq.auth
            .get_acl(meta.as_ref(), "User:alice")
            .await
            .expect("get")
            .is_none(),
        "her ACL went too"
    );
    let gone = run(
        rmq,
        &ch,
        &mut rx,
        user_req(RequestCode::AuthGetUser, "alice", &UserInfo::default()),
        ("alice", "alice-sk"),
    )
    .await;
    assert_eq!(gone.1, "User:alice is not found.");
}

#[tokio::test]
async fn acls_merge_list_filter_and_delete_and_are_enforced_on_sends() {
    let (t, ch, mut rx) = secured().await;
    let rmq = &t.rmq;
    create_topic(rmq, "T", 4).await;
    create_topic(rmq, "U", 4).await;
    assert_eq!(
        run(
            rmq,
            &ch,
            &mut rx,
            user_req(RequestCode::AuthCreateUser, "bob", &info("bob-sk", None)),
            ROOT
        )
        .await
        .0,
        ResponseCode::Success
    );
    let no_user = run(
        rmq,
        &ch,
        &mut rx,
        acl_req(
            RequestCode::AuthCreateAcl,
            "User:nobody",
            &acl_body("Topic:T", &["Pub"], "Allow"),
        ),
        ROOT,
    )
    .await;
    assert_eq!(
        (no_user.0, no_user.1.as_str()),
        (
            ResponseCode::NoPermission,
            "The subject of User:nobody is not exist."
        )
    );
    let any = run(
        rmq,
        &ch,
        &mut rx,
        acl_req(
            RequestCode::AuthCreateAcl,
            "User:bob",
            &acl_body("Topic:T", &["Any"], "Allow"),
        ),
        ROOT,
    )
    .await;
    assert_eq!(
        (any.0, any.1.as_str()),
        (ResponseCode::NoPermission, "The actions can not be Any.")
    );
    let empty = run(
        rmq,
        &ch,
        &mut rx,
        acl_req(RequestCode::AuthCreateAcl, "User:bob", &AclInfo::default()),
        ROOT,
    )
    .await;
    assert_eq!(
        (empty.0, empty.1.as_str()),
        (ResponseCode::SystemError, "The body of acl is null")
    );

    for (resource, actions) in [("Topic:T", &["Pub"][..]), ("Group:G", &["Sub"][..])] {
        let r = run(
            rmq,
            &ch,
            &mut rx,
            acl_req(
                RequestCode::AuthCreateAcl,
                "User:bob",
                &acl_body(resource, actions, "Allow"),
            ),
            ROOT,
        )
        .await;
        assert_eq!(r.0, ResponseCode::Success, "{r:?}");
    }
    let get = request(
        RequestCode::AuthGetAcl,
        |c| {
            AclSubjectHeader {
                subject: Some("User:bob".into()),
            }
            .write_to(c)
        },
        &(),
    );
    let (_, _, body) = run(rmq, &ch, &mut rx, get, ROOT).await;
    let got: AclInfo = serde_json::from_slice(&body).expect("acl");
    let entries = got.policies.expect("policies")[0]
        .entries
        .clone()
        .expect("entries");
    assert_eq!(entries.len(), 2, "merged into one custom policy");
    assert_eq!(
        entries[0].source_ips.as_deref(),
        Some(&["127.0.0.0/8".to_owned()][..])
    );

    let list = request(
        RequestCode::AuthListAcl,
        |c| {
            ListAclsRequestHeader {
                subject_filter: Some("bob".into()),
                resource_filter: Some("Group".into()),
            }
            .write_to(c)
        },
        &(),
    );
    let (_, _, body) = run(rmq, &ch, &mut rx, list, ROOT).await;
    let acls: Vec<AclInfo> = serde_json::from_slice(&body).expect("acls");
    let keys: Vec<_> = acls[0].policies.as_ref().expect("p")[0]
        .entries
        .as_ref()
        .expect("e")
        .iter()
        .map(|e| e.resource.clone())
        .collect();
    assert_eq!(keys, [Some("Group:G".to_owned())]);

    // Enforced on the send path (prepared on the reader).
    let send = |topic: &str| {
        let mut h = crate::remoting::testing::send_header(topic, 0, "");
        h.producer_group = "pg".into();
        crate::remoting::testing::send_command(&h, b"hello")
    };
    assert_eq!(
        run(rmq, &ch, &mut rx, send("T"), ("bob", "bob-sk")).await.0,
        ResponseCode::Success
    );
    let u = run(rmq, &ch, &mut rx, send("U"), ("bob", "bob-sk")).await;
    assert_eq!(u.0, ResponseCode::NoPermission);
    assert_eq!(
        u.1,
        "User:bob has no permission to access Topic:U from 127.0.0.1, no matched policies."
    );
    let unsigned = dispatch(rmq, &ch, &mut rx, send("T"))
        .await
        .expect("answer");
    assert_eq!(unsigned.response_code(), ResponseCode::NoPermission);

    let del = |resource: Option<&str>| {
        request(
            RequestCode::AuthDeleteAcl,
            |c| {
                DeleteAclRequestHeader {
                    subject: Some("User:bob".into()),
                    policy_type: None,
                    resource: resource.map(str::to_owned),
                }
                .write_to(c)
            },
            &(),
        )
    };
    assert_eq!(
        run(rmq, &ch, &mut rx, del(Some("Topic:T")), ROOT).await.0,
        ResponseCode::Success
    );
    assert_eq!(
        run(rmq, &ch, &mut rx, send("T"), ("bob", "bob-sk")).await.0,
        ResponseCode::NoPermission,
        "entry gone"
    );
    assert_eq!(
        run(rmq, &ch, &mut rx, del(Some("Topic:T")), ROOT).await.0,
        ResponseCode::Success,
        "repeat"
    );
    assert_eq!(
        run(rmq, &ch, &mut rx, del(None), ROOT).await.0,
        ResponseCode::Success
    );
    assert_eq!(
        run(rmq, &ch, &mut rx, del(None), ROOT).await.0,
        ResponseCode::Success,
        "already gone"
    );
    let meta = rmq.node.meta.clone();
    assert!(
        rmq.auth
            .get_acl(meta.as_ref(), "User:bob")
            .await
            .expect("get")
            .is_none()
    );
}

#[tokio::test]
async fn the_kv_config_requests_cannot_reach_the_users() {
    let (t, ch, mut rx) = secured().await;
    let mut c = RemotingCommand::request(RequestCode::GetKvConfig.to_i32(), 1);
    c.put_ext("namespace", crate::remoting::auth::USERS_NS);
    c.put_ext("key", "root");
    let (code, remark, body) = run(&t.rmq, &ch, &mut rx, c, ROOT).await;
    assert_eq!(code, ResponseCode::NoPermission, "{remark}");
    assert!(body.is_empty());
}
