//! Which entry of an ACL decides a request (the reference's `AclAuthorizationHandler`).
//!
//! The custom policy's matching entries are taken; only when none matches, the default
//! policy's. An entry matches when its resource covers the request's, one of the requested
//! actions is among its actions (or it has `All`; a request asking `Any` matches every entry
//! that has actions) and the source address is in one of its ranges (no ranges: any). Of the
//! matching entries the most specific decides: a typed resource before `*`; then `LITERAL`
//! before `PREFIXED` before `Type:*`; then the longer prefix; on a full tie `Allow` before
//! `Deny`. No matching entry: denied.
//!
//! Two notes on the reference. 5.3.3's comparator put the *shorter* prefix first and ordered
//! mixed patterns inconsistently (a later fix, on its main branch, made it longer-first and
//! LITERAL < PREFIXED < ANY); Stratus follows the fixed order. And its tie-break's comment
//! says "the decision deny has higher priority" while the code sorts `Allow` first; Stratus
//! follows the code.

use std::cmp::Ordering;
use std::net::IpAddr;

use super::model::{Acl, Action, Pattern, PolicyEntry, PolicyType, Resource, ResourceType};

/// Whether `entry` applies to a request for `resource` with `actions` from `ip`.
fn matches(
    entry: &PolicyEntry,
    resource: &Resource,
    actions: &[Action],
    ip: Option<IpAddr>,
) -> bool {
    if !entry.resource.covers(resource) {
        return false;
    }
    if entry.actions.is_empty() {
        return false;
    }
    let action_ok = actions.contains(&Action::Any)
        || actions
            .iter()
            .any(|a| entry.actions.contains(a) || entry.actions.contains(&Action::All));
    if !action_ok {
        return false;
    }
    if entry.source_ips.is_empty() {
        return true;
    }
    ip.is_some_and(|ip| entry.source_ips.iter().any(|(_, r)| r.contains(ip)))
}

fn pattern_rank(p: Pattern) -> u8 {
    match p {
        Pattern::Literal => 0,
        Pattern::Prefixed => 1,
        Pattern::Any => 2,
    }
}

/// Most specific first.
fn precedence(a: &PolicyEntry, b: &PolicyEntry) -> Ordering {
    let (ra, rb) = (&a.resource, &b.resource);
    let any_a = ra.kind == ResourceType::Any;
    let any_b = rb.kind == ResourceType::Any;
    any_a
        .cmp(&any_b)
        .then_with(|| pattern_rank(ra.pattern).cmp(&pattern_rank(rb.pattern)))
        .then_with(|| {
            if ra.pattern == Pattern::Prefixed && rb.pattern == Pattern::Prefixed {
                rb.name.len().cmp(&ra.name.len())
            } else {
                Ordering::Equal
            }
        })
        // Allow (declared first) before Deny.
        .then_with(|| (a.decision as u8).cmp(&(b.decision as u8)))
}

/// The entry that decides, if any.
pub(crate) fn deciding_entry<'a>(
    acl: &'a Acl,
    resource: &Resource,
    actions: &[Action],
    ip: Option<IpAddr>,
) -> Option<&'a PolicyEntry> {
    let pick = |kind| {
        acl.policy(kind).and_then(|p| {
            p.entries
                .iter()
                .filter(|e| matches(e, resource, actions, ip))
                .min_by(|a, b| precedence(a, b))
        })
    };
    pick(PolicyType::Custom).or_else(|| pick(PolicyType::Default))
}

#[cfg(test)]
mod tests {
    use super::super::model::{Decision, Policy, SourceRange};
    use super::*;

    fn entry(resource: &str, actions: &[Action], ips: &[&str], decision: Decision) -> PolicyEntry {
        PolicyEntry {
            resource: Resource::parse(resource).expect("resource"),
            actions: actions.to_vec(),
            source_ips: ips
                .iter()
                .map(|t| ((*t).to_owned(), SourceRange::parse(t).expect("range")))
                .collect(),
            decision,
        }
    }

    fn acl(custom: Vec<PolicyEntry>, default: Vec<PolicyEntry>) -> Acl {
        let mut policies = vec![];
        if !custom.is_empty() {
            policies.push(Policy {
                kind: PolicyType::Custom,
                entries: custom,
            });
        }
        if !default.is_empty() {
            policies.push(Policy {
                kind: PolicyType::Default,
                entries: default,
            });
        }
        Acl {
            subject: "User:u".into(),
            policies,
        }
    }

    const IP: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 7)));

    fn decide(acl: &Acl, resource: Resource, actions: &[Action]) -> Option<(String, Decision)> {
        deciding_entry(acl, &resource, actions, IP).map(|e| (e.resource.key(), e.decision))
    }

    use Action::*;
    use Decision::{Allow, Deny};

    #[test]
    fn resource_action_and_source_must_all_match() {
        let a = acl(
            vec![entry("Topic:t", &[Pub], &["10.0.0.0/24"], Allow)],
            vec![],
        );
        assert!(decide(&a, Resource::topic("t"), &[Pub]).is_some());
        assert!(
            decide(&a, Resource::topic("u"), &[Pub]).is_none(),
            "resource"
        );
        assert!(decide(&a, Resource::topic("t"), &[Sub]).is_none(), "action");
        assert!(
            decide(&a, Resource::topic("t"), &[Sub, Pub]).is_some(),
            "any requested action"
        );
        assert!(
            decide(&a, Resource::topic("t"), &[Any]).is_some(),
            "Any matches any entry"
        );
        assert!(decide(&a, Resource::group("t"), &[Pub]).is_none(), "type");
        let far = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 168, 0, 1)));
        assert!(
            deciding_entry(&a, &Resource::topic("t"), &[Pub], far).is_none(),
            "source"
        );
        assert!(deciding_entry(&a, &Resource::topic("t"), &[Pub], None).is_none());
        let all = acl(vec![entry("Topic:t", &[All], &[], Allow)], vec![]);
        assert!(
            decide(&all, Resource::topic("t"), &[Delete]).is_some(),
            "All"
        );
    }

    #[test]
    fn custom_first_and_default_only_without_a_custom_match() {
        let a = acl(
            vec![entry("Topic:t", &[Pub], &[], Deny)],
            vec![entry("*", &[All], &[], Allow)],
        );
        assert_eq!(
            decide(&a, Resource::topic("t"), &[Pub]).map(|d| d.1),
            Some(Deny)
        );
        assert_eq!(
            decide(&a, Resource::topic("u"), &[Pub]).map(|d| d.1),
            Some(Allow)
        );
        // A custom *Allow* on `*` hides a more specific default entry.
        let b = acl(
            vec![entry("*", &[Pub], &[], Allow)],
            vec![entry("Topic:t", &[Pub], &[], Deny)],
        );
        assert_eq!(
            decide(&b, Resource::topic("t"), &[Pub]).map(|d| d.1),
            Some(Allow)
        );
    }

    #[test]
    fn the_most_specific_entry_wins() {
        let a = acl(
            vec![
                entry("*", &[Pub], &[], Deny),
                entry("Topic:*", &[Pub], &[], Deny),
                entry("Topic:or*", &[Pub], &[], Deny),
                entry("Topic:orders*", &[Pub], &[], Allow),
                entry("Topic:orders-eu", &[Pub], &[], Deny),
            ],
            vec![],
        );
        let d = |t: &str| decide(&a, Resource::topic(t), &[Pub]).expect("match");
        assert_eq!(
            d("orders-eu"),
            ("Topic:orders-eu".into(), Deny),
            "literal first"
        );
        assert_eq!(
            d("orders-us"),
            ("Topic:orders*".into(), Allow),
            "longer prefix"
        );
        assert_eq!(d("ore"), ("Topic:or*".into(), Deny), "prefix before Type:*");
        assert_eq!(d("x"), ("Topic:*".into(), Deny), "typed before *");
        assert_eq!(
            decide(&a, Resource::group("g"), &[Pub]),
            Some(("*".into(), Deny)),
            "* covers every type"
        );
    }

    #[test]
    fn on_a_full_tie_allow_comes_first_as_the_reference_code_sorts() {
        for order in [[Deny, Allow], [Allow, Deny]] {
            let a = acl(
                order
                    .iter()
                    .map(|d| entry("Topic:t", &[Pub], &[], *d))
                    .collect(),
                vec![],
            );
            assert_eq!(
                decide(&a, Resource::topic("t"), &[Pub]).map(|d| d.1),
                Some(Allow)
            );
        }
    }

    #[test]
    fn nothing_matching_is_no_decision() {
        let a = acl(vec![], vec![entry("Group:g", &[Sub], &[], Allow)]);
        assert!(decide(&a, Resource::topic("t"), &[Sub]).is_none());
        assert!(decide(&acl(vec![], vec![]), Resource::topic("t"), &[Sub]).is_none());
    }
}
