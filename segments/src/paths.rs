//! Object key layout; the only place keys are built.
//!
//! `<prefix>segments/<node>/<incarnation>/<seq:020>.seg`: the incarnation is random per
//! writer start, so a key is never written twice, whatever restarts, epochs and shard moves
//! happen; the zero-padded sequence makes keys of one incarnation sort in seal order.

use rand::{Rng, SeedableRng};
use stratus_meta::NodeId;

/// Key of segment `seq` of one writer incarnation.
pub fn segment_key(prefix: &str, node: &NodeId, incarnation: &str, seq: u64) -> String {
    format!(
        "{}segments/{}/{incarnation}/{seq:020}.seg",
        normalize_prefix(prefix),
        sanitize(&node.0)
    )
}

/// Prefix under which all segments of `node` live.
pub fn node_prefix(prefix: &str, node: &NodeId) -> String {
    format!(
        "{}segments/{}/",
        normalize_prefix(prefix),
        sanitize(&node.0)
    )
}

/// A fresh incarnation id: start time plus 64 random bits from the OS.
pub fn new_incarnation(now_ms: i64) -> String {
    let mut rng = rand::rngs::SmallRng::from_os_rng();
    format!("{now_ms:013}-{:016x}", rng.random::<u64>())
}

fn normalize_prefix(prefix: &str) -> String {
    let p = prefix.trim_matches('/');
    if p.is_empty() {
        String::new()
    } else {
        format!("{p}/")
    }
}

/// Node ids become one path segment: anything outside `[A-Za-z0-9._-]` turns into `_`.
fn sanitize(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.chars().all(|c| c == '.') {
        format!("_{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_node_incarnation_and_padded_sequence() {
        let k = segment_key("", &NodeId("node-1".into()), "inc", 42);
        assert_eq!(k, "segments/node-1/inc/00000000000000000042.seg");
        let k = segment_key("/bucket/x/", &NodeId("a/b c".into()), "i", 1);
        assert_eq!(k, "bucket/x/segments/a_b_c/i/00000000000000000001.seg");
    }

    #[test]
    fn incarnations_differ() {
        assert_ne!(new_incarnation(5), new_incarnation(5));
    }
}
