//! ACL 2.0 admin requests (AUTH_CREATE_USER 3001 … AUTH_LIST_ACL 3010): their headers and
//! the JSON bodies `UserInfo` and `AclInfo` (`remoting/protocol/body/` of the reference).
//!
//! Every header field is optional here: the reference answers a blank username with
//! INVALID_PARAMETER, which is the processor's business, not a decode error. Enum-like
//! values (user type, status, policy type, actions, decision) travel as their names
//! (`Super`, `enable`, `Custom`, `Pub`, `Allow`, matched without regard to case) and are kept
//! as text; bodies leave absent fields out, as fastjson does.

use serde::{Deserialize, Serialize};

use super::opt_str;
use crate::command::RemotingCommand;

fn put_opt(cmd: &mut RemotingCommand, key: &str, value: &Option<String>) {
    if let Some(v) = value {
        cmd.put_ext(key, v);
    }
}

/// Header of AUTH_CREATE_USER, AUTH_UPDATE_USER, AUTH_DELETE_USER and AUTH_GET_USER.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserRequestHeader {
    /// `username`.
    pub username: Option<String>,
}

impl UserRequestHeader {
    /// Decodes from ext fields (never fails: the field is optional).
    pub fn from_command(cmd: &RemotingCommand) -> Self {
        Self {
            username: opt_str(cmd, "username"),
        }
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        put_opt(cmd, "username", &self.username);
    }
}

/// Header of AUTH_LIST_USER.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListUsersRequestHeader {
    /// `filter`: usernames containing it (all when blank).
    pub filter: Option<String>,
}

impl ListUsersRequestHeader {
    /// Decodes from ext fields.
    pub fn from_command(cmd: &RemotingCommand) -> Self {
        Self {
            filter: opt_str(cmd, "filter"),
        }
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        put_opt(cmd, "filter", &self.filter);
    }
}

/// Header of AUTH_CREATE_ACL, AUTH_UPDATE_ACL and AUTH_GET_ACL.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AclSubjectHeader {
    /// `subject` (`User:<name>`).
    pub subject: Option<String>,
}

impl AclSubjectHeader {
    /// Decodes from ext fields.
    pub fn from_command(cmd: &RemotingCommand) -> Self {
        Self {
            subject: opt_str(cmd, "subject"),
        }
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        put_opt(cmd, "subject", &self.subject);
    }
}

/// Header of AUTH_DELETE_ACL.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteAclRequestHeader {
    /// `subject`.
    pub subject: Option<String>,
    /// `policyType` (`Custom` when absent).
    pub policy_type: Option<String>,
    /// `resource` (`Topic:t`, …); absent: the whole ACL of the subject.
    pub resource: Option<String>,
}

impl DeleteAclRequestHeader {
    /// Decodes from ext fields.
    pub fn from_command(cmd: &RemotingCommand) -> Self {
        Self {
            subject: opt_str(cmd, "subject"),
            policy_type: opt_str(cmd, "policyType"),
            resource: opt_str(cmd, "resource"),
        }
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        put_opt(cmd, "subject", &self.subject);
        put_opt(cmd, "policyType", &self.policy_type);
        put_opt(cmd, "resource", &self.resource);
    }
}

/// Header of AUTH_LIST_ACL.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListAclsRequestHeader {
    /// `subjectFilter`: subjects containing it.
    pub subject_filter: Option<String>,
    /// `resourceFilter`: entries whose resource contains it.
    pub resource_filter: Option<String>,
}

impl ListAclsRequestHeader {
    /// Decodes from ext fields.
    pub fn from_command(cmd: &RemotingCommand) -> Self {
        Self {
            subject_filter: opt_str(cmd, "subjectFilter"),
            resource_filter: opt_str(cmd, "resourceFilter"),
        }
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        put_opt(cmd, "subjectFilter", &self.subject_filter);
        put_opt(cmd, "resourceFilter", &self.resource_filter);
    }
}

/// `UserInfo`: the body of AUTH_CREATE_USER / AUTH_UPDATE_USER and of AUTH_GET_USER's answer
/// (a list of them for AUTH_LIST_USER).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInfo {
    /// User name (the access key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Password (the secret key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// `Super` or `Normal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_type: Option<String>,
    /// `enable` or `disable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_status: Option<String>,
}

/// `AclInfo`: the body of AUTH_CREATE_ACL / AUTH_UPDATE_ACL and of AUTH_GET_ACL's answer (a
/// list of them for AUTH_LIST_ACL).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AclInfo {
    /// `User:<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Policies (a CUSTOM and a DEFAULT one at most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<Vec<PolicyInfo>>,
}

/// `AclInfo.PolicyInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyInfo {
    /// `Custom` or `Default` (`Custom` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_type: Option<String>,
    /// Entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<PolicyEntryInfo>>,
}

/// `AclInfo.PolicyEntryInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEntryInfo {
    /// `Topic:t`, `Group:g*`, `Cluster:c`, `Topic:*`, `*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Action names (`Pub`, `Sub`, `Create`, `Update`, `Delete`, `Get`, `List`, `All`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<String>>,
    /// Source addresses: IPs or CIDR ranges; none: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ips: Option<Vec<String>>,
    /// `Allow` or `Deny`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::RequestCode;

    fn cmd() -> RemotingCommand {
        RemotingCommand::request(RequestCode::AuthDeleteAcl.to_i32(), 0)
    }

    #[test]
    fn headers_round_trip_under_the_reference_field_names() {
        let h = DeleteAclRequestHeader {
            subject: Some("User:alice".into()),
            policy_type: Some("Custom".into()),
            resource: Some("Topic:t".into()),
        };
        let mut c = cmd();
        h.write_to(&mut c);
        assert_eq!(
            c.ext_fields.get("policyType").map(String::as_str),
            Some("Custom")
        );
        assert_eq!(DeleteAclRequestHeader::from_command(&c), h);

        let l = ListAclsRequestHeader {
            subject_filter: Some("ali".into()),
            resource_filter: None,
        };
        let mut c = cmd();
        l.write_to(&mut c);
        assert!(c.ext_fields.contains_key("subjectFilter"));
        assert!(!c.ext_fields.contains_key("resourceFilter"));
        assert_eq!(ListAclsRequestHeader::from_command(&c), l);

        let u = UserRequestHeader {
            username: Some("bob".into()),
        };
        let mut c = cmd();
        u.write_to(&mut c);
        assert_eq!(UserRequestHeader::from_command(&c), u);
        assert_eq!(UserRequestHeader::from_command(&cmd()).username, None);
    }

    #[test]
    fn bodies_read_what_the_java_tools_send() {
        // As mqadmin 5.3.3 (fastjson) encodes them.
        let user: UserInfo = serde_json::from_str(
            r#"{"password":"pw","userStatus":"enable","userType":"Normal","username":"u"}"#,
        )
        .expect("user");
        assert_eq!(user.user_type.as_deref(), Some("Normal"));
        let acl: AclInfo = serde_json::from_str(
            r#"{"policies":[{"entries":[{"actions":["Pub","Sub"],"decision":"Allow",
                "resource":"Topic:t","sourceIps":["10.0.0.0/8"]}]}],"subject":"User:u"}"#,
        )
        .expect("acl");
        let entry = &acl.policies.as_ref().expect("policies")[0]
            .entries
            .as_ref()
            .expect("entries")[0];
        assert_eq!(
            entry.actions.as_deref(),
            Some(&["Pub".to_owned(), "Sub".to_owned()][..])
        );
        assert_eq!(acl.policies.as_ref().expect("p")[0].policy_type, None);
        // Absent fields stay absent when written back.
        let text = serde_json::to_string(&UserInfo {
            username: Some("u".into()),
            ..UserInfo::default()
        })
        .expect("encode");
        assert_eq!(text, r#"{"username":"u"}"#);
    }

    fn opt_text() -> impl Strategy<Value = Option<String>> {
        proptest::option::of("[ -~]{0,12}")
    }

    fn entry() -> impl Strategy<Value = PolicyEntryInfo> {
        (
            opt_text(),
            proptest::option::of(proptest::collection::vec("[A-Za-z]{1,6}", 0..4)),
            proptest::option::of(proptest::collection::vec("[0-9./]{1,18}", 0..3)),
            opt_text(),
        )
            .prop_map(
                |(resource, actions, source_ips, decision)| PolicyEntryInfo {
                    resource,
                    actions,
                    source_ips,
                    decision,
                },
            )
    }

    proptest! {
        #[test]
        fn headers_and_bodies_round_trip(
            subject in opt_text(),
            policy_type in opt_text(),
            resource in opt_text(),
            entries in proptest::option::of(proptest::collection::vec(entry(), 0..4)),
            user in (opt_text(), opt_text(), opt_text(), opt_text()),
        ) {
            let h = DeleteAclRequestHeader { subject: subject.clone(), policy_type: policy_type.clone(), resource };
            let mut c = cmd();
            h.write_to(&mut c);
            prop_assert_eq!(DeleteAclRequestHeader::from_command(&c), h);

            let acl = AclInfo { subject, policies: Some(vec![PolicyInfo { policy_type, entries }]) };
            let text = serde_json::to_vec(&acl).expect("encode");
            prop_assert_eq!(serde_json::from_slice::<AclInfo>(&text).expect("decode"), acl);

            let user = UserInfo { username: user.0, password: user.1, user_type: user.2, user_status: user.3 };
            let text = serde_json::to_vec(&user).expect("encode");
            prop_assert_eq!(serde_json::from_slice::<UserInfo>(&text).expect("decode"), user);
        }
    }
}
