//! ACL 2.0 admin requests, AUTH_CREATE_USER (3001) … AUTH_LIST_ACL (3010), as the
//! reference's `AdminBrokerProcessor` and its metadata managers answer them: the same
//! checks, codes and remarks, writes straight to meta (every node reloads them).
//!
//! One difference on purpose: `mqadmin … -c <cluster>` sends each write once per broker
//! address, which is every shard of every node here, and all of them land in one meta. So
//! a repeated identical `createUser` succeeds (the reference: "The user is existed"), and
//! deleting an ACL, or an ACL entry, that is already gone succeeds (the reference: "The
//! acl is not exist." / "The subject is not exist.").

use std::sync::Arc;

use stratus_compat::command::RemotingCommand;
use stratus_compat::request::auth::{
    AclInfo, AclSubjectHeader, DeleteAclRequestHeader, ListAclsRequestHeader,
    ListUsersRequestHeader, UserInfo, UserRequestHeader,
};
use stratus_compat::{RequestCode, ResponseCode};

use super::json_body;
use crate::error::{GatewayError, Result};
use crate::remoting::Remoting;
use crate::remoting::auth::User;
use crate::remoting::auth::model::{Acl, PolicyType, Resource, UserStatus, UserType, subject_user};
use crate::remoting::dispatch::{respond, success};

fn denied(remark: impl Into<String>) -> GatewayError {
    GatewayError::AccessDenied(remark.into())
}

fn blank(s: Option<&str>) -> bool {
    s.is_none_or(|s| s.trim().is_empty())
}

/// Answers one of the ten codes.
pub(crate) async fn handle(
    rmq: &Arc<Remoting>,
    code: RequestCode,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    use RequestCode as C;
    match code {
        C::AuthCreateUser => create_user(rmq, cmd).await,
        C::AuthUpdateUser => update_user(rmq, cmd).await,
        C::AuthDeleteUser => delete_user(rmq, cmd).await,
        C::AuthGetUser => get_user(rmq, cmd).await,
        C::AuthListUser => list_users(rmq, cmd).await,
        C::AuthCreateAcl | C::AuthUpdateAcl => put_acl(rmq, cmd).await,
        C::AuthDeleteAcl => delete_acl(rmq, cmd).await,
        C::AuthGetAcl => get_acl(rmq, cmd).await,
        _ => list_acls(rmq, cmd).await,
    }
}

/// `isNotSuperUserLogin`: the request is signed by a user that is not a super user. No
/// access key (authentication off) counts as a super user, as in the reference.
async fn not_super(rmq: &Remoting, cmd: &RemotingCommand) -> Result<bool> {
    let Some(ak) = cmd
        .ext_fields
        .get(stratus_compat::acl::ACCESS_KEY)
        .filter(|a| !a.is_empty())
    else {
        return Ok(false);
    };
    Ok(!matches!(
        rmq.auth.get_user(rmq.node.meta.as_ref(), ak).await?,
        Some(u) if u.kind == UserType::Super
    ))
}

fn user_body(cmd: &RemotingCommand) -> Result<UserInfo> {
    if cmd.body.is_empty() {
        return Ok(UserInfo::default());
    }
    serde_json::from_slice(&cmd.body)
        .map_err(|e| GatewayError::InvalidParameter(format!("malformed UserInfo body: {e}")))
}

fn parse_kind(text: Option<&str>) -> Option<UserType> {
    text.and_then(UserType::parse)
}

fn parse_status(text: Option<&str>) -> Option<UserStatus> {
    text.and_then(UserStatus::parse)
}

async fn create_user(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let h = UserRequestHeader::from_command(cmd);
    let Some(name) = h.username.filter(|u| !u.is_empty()) else {
        return Ok(respond(
            ResponseCode::InvalidParameter,
            "The username is blank",
        ));
    };
    let info = user_body(cmd)?;
    let kind = parse_kind(info.user_type.as_deref());
    if kind == Some(UserType::Super) && not_super(rmq, cmd).await? {
        return Err(GatewayError::AuthAdmin(
            "The super user can only be create by super user".into(),
        ));
    }
    let password = info.password.unwrap_or_default();
    if password.trim().is_empty() {
        return Err(denied("password can not be blank"));
    }
    let user = User {
        name,
        password,
        kind: kind.unwrap_or(UserType::Normal),
        status: parse_status(info.user_status.as_deref()).unwrap_or(UserStatus::Enable),
    };
    let meta = rmq.node.meta.as_ref();
    match rmq.auth.get_user(meta, &user.name).await? {
        // The same write again (mqadmin sends it to every shard): done already.
        Some(old) if old == user => Ok(success()),
        Some(_) => Err(denied("The user is existed")),
        None => {
            rmq.auth.put_user(meta, &user).await?;
            Ok(success())
        }
    }
}

async fn update_user(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let h = UserRequestHeader::from_command(cmd);
    let Some(name) = h.username.filter(|u| !u.is_empty()) else {
        return Ok(respond(
            ResponseCode::InvalidParameter,
            "The username is blank",
        ));
    };
    let info = user_body(cmd)?;
    let kind = parse_kind(info.user_type.as_deref());
    let not_super = not_super(rmq, cmd).await?;
    if kind == Some(UserType::Super) && not_super {
        return Err(GatewayError::AuthAdmin(
            "The super user can only be update by super user".into(),
        ));
    }
    let meta = rmq.node.meta.as_ref();
    let Some(mut user) = rmq.auth.get_user(meta, &name).await? else {
        return Err(denied("The user is not exist"));
    };
    if user.kind == UserType::Super && not_super {
        return Err(denied("The super user can only be update by super user"));
    }
    if let Some(p) = info.password.filter(|p| !p.trim().is_empty()) {
        user.password = p;
    }
    if let Some(k) = kind {
        user.kind = k;
    }
    if let Some(s) = parse_status(info.user_status.as_deref()) {
        user.status = s;
    }
    rmq.auth.put_user(meta, &user).await?;
    Ok(success())
}

async fn delete_user(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let h = UserRequestHeader::from_command(cmd);
    let Some(name) = h.username.filter(|u| !u.trim().is_empty()) else {
        return Err(denied("username can not be blank"));
    };
    let meta = rmq.node.meta.as_ref();
    match rmq.auth.get_user(meta, &name).await? {
        None => Ok(success()),
        Some(u) if u.kind == UserType::Super && not_super(rmq, cmd).await? => {
            Err(denied("The super user can only be update by super user"))
        }
        Some(_) => {
            rmq.auth.delete_user(meta, &name).await?;
            Ok(success())
        }
    }
}

fn user_info(u: &User, with_password: bool) -> UserInfo {
    UserInfo {
        username: Some(u.name.clone()),
        password: with_password.then(|| u.password.clone()),
        user_type: Some(u.kind.name().to_owned()),
        user_status: Some(u.status.name().to_owned()),
    }
}

/// The reference answers passwords to whoever may get users; Stratus only to super users
/// (or with authentication off).
async fn get_user(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let h = UserRequestHeader::from_command(cmd);
    let Some(name) = h.username.filter(|u| !u.trim().is_empty()) else {
        return Ok(respond(
            ResponseCode::InvalidParameter,
            "The username is blank",
        ));
    };
    let mut resp = success();
    if let Some(u) = rmq.auth.get_user(rmq.node.meta.as_ref(), &name).await? {
        let with_password = !not_super(rmq, cmd).await?;
        resp.body = json_body(&user_info(&u, with_password))?;
    }
    Ok(resp)
}

async fn list_users(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let filter = ListUsersRequestHeader::from_command(cmd).filter;
    let users = rmq.auth.list_users(rmq.node.meta.as_ref()).await?;
    let with_password = !not_super(rmq, cmd).await?;
    let infos: Vec<UserInfo> = users
        .iter()
        .filter(|u| blank(filter.as_deref()) || u.name.contains(filter.as_deref().unwrap_or("")))
        .map(|u| user_info(u, with_password))
        .collect();
    let mut resp = success();
    if !infos.is_empty() {
        resp.body = json_body(&infos)?;
    }
    Ok(resp)
}

/// AUTH_CREATE_ACL and AUTH_UPDATE_ACL: both merge into the subject's ACL (or create it).
async fn put_acl(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let h = AclSubjectHeader::from_command(cmd);
    let info: Option<AclInfo> = serde_json::from_slice(&cmd.body).ok();
    let Some(info) = info.filter(|i| i.policies.as_ref().is_some_and(|p| !p.is_empty())) else {
        return Err(GatewayError::AuthAdmin("The body of acl is null".into()));
    };
    let acl = Acl::from_info(&info, h.subject.as_deref()).map_err(denied)?;
    let meta = rmq.node.meta.as_ref();
    let name = subject_user(&acl.subject).unwrap_or_default();
    if rmq.auth.get_user(meta, name).await?.is_none() {
        return Err(denied(format!(
            "The subject of {} is not exist.",
            acl.subject
        )));
    }
    let merged = match rmq.auth.get_acl(meta, &acl.subject).await? {
        None => acl,
        Some(mut old) => {
            old.merge(acl.policies);
            old
        }
    };
    rmq.auth.put_acl(meta, &merged).await?;
    Ok(success())
}

async fn delete_acl(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let h = DeleteAclRequestHeader::from_command(cmd);
    let subject = h.subject.unwrap_or_default();
    if subject_user(&subject).is_none() {
        return Err(denied("The subject is null."));
    }
    let kind = h
        .policy_type
        .as_deref()
        .and_then(PolicyType::parse)
        .unwrap_or(PolicyType::Custom);
    let resource = h.resource.as_deref().and_then(Resource::parse);
    let meta = rmq.node.meta.as_ref();
    // Already gone (another shard's copy of this request got here first): done.
    let Some(mut acl) = rmq.auth.get_acl(meta, &subject).await? else {
        return Ok(success());
    };
    match resource {
        None => rmq.auth.delete_acl(meta, &subject).await?,
        Some(r) => {
            acl.delete_entry(kind, &r);
            if acl.policies.is_empty() {
                rmq.auth.delete_acl(meta, &subject).await?;
            } else {
                rmq.auth.put_acl(meta, &acl).await?;
            }
        }
    }
    Ok(success())
}

async fn get_acl(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let subject = AclSubjectHeader::from_command(cmd)
        .subject
        .unwrap_or_default();
    let meta = rmq.node.meta.as_ref();
    let exists = match subject_user(&subject) {
        Some(name) => rmq.auth.get_user(meta, name).await?.is_some(),
        None => false,
    };
    if !exists {
        return Err(denied("The subject is not exist."));
    }
    let mut resp = success();
    if let Some(acl) = rmq.auth.get_acl(meta, &subject).await? {
        resp.body = json_body(&acl.to_info())?;
    }
    Ok(resp)
}

/// `listAcl(subjectFilter, resourceFilter)`: subjects containing the one, entries whose
/// resource contains the other (not applied when the subject itself contains it, as the
/// reference does); ACLs left without entries are not listed.
async fn list_acls(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let h = ListAclsRequestHeader::from_command(cmd);
    let sf = h.subject_filter.filter(|f| !f.trim().is_empty());
    let rf = h.resource_filter.filter(|f| !f.trim().is_empty());
    let mut infos = Vec::new();
    for mut acl in rmq.auth.list_acls(rmq.node.meta.as_ref()).await? {
        if sf
            .as_ref()
            .is_some_and(|f| !acl.subject.contains(f.as_str()))
        {
            continue;
        }
        if let Some(f) = &rf
            && !acl.subject.contains(f.as_str())
        {
            for p in &mut acl.policies {
                p.entries.retain(|e| e.resource.key().contains(f.as_str()));
            }
            acl.policies.retain(|p| !p.entries.is_empty());
        }
        if !acl.policies.is_empty() {
            infos.push(acl.to_info());
        }
    }
    let mut resp = success();
    if !infos.is_empty() {
        resp.body = json_body(&infos)?;
    }
    Ok(resp)
}
