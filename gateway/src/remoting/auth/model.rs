//! The ACL 2.0 vocabulary: user types and states, resources and their patterns, actions,
//! decisions, source ranges, policies and ACLs; their names as the reference spells them
//! (parsed without regard to case) and the `AclInfo` form they travel and are stored in.

use std::net::IpAddr;

use stratus_compat::request::auth::{AclInfo, PolicyEntryInfo, PolicyInfo};
use stratus_compat::topic::{DLQ_PREFIX, RETRY_PREFIX};

macro_rules! named {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(crate) enum $name { $($(#[$vdoc])* $variant,)* }

        impl $name {
            /// The reference's name.
            pub(crate) fn name(self) -> &'static str {
                match self { $(Self::$variant => $text,)* }
            }

            /// By name, any case (`getByName`).
            pub(crate) fn parse(text: &str) -> Option<Self> {
                $(if text.eq_ignore_ascii_case($text) { return Some(Self::$variant); })*
                None
            }
        }
    };
}

named!(
    /// `UserType`.
    UserType {
        /// Skips authorization.
        Super => "Super",
        /// Needs ACL entries.
        Normal => "Normal",
    }
);

named!(
    /// `UserStatus`.
    UserStatus {
        /// May sign requests.
        Enable => "enable",
        /// Refused.
        Disable => "disable",
    }
);

named!(
    /// `Action`.
    Action {
        /// Every action (in an entry).
        All => "All",
        /// Any action (in a request: matches every entry with actions).
        Any => "Any",
        /// Send.
        Pub => "Pub",
        /// Consume.
        Sub => "Sub",
        /// Create.
        Create => "Create",
        /// Update.
        Update => "Update",
        /// Delete.
        Delete => "Delete",
        /// Read.
        Get => "Get",
        /// List.
        List => "List",
    }
);

named!(
    /// `Decision`.
    Decision {
        /// Allowed.
        Allow => "Allow",
        /// Denied.
        Deny => "Deny",
    }
);

named!(
    /// `PolicyType`.
    PolicyType {
        /// Written by operators; consulted first.
        Custom => "Custom",
        /// Consulted only when no custom entry matches.
        Default => "Default",
    }
);

named!(
    /// `ResourceType` (`*` alone is `Any`).
    ResourceType {
        /// Every resource.
        Any => "Any",
        /// The cluster (admin requests).
        Cluster => "Cluster",
        /// A namespace.
        Namespace => "Namespace",
        /// A topic.
        Topic => "Topic",
        /// A consumer group.
        Group => "Group",
    }
);

/// How a resource name matches (`ResourcePattern`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Pattern {
    /// `Topic:*`, `*`.
    Any,
    /// `Topic:t`.
    Literal,
    /// `Topic:t*`: names starting with `t`.
    Prefixed,
}

/// A resource: of a request (always literal) or of an entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Resource {
    pub(crate) kind: ResourceType,
    pub(crate) name: String,
    pub(crate) pattern: Pattern,
}

impl Resource {
    /// `Topic:<name>`, literal.
    pub(crate) fn topic(name: &str) -> Self {
        Self::literal(ResourceType::Topic, name)
    }

    /// `Group:<name>` with a `%RETRY%` / `%DLQ%` prefix taken off (`Resource.ofGroup`).
    pub(crate) fn group(name: &str) -> Self {
        let bare = if name.starts_with(RETRY_PREFIX) {
            without_retry_and_dlq(name)
        } else {
            name
        };
        Self::literal(ResourceType::Group, bare)
    }

    /// `Cluster:<name>`.
    pub(crate) fn cluster(name: &str) -> Self {
        Self::literal(ResourceType::Cluster, name)
    }

    pub(crate) fn literal(kind: ResourceType, name: &str) -> Self {
        Self {
            kind,
            name: name.to_owned(),
            pattern: Pattern::Literal,
        }
    }

    /// Parses a resource key (`Resource.of`): `*`, `Type:*`, `Type:prefix*`, `Type:name`.
    pub(crate) fn parse(key: &str) -> Option<Self> {
        if key.trim().is_empty() {
            return None;
        }
        if key == "*" {
            return Some(Self {
                kind: ResourceType::Any,
                name: String::new(),
                pattern: Pattern::Any,
            });
        }
        let (kind, name) = key.split_once(':').unwrap_or((key, ""));
        let kind = ResourceType::parse(kind)?;
        Some(if name == "*" {
            Self {
                kind,
                name: String::new(),
                pattern: Pattern::Any,
            }
        } else if let Some(prefix) = name.strip_suffix('*') {
            // The reference keeps what comes before the first `*`.
            let prefix = prefix.split('*').next().unwrap_or_default();
            Self {
                kind,
                name: prefix.to_owned(),
                pattern: Pattern::Prefixed,
            }
        } else {
            Self::literal(kind, name)
        })
    }

    /// The key form (`getResourceKey`).
    pub(crate) fn key(&self) -> String {
        if self.kind == ResourceType::Any {
            return "*".into();
        }
        match self.pattern {
            Pattern::Any => format!("{}:*", self.kind.name()),
            Pattern::Literal => format!("{}:{}", self.kind.name(), self.name),
            Pattern::Prefixed => format!("{}:{}*", self.kind.name(), self.name),
        }
    }

    /// Whether this (an entry's) resource covers `request`'s (`Resource.isMatch`).
    pub(crate) fn covers(&self, request: &Resource) -> bool {
        if self.kind == ResourceType::Any {
            return true;
        }
        if self.kind != request.kind {
            return false;
        }
        match self.pattern {
            Pattern::Any => true,
            Pattern::Literal => request.name == self.name,
            Pattern::Prefixed => request.name.starts_with(&self.name),
        }
    }
}

/// `%RETRY%g` / `%DLQ%g` → `g` (`NamespaceUtil.withOutRetryAndDLQ`).
pub(crate) fn without_retry_and_dlq(name: &str) -> &str {
    name.strip_prefix(RETRY_PREFIX)
        .or_else(|| name.strip_prefix(DLQ_PREFIX))
        .unwrap_or(name)
}

/// `NamespaceUtil.isRetryTopic`.
pub(crate) fn is_retry_topic(name: &str) -> bool {
    name.starts_with(RETRY_PREFIX)
}

/// An entry's source range: one address or a CIDR block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceRange {
    net: IpAddr,
    bits: u8,
}

impl SourceRange {
    /// `10.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (addr, bits) = match text.trim().split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (text.trim(), None),
        };
        let net: IpAddr = addr.parse().ok()?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            Some(b) => b.parse::<u8>().ok().filter(|b| *b <= max)?,
            None => max,
        };
        Some(Self { net, bits })
    }

    /// Whether `ip` is in the range (IPv4-mapped IPv6 addresses count as IPv4).
    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.net, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                prefix_eq(&n.octets(), &a.octets(), usize::from(self.bits))
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                prefix_eq(&n.octets(), &a.octets(), usize::from(self.bits))
            }
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: usize) -> bool {
    let whole = bits / 8;
    if a[..whole] != b[..whole] {
        return false;
    }
    let rest = bits % 8;
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    (a[whole] & mask) == (b[whole] & mask)
}

/// One entry of a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PolicyEntry {
    pub(crate) resource: Resource,
    pub(crate) actions: Vec<Action>,
    /// As given (for answers), and parsed.
    pub(crate) source_ips: Vec<(String, SourceRange)>,
    pub(crate) decision: Decision,
}

/// A policy: its type and entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    pub(crate) kind: PolicyType,
    pub(crate) entries: Vec<PolicyEntry>,
}

/// The ACL of one subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Acl {
    /// `User:<name>`.
    pub(crate) subject: String,
    pub(crate) policies: Vec<Policy>,
}

/// The user name of a `User:<name>` subject (`Subject.of`; the type any case).
pub(crate) fn subject_user(subject: &str) -> Option<&str> {
    let (kind, name) = subject.split_once(':')?;
    kind.eq_ignore_ascii_case("User").then_some(name)
}

impl Acl {
    pub(crate) fn policy(&self, kind: PolicyType) -> Option<&Policy> {
        self.policies.iter().find(|p| p.kind == kind)
    }

    /// Merges `policies` in (`Acl.updatePolicy`): a new policy type is added; in an existing
    /// one each entry replaces the entry of the same resource (actions, sources, decision)
    /// or is appended.
    pub(crate) fn merge(&mut self, policies: Vec<Policy>) {
        for new in policies {
            match self.policies.iter_mut().find(|p| p.kind == new.kind) {
                None => self.policies.push(new),
                Some(old) => {
                    for e in new.entries {
                        match old.entries.iter_mut().find(|o| o.resource == e.resource) {
                            Some(o) => *o = e,
                            None => old.entries.push(e),
                        }
                    }
                }
            }
        }
    }

    /// Deletes the entry for `resource` of policy `kind` (`Acl.deletePolicy`); a policy left
    /// empty goes too.
    pub(crate) fn delete_entry(&mut self, kind: PolicyType, resource: &Resource) {
        if let Some(p) = self.policies.iter_mut().find(|p| p.kind == kind) {
            p.entries.retain(|e| &e.resource != resource);
        }
        self.policies.retain(|p| !p.entries.is_empty());
    }

    /// The `AclInfo` form (`AclConverter.convertAcl`).
    pub(crate) fn to_info(&self) -> AclInfo {
        AclInfo {
            subject: Some(self.subject.clone()),
            policies: Some(
                self.policies
                    .iter()
                    .map(|p| PolicyInfo {
                        policy_type: Some(p.kind.name().to_owned()),
                        entries: Some(p.entries.iter().map(entry_info).collect()),
                    })
                    .collect(),
            ),
        }
    }

    /// From the `AclInfo` form, checked as the reference checks a created or updated ACL
    /// (`AclConverter` then `AuthorizationMetadataManagerImpl.validate`); `subject` is used
    /// when the body names none. Unknown action names are dropped, as the converter does.
    ///
    /// # Errors
    /// The reference's remark.
    pub(crate) fn from_info(info: &AclInfo, subject: Option<&str>) -> Result<Self, String> {
        let subject = info
            .subject
            .as_deref()
            .filter(|s| !s.is_empty())
            .or(subject)
            .unwrap_or_default();
        if subject_user(subject).is_none() {
            return Err("The subject type is null.".into());
        }
        let mut policies: Vec<Policy> = Vec::new();
        for p in info.policies.iter().flatten() {
            let kind = match p.policy_type.as_deref() {
                None => PolicyType::Custom,
                Some(t) => PolicyType::parse(t).unwrap_or(PolicyType::Custom),
            };
            let infos = p.entries.as_deref().unwrap_or_default();
            if infos.is_empty() {
                continue;
            }
            let mut entries = Vec::new();
            for e in infos {
                entries.push(entry_from_info(e)?);
            }
            policies.push(Policy { kind, entries });
        }
        if policies.is_empty() {
            return Err("The policies is empty.".into());
        }
        Ok(Self {
            subject: subject.to_owned(),
            policies,
        })
    }
}

fn entry_info(e: &PolicyEntry) -> PolicyEntryInfo {
    PolicyEntryInfo {
        resource: Some(e.resource.key()),
        actions: (!e.actions.is_empty())
            .then(|| e.actions.iter().map(|a| a.name().to_owned()).collect()),
        source_ips: (!e.source_ips.is_empty())
            .then(|| e.source_ips.iter().map(|(t, _)| t.clone()).collect()),
        decision: Some(e.decision.name().to_owned()),
    }
}

fn entry_from_info(e: &PolicyEntryInfo) -> Result<PolicyEntry, String> {
    let resource = e
        .resource
        .as_deref()
        .and_then(Resource::parse)
        .ok_or("The resource is null.")?;
    let mut actions = Vec::new();
    for a in e.actions.iter().flatten() {
        if let Some(a) = Action::parse(a)
            && !actions.contains(&a)
        {
            actions.push(a);
        }
    }
    if actions.is_empty() {
        return Err("The actions is empty.".into());
    }
    if actions.contains(&Action::Any) {
        return Err("The actions can not be Any.".into());
    }
    let mut source_ips = Vec::new();
    for ip in e.source_ips.iter().flatten() {
        if ip.trim().is_empty() {
            return Err("The source ip is empty.".into());
        }
        let range = SourceRange::parse(ip).ok_or("The source ip is invalid.")?;
        source_ips.push((ip.clone(), range));
    }
    let decision = e
        .decision
        .as_deref()
        .and_then(Decision::parse)
        .ok_or("The decision is null or illegal.")?;
    Ok(PolicyEntry {
        resource,
        actions,
        source_ips,
        decision,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_parse_and_print_as_the_reference() {
        for (key, kind, pattern, name) in [
            ("*", ResourceType::Any, Pattern::Any, ""),
            ("Topic:*", ResourceType::Topic, Pattern::Any, ""),
            (
                "topic:orders",
                ResourceType::Topic,
                Pattern::Literal,
                "orders",
            ),
            ("Group:g-*", ResourceType::Group, Pattern::Prefixed, "g-"),
            (
                "Cluster:DefaultCluster",
                ResourceType::Cluster,
                Pattern::Literal,
                "DefaultCluster",
            ),
        ] {
            let r = Resource::parse(key).expect(key);
            assert_eq!(
                (r.kind, r.pattern, r.name.as_str()),
                (kind, pattern, name),
                "{key}"
            );
        }
        assert_eq!(
            Resource::parse("topic:orders").expect("r").key(),
            "Topic:orders"
        );
        assert_eq!(Resource::parse("Group:g-*").expect("r").key(), "Group:g-*");
        assert!(Resource::parse("Queue:q").is_none());
        assert!(Resource::parse(" ").is_none());
        assert_eq!(Resource::group("%RETRY%g").name, "g");
        assert_eq!(
            Resource::group("%DLQ%g").name,
            "%DLQ%g",
            "only a retry name is stripped"
        );
    }

    #[test]
    fn source_ranges_match_addresses_and_blocks() {
        let r = SourceRange::parse("10.1.0.0/16").expect("cidr");
        assert!(r.contains("10.1.200.3".parse().expect("ip")));
        assert!(!r.contains("10.2.0.1".parse().expect("ip")));
        assert!(r.contains("::ffff:10.1.0.9".parse().expect("mapped")));
        let one = SourceRange::parse("127.0.0.1").expect("ip");
        assert!(one.contains("127.0.0.1".parse().expect("ip")));
        assert!(!one.contains("127.0.0.2".parse().expect("ip")));
        assert!(
            SourceRange::parse("fd00::/8")
                .expect("v6")
                .contains("fd12::1".parse().expect("ip"))
        );
        assert!(SourceRange::parse("10.0.0.0/33").is_none());
        assert!(SourceRange::parse("nope").is_none());
    }

    fn info(resource: &str, actions: &[&str], decision: &str) -> AclInfo {
        AclInfo {
            subject: Some("User:u".into()),
            policies: Some(vec![PolicyInfo {
                policy_type: None,
                entries: Some(vec![PolicyEntryInfo {
                    resource: Some(resource.into()),
                    actions: Some(actions.iter().map(|a| (*a).to_owned()).collect()),
                    source_ips: None,
                    decision: Some(decision.into()),
                }]),
            }]),
        }
    }

    #[test]
    fn acls_are_checked_merged_and_deleted_like_the_reference() {
        let bad = |i: AclInfo| Acl::from_info(&i, None).unwrap_err();
        assert_eq!(
            bad(info("Topic:t", &["Any"], "Allow")),
            "The actions can not be Any."
        );
        assert_eq!(
            bad(info("Topic:t", &["Fly"], "Allow")),
            "The actions is empty."
        );
        assert_eq!(
            bad(info("Queue:t", &["Pub"], "Allow")),
            "The resource is null."
        );
        assert_eq!(
            bad(info("Topic:t", &["Pub"], "Maybe")),
            "The decision is null or illegal."
        );
        assert_eq!(bad(AclInfo::default()), "The subject type is null.");
        let mut acl = Acl::from_info(&info("Topic:t", &["pub"], "allow"), None).expect("acl");
        assert_eq!(acl.policies[0].kind, PolicyType::Custom);
        let round = Acl::from_info(&acl.to_info(), None).expect("again");
        assert_eq!(round, acl);
        let later = Acl::from_info(&info("Topic:t", &["Sub"], "Deny"), None).expect("acl");
        let other = Acl::from_info(&info("Topic:u", &["Sub"], "Allow"), None).expect("acl");
        acl.merge(later.policies);
        acl.merge(other.policies);
        let entries = &acl.policies[0].entries;
        assert_eq!(entries.len(), 2);
        assert_eq!(
            (entries[0].actions.clone(), entries[0].decision),
            (vec![Action::Sub], Decision::Deny)
        );
        acl.delete_entry(PolicyType::Custom, &Resource::topic("t"));
        acl.delete_entry(PolicyType::Custom, &Resource::topic("u"));
        assert!(acl.policies.is_empty());
    }
}
