//! The keys a stored record is found by (QUERY_MESSAGE) and their index hash.
//!
//! A record's keys are the words of its `KEYS` property (split on spaces, as
//! `MessageConst.KEY_SEPARATOR`) and its `UNIQ_KEY` (the client-side message id), like the
//! reference's IndexService. Each is indexed as the 64-bit FNV-1a hash of `topic#key` (the
//! reference's index key), so a lookup names the topic and one key. The hash is part of
//! what meta stores: it must never change.

use stratus_compat::message::properties::{
    NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, keys as names,
};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The index hash of `key` in `topic`: FNV-1a 64 of the bytes of `topic#key`.
pub fn key_hash(topic: &str, key: &str) -> i64 {
    let mut h = FNV_OFFSET;
    for b in topic.bytes().chain([b'#']).chain(key.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    i64::from_ne_bytes(h.to_ne_bytes())
}

/// The distinct keys of an encoded properties string: the words of `KEYS`, then `UNIQ_KEY`,
/// empty words skipped. Never fails: malformed pairs are ignored.
pub fn record_keys(properties: &str) -> Vec<&str> {
    fn push<'a>(out: &mut Vec<&'a str>, k: &'a str) {
        if !k.is_empty() && !out.contains(&k) {
            out.push(k);
        }
    }
    let mut out: Vec<&str> = Vec::new();
    // A later duplicate replaces an earlier one, as in the properties parser.
    let (mut keys, mut uniq) = (None, None);
    for pair in properties.split(PROPERTY_SEPARATOR) {
        let Some((name, value)) = pair.split_once(NAME_VALUE_SEPARATOR) else {
            continue;
        };
        if name == names::KEYS {
            keys = Some(value);
        } else if name == names::UNIQ_KEY {
            uniq = Some(value);
        }
    }
    if let Some(k) = keys {
        for word in k.split(' ') {
            push(&mut out, word);
        }
    }
    if let Some(u) = uniq {
        push(&mut out, u);
    }
    out
}

/// The distinct index hashes of a record of `topic` with these properties.
pub fn record_key_hashes(topic: &str, properties: &str) -> Vec<i64> {
    let mut out: Vec<i64> = Vec::new();
    for k in record_keys(properties) {
        let h = key_hash(topic, k);
        if !out.contains(&h) {
            out.push(h);
        }
    }
    out
}

/// True when a record of `topic` with these properties has `key` among its keys (a hash
/// hit is checked with this before it is answered).
pub fn has_key(record_topic: &str, properties: &str, topic: &str, key: &str) -> bool {
    record_topic == topic && record_keys(properties).contains(&key)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn props(pairs: &[(&str, &str)]) -> String {
        pairs
            .iter()
            .map(|(n, v)| format!("{n}\u{1}{v}"))
            .collect::<Vec<_>>()
            .join("\u{2}")
    }

    #[test]
    fn keys_are_the_words_of_keys_then_the_unique_key() {
        let p = props(&[
            ("UNIQ_KEY", "7F00000100002A9F0000000000000001"),
            ("KEYS", "order-1  user-9 order-1"),
            ("TAGS", "a"),
        ]);
        assert_eq!(
            record_keys(&p),
            vec!["order-1", "user-9", "7F00000100002A9F0000000000000001"]
        );
        assert!(has_key("T", &p, "T", "user-9"));
        assert!(!has_key("T", &p, "U", "user-9"), "other topic");
        assert!(!has_key("T", &p, "T", "order"), "a prefix is not a key");
        assert!(!has_key("T", &p, "T", "a"), "tags are not keys");
    }

    #[test]
    fn records_without_keys_have_none_and_garbage_is_ignored() {
        assert!(record_keys("").is_empty());
        assert_eq!(
            record_keys(&props(&[("KEYS", "old"), ("KEYS", "new")])),
            vec!["new"],
            "a later KEYS replaces an earlier one"
        );
        assert!(record_keys("KEYS").is_empty(), "no separator");
        assert!(record_keys(&props(&[("KEYS", " ")])).is_empty());
        assert_eq!(
            record_keys("\u{2}\u{2}UNIQ_KEY\u{1}x\u{1}y"),
            vec!["x\u{1}y"]
        );
    }

    #[test]
    fn the_hash_is_fnv1a_of_topic_hash_key_and_stable() {
        // FNV-1a 64 of the empty string is the offset basis; of "#" one round.
        assert_eq!(key_hash("", "").cast_unsigned(), {
            (FNV_OFFSET ^ u64::from(b'#')).wrapping_mul(FNV_PRIME)
        });
        // Pinned: meta stores these values, so the function must never change.
        assert_eq!(key_hash("a", "b").cast_unsigned(), 0xe649_cb19_048b_e20d);
        assert_eq!(
            key_hash("TopicTest", "order-1").cast_unsigned(),
            0xc324_695e_e2d2_1099
        );
        assert_eq!(
            key_hash("a#", "b"),
            key_hash("a", "#b"),
            "only the bytes count"
        );
        assert_ne!(
            key_hash("T", "k1"),
            key_hash("U", "k1"),
            "the topic is part of it"
        );
    }

    proptest! {
        #[test]
        fn any_properties_string_is_handled(s in "\\PC{0,200}", topic in "\\PC{0,20}") {
            let keys = record_keys(&s);
            for (i, k) in keys.iter().enumerate() {
                prop_assert!(!k.is_empty());
                prop_assert!(!keys[..i].contains(k), "distinct");
                prop_assert!(has_key(&topic, &s, &topic, k));
            }
            let hashes = record_key_hashes(&topic, &s);
            prop_assert!(hashes.len() <= keys.len());
        }

        #[test]
        fn every_word_of_keys_is_found(words in proptest::collection::vec("[a-z0-9]{1,8}", 0..6)) {
            let p = props(&[("KEYS", &words.join(" ")), ("UNIQ_KEY", "U1")]);
            for w in &words {
                prop_assert!(has_key("T", &p, "T", w));
            }
            prop_assert!(has_key("T", &p, "T", "U1"));
        }
    }
}
