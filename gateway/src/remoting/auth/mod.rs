//! Access control (RocketMQ ACL 2.0): authentication of signed requests and authorization
//! by users' ACLs, enforced once per request before its processor (`dispatch.rs`), on
//! every port.
//!
//! Users and ACLs live in meta's KV table (namespaces [`USERS_NS`] and [`ACLS_NS`]; the
//! `PUT/GET/DELETE_KV_CONFIG` requests may not touch them), passwords sealed with
//! `auth.encryption_key` ([`crypto`]). Every write also replaces a version token
//! ([`VERSION_NS`]); each node keeps an in-memory [`Snapshot`] and reloads it when the
//! token changes (`services/auth_refresh.rs`, every `auth.refresh_interval`). A node that
//! cannot read meta keeps the last snapshot it had; a node that never loaded one refuses
//! every checked request.
//!
//! The check ([`Auth::check`]), as the reference's pipelines: whitelisted codes and (unless
//! `auth.namesrv_checks`) name-server requests pass; authentication wants `AccessKey` of a
//! known, enabled user and a `Signature` over [`signing_content`]; authorization derives
//! what the request asks ([`table`]) and lets super users through, normal users only where
//! their ACL's deciding entry ([`policy`]) allows. Failures are NO_PERMISSION with the
//! reference's remarks.

pub(crate) mod crypto;
pub(crate) mod model;
pub(crate) mod policy;
pub(crate) mod table;

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use ring::hmac;
use serde::{Deserialize, Serialize};
use stratus_compat::RequestCode;
use stratus_compat::acl::{ACCESS_KEY, SIGNATURE, signing_content};
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::auth::AclInfo;
use stratus_meta::MetaStore;
use tracing::{info, warn};

use crate::config::AuthSettings;
use crate::error::{GatewayError, Result};
use crypto::Cipher;
use model::{Acl, Decision, UserStatus, UserType};

/// Users: key user name, value [`StoredUser`] JSON.
pub(crate) const USERS_NS: &str = "stratus.auth.users";
/// ACLs: key subject (`User:<name>`), value `AclInfo` JSON.
pub(crate) const ACLS_NS: &str = "stratus.auth.acls";
/// The version token, key [`VERSION_KEY`]: replaced by every write.
pub(crate) const VERSION_NS: &str = "stratus.auth";
const VERSION_KEY: &str = "version";

/// Whether a KV namespace is access control's own (refused to KV config requests).
pub(crate) fn is_reserved_namespace(ns: &str) -> bool {
    ns == VERSION_NS || ns.starts_with("stratus.auth.")
}

/// `MQVersion.Version.V4_9_3.ordinal()`: up to it `_UNIQUE_KEY_QUERY` is not signed.
const V4_9_3: i32 = 399;
const UNIQUE_KEY_QUERY: &str = "_UNIQUE_KEY_QUERY";

/// A user as meta keeps it: the password sealed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredUser {
    username: String,
    password_sealed: String,
    user_type: String,
    user_status: String,
}

/// A user with its password in the clear (admin requests only; never logged).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct User {
    pub(crate) name: String,
    pub(crate) password: String,
    pub(crate) kind: UserType,
    pub(crate) status: UserStatus,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

/// What the check needs of a user: its signing key, type and state.
#[derive(Debug)]
struct CheckUser {
    key: hmac::Key,
    kind: UserType,
    status: UserStatus,
}

/// Every user and ACL, as last loaded from meta.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    users: HashMap<String, CheckUser>,
    acls: HashMap<String, Acl>,
}

/// Access control of one node.
#[derive(Debug)]
pub(crate) struct Auth {
    authentication: bool,
    authorization: bool,
    namesrv_checks: bool,
    whitelist: HashSet<i32>,
    init: Option<(String, String)>,
    cluster: String,
    cipher: Option<Cipher>,
    /// `None` until the first load succeeds.
    snapshot: RwLock<Option<Arc<Snapshot>>>,
    /// The version token the snapshot was loaded at.
    version: Mutex<Option<String>>,
    /// One refresh at a time (the service's and an admin write's), so an older load never
    /// replaces a newer one.
    refreshing: tokio::sync::Mutex<()>,
}

fn deny(remark: impl Into<String>) -> GatewayError {
    GatewayError::AccessDenied(remark.into())
}

/// The name server's requests (the reference's name server checks none of them).
fn is_namesrv_code(code: RequestCode) -> bool {
    use RequestCode as C;
    matches!(
        code,
        C::PutKvConfig
            | C::GetKvConfig
            | C::DeleteKvConfig
            | C::RegisterBroker
            | C::UnregisterBroker
            | C::GetRouteinfoByTopic
            | C::GetBrokerClusterInfo
            | C::GetAllTopicListFromNameserver
            | C::DeleteTopicInNamesrv
            | C::GetKvlistByNamespace
            | C::GetTopicsByCluster
            | C::GetSystemTopicListFromNs
            | C::UpdateNamesrvConfig
            | C::GetNamesrvConfig
    )
}

impl Auth {
    /// Access control as configured; nothing loaded yet.
    pub(crate) fn new(settings: &AuthSettings, cluster: &str) -> Self {
        Self {
            authentication: settings.authentication_enabled,
            authorization: settings.authorization_enabled,
            namesrv_checks: settings.namesrv_checks,
            whitelist: settings.whitelist.iter().copied().collect(),
            init: settings
                .init_user
                .clone()
                .zip(settings.init_password.clone()),
            cluster: cluster.to_owned(),
            cipher: settings.encryption_key.as_deref().map(Cipher::new),
            snapshot: RwLock::new(None),
            version: Mutex::new(None),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether any request is checked (false: the check is skipped outright).
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.authentication || self.authorization
    }

    /// Whether a snapshot has been loaded.
    pub(crate) fn loaded(&self) -> bool {
        self.snapshot.read().is_some()
    }

    fn cipher(&self) -> Result<&Cipher> {
        self.cipher.as_ref().ok_or_else(|| {
            GatewayError::AuthAdmin("auth.encryption_key is not set: users cannot be stored".into())
        })
    }

    // ----- the check -----

    /// Checks `cmd` from `ip`. Call only when [`active`](Self::active).
    ///
    /// # Errors
    /// [`GatewayError::AccessDenied`] with the reference's remark.
    pub(crate) fn check(&self, cmd: &RemotingCommand, ip: IpAddr) -> Result<()> {
        let code = RequestCode::from_i32(cmd.code);
        if self.whitelist.contains(&cmd.code) || (!self.namesrv_checks && is_namesrv_code(code)) {
            return Ok(());
        }
        let Some(snap) = self.snapshot.read().clone() else {
            return Err(deny("access control data is not loaded from meta yet"));
        };
        let access_key = cmd.ext_fields.get(ACCESS_KEY).map(String::as_str);
        if self.authentication {
            let name = access_key
                .filter(|n| !n.is_empty())
                .ok_or_else(|| deny("username cannot be null."))?;
            let user = snap
                .users
                .get(name)
                .ok_or_else(|| deny(format!("User:{name} is not found.")))?;
            if user.status == UserStatus::Disable {
                return Err(deny(format!("User:{name} is disabled.")));
            }
            let skip: &[&str] = if cmd.version <= V4_9_3 {
                &[UNIQUE_KEY_QUERY]
            } else {
                &[]
            };
            let signed = cmd
                .ext_fields
                .get(SIGNATURE)
                .is_some_and(|sig| crypto::verify(&user.key, &signing_content(cmd, skip), sig));
            if !signed {
                return Err(deny("check signature failed."));
            }
        }
        if self.authorization {
            let needs = table::needs(cmd, &self.cluster).map_err(deny)?;
            if needs.is_empty() {
                return Ok(());
            }
            let name = access_key.ok_or_else(|| {
                deny("Authorization failed. Please verify your access rights and try again.")
            })?;
            let user = snap
                .users
                .get(name)
                .ok_or_else(|| deny(format!("User:{name} not found.")))?;
            if user.kind == UserType::Super {
                return Ok(());
            }
            let subject = format!("User:{name}");
            let acl = snap.acls.get(&subject);
            for (resource, actions) in &needs {
                let refuse = |why: &str| {
                    deny(format!(
                        "{subject} has no permission to access {} from {ip}, {why}",
                        resource.key()
                    ))
                };
                match acl.and_then(|a| policy::deciding_entry(a, resource, actions, Some(ip))) {
                    None => return Err(refuse("no matched policies.")),
                    Some(e) if e.decision == Decision::Deny => {
                        return Err(refuse("the decision is deny."));
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }

    // ----- loading -----

    /// Creates the bootstrap super user unless a user of that name exists.
    ///
    /// # Errors
    /// Meta failing, or no encryption key.
    pub(crate) async fn ensure_init_user(&self, meta: &dyn MetaStore) -> Result<()> {
        let Some((name, password)) = &self.init else {
            return Ok(());
        };
        if self.get_user(meta, name).await?.is_none() {
            self.put_user(
                meta,
                &User {
                    name: name.clone(),
                    password: password.clone(),
                    kind: UserType::Super,
                    status: UserStatus::Enable,
                },
            )
            .await?;
            info!(user = %name, "bootstrap super user created");
        }
        Ok(())
    }

    /// Reloads the snapshot if meta's version token differs from the loaded one (or
    /// nothing is loaded). True when it reloaded.
    ///
    /// # Errors
    /// Meta failing: the last snapshot stays in force.
    pub(crate) async fn refresh(&self, meta: &dyn MetaStore) -> Result<bool> {
        let _one = self.refreshing.lock().await;
        let version = meta.get_kv(VERSION_NS, VERSION_KEY).await?;
        if self.loaded() && *self.version.lock() == version {
            return Ok(false);
        }
        let users = meta.list_kv(USERS_NS).await?;
        let acls = meta.list_kv(ACLS_NS).await?;
        let mut snap = Snapshot::default();
        for (name, text) in users {
            match self.decode_user(&name, &text) {
                Ok(u) => {
                    snap.users.insert(
                        name,
                        CheckUser {
                            key: crypto::signing_key(&u.password),
                            kind: u.kind,
                            status: u.status,
                        },
                    );
                }
                Err(e) => warn!(user = %name, error = %e, "user left out of access control"),
            }
        }
        for (subject, text) in acls {
            match decode_acl(&text) {
                Ok(a) => {
                    snap.acls.insert(subject, a);
                }
                Err(e) => warn!(%subject, error = %e, "ACL left out of access control"),
            }
        }
        *self.snapshot.write() = Some(Arc::new(snap));
        *self.version.lock() = version;
        Ok(true)
    }

    // ----- meta records (admin requests) -----

    fn decode_user(&self, name: &str, text: &str) -> std::result::Result<User, String> {
        let s: StoredUser = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let cipher = self
            .cipher
            .as_ref()
            .ok_or("auth.encryption_key is not set")?;
        Ok(User {
            name: name.to_owned(),
            password: cipher.open(name, &s.password_sealed)?,
            kind: UserType::parse(&s.user_type).unwrap_or(UserType::Normal),
            status: UserStatus::parse(&s.user_status).unwrap_or(UserStatus::Enable),
        })
    }

    /// One user, password opened.
    ///
    /// # Errors
    /// Meta failing; a row that does not decode.
    pub(crate) async fn get_user(&self, meta: &dyn MetaStore, name: &str) -> Result<Option<User>> {
        match meta.get_kv(USERS_NS, name).await? {
            None => Ok(None),
            Some(text) => self
                .decode_user(name, &text)
                .map(Some)
                .map_err(GatewayError::AuthAdmin),
        }
    }

    /// Every user that decodes, by name.
    ///
    /// # Errors
    /// Meta failing.
    pub(crate) async fn list_users(&self, meta: &dyn MetaStore) -> Result<Vec<User>> {
        Ok(meta
            .list_kv(USERS_NS)
            .await?
            .into_iter()
            .filter_map(|(n, t)| self.decode_user(&n, &t).ok())
            .collect())
    }

    /// Creates or replaces a user, password sealed.
    ///
    /// # Errors
    /// Meta failing, or no encryption key.
    pub(crate) async fn put_user(&self, meta: &dyn MetaStore, user: &User) -> Result<()> {
        let stored = StoredUser {
            username: user.name.clone(),
            password_sealed: self
                .cipher()?
                .seal(&user.name, &user.password)
                .map_err(GatewayError::AuthAdmin)?,
            user_type: user.kind.name().to_owned(),
            user_status: user.status.name().to_owned(),
        };
        let text =
            serde_json::to_string(&stored).map_err(|e| GatewayError::EncodeBody(e.to_string()))?;
        meta.put_kv(USERS_NS, &user.name, &text).await?;
        self.wrote(meta).await
    }

    /// Deletes a user and its ACL.
    ///
    /// # Errors
    /// Meta failing.
    pub(crate) async fn delete_user(&self, meta: &dyn MetaStore, name: &str) -> Result<()> {
        meta.delete_kv(USERS_NS, name).await?;
        meta.delete_kv(ACLS_NS, &format!("User:{name}")).await?;
        self.wrote(meta).await
    }

    /// One subject's ACL.
    ///
    /// # Errors
    /// Meta failing; a row that does not decode.
    pub(crate) async fn get_acl(&self, meta: &dyn MetaStore, subject: &str) -> Result<Option<Acl>> {
        match meta.get_kv(ACLS_NS, subject).await? {
            None => Ok(None),
            Some(text) => decode_acl(&text).map(Some).map_err(GatewayError::AuthAdmin),
        }
    }

    /// Every ACL that decodes, by subject.
    ///
    /// # Errors
    /// Meta failing.
    pub(crate) async fn list_acls(&self, meta: &dyn MetaStore) -> Result<Vec<Acl>> {
        Ok(meta
            .list_kv(ACLS_NS)
            .await?
            .into_iter()
            .filter_map(|(_, t)| decode_acl(&t).ok())
            .collect())
    }

    /// Creates or replaces an ACL.
    ///
    /// # Errors
    /// Meta failing.
    pub(crate) async fn put_acl(&self, meta: &dyn MetaStore, acl: &Acl) -> Result<()> {
        let text = serde_json::to_string(&acl.to_info())
            .map_err(|e| GatewayError::EncodeBody(e.to_string()))?;
        meta.put_kv(ACLS_NS, &acl.subject, &text).await?;
        self.wrote(meta).await
    }

    /// Deletes an ACL.
    ///
    /// # Errors
    /// Meta failing.
    pub(crate) async fn delete_acl(&self, meta: &dyn MetaStore, subject: &str) -> Result<()> {
        meta.delete_kv(ACLS_NS, subject).await?;
        self.wrote(meta).await
    }

    /// After a write: a new version token (every node reloads), and this node at once.
    async fn wrote(&self, meta: &dyn MetaStore) -> Result<()> {
        // Random, so writes through two nodes at once never leave the same token.
        let token = format!(
            "{:016x}{:016x}",
            rand::random::<u64>(),
            rand::random::<u64>()
        );
        meta.put_kv(VERSION_NS, VERSION_KEY, &token).await?;
        self.refresh(meta).await?;
        Ok(())
    }
}

fn decode_acl(text: &str) -> std::result::Result<Acl, String> {
    let info: AclInfo = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Acl::from_info(&info, None)
}

#[cfg(test)]
mod tests;
