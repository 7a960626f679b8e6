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

/// The time field of a unique key in the client id layout (`MessageClientIDSetter`: IPv4
/// or IPv6 address, 2 + 4 bytes of process identity, 4 bytes of ms since the producer's
/// month start, 2 bytes of counter; 32 or 56 hex digits): its bytes 6..2 from the end.
/// `None` for any other string.
pub fn uniq_id_time(key: &str) -> Option<i64> {
    if key.len() != 32 && key.len() != 56 {
        return None;
    }
    if !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let field = key.get(key.len() - 12..key.len() - 4)?;
    u32::from_str_radix(field, 16).ok().map(i64::from)
}

/// The distinct index entries of a record of `topic` with these properties: (hash, id
/// time). The id time is set for the `UNIQ_KEY` when it has the client id layout (and is
/// not also a word of `KEYS`), so it is indexed by creation time; `None` for the rest.
pub fn record_key_entries(topic: &str, properties: &str) -> Vec<(i64, Option<i64>)> {
    let keys = record_keys(properties);
    let uniq = properties_uniq_key(properties);
    let mut out: Vec<(i64, Option<i64>)> = Vec::with_capacity(keys.len());
    for k in keys {
        let h = key_hash(topic, k);
        if out.iter().any(|(x, _)| *x == h) {
            continue;
        }
        let time = if Some(k) == uniq {
            uniq_id_time(k)
        } else {
            None
        };
        out.push((h, time));
    }
    out
}

/// The distinct index hashes of a record of `topic` with these properties.
pub fn record_key_hashes(topic: &str, properties: &str) -> Vec<i64> {
    record_key_entries(topic, properties)
        .into_iter()
        .map(|(h, _)| h)
        .collect()
}

/// The `UNIQ_KEY` of a properties string unless it is also one of its `KEYS` words.
fn properties_uniq_key(properties: &str) -> Option<&str> {
    let (mut keys, mut uniq) = (None, None);
    for pair in properties.split(PROPERTY_SEPARATOR) {
        match pair.split_once(NAME_VALUE_SEPARATOR) {
            Some((names::KEYS, v)) => keys = Some(v),
            Some((names::UNIQ_KEY, v)) => uniq = Some(v),
            _ => {}
        }
    }
    let u = uniq.filter(|u| !u.is_empty())?;
    if keys.is_some_and(|k| k.split(' ').any(|w| w == u)) {
        return None;
    }
    Some(u)
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

    #[test]
    fn client_ids_give_their_time_field() {
        // IPv4: ip 7F000001, pid 2A9F, class loader 12345678, time 00BC614E, counter 0001.
        let v4 = "7F0000012A9F1234567800BC614E0001";
        assert_eq!(uniq_id_time(v4), Some(12_345_678));
        let v6 = format!("{}{}", "FD00".repeat(8), "2A9F12345678FFFFFFFF0002");
        assert_eq!(uniq_id_time(&v6), Some(0xFFFF_FFFF));
        assert_eq!(
            uniq_id_time("7F0000012A9F1234567800BC614E000"),
            None,
            "31 digits"
        );
        assert_eq!(
            uniq_id_time("7F0000012A9F1234567800BC614E000G"),
            None,
            "not hex"
        );
        assert_eq!(uniq_id_time("order-1"), None);
        let server = stratus_compat::message::new_uniq_id(
            "10.0.0.1".parse().expect("literal"),
            7,
            1_700_000_000_000,
        );
        assert!(uniq_id_time(&server).is_some(), "the server's own ids too");
    }

    #[test]
    fn only_the_unique_key_in_id_layout_is_indexed_by_time() {
        let id = "7F0000012A9F1234567800BC614E0001";
        let p = props(&[("KEYS", "a b"), ("UNIQ_KEY", id)]);
        assert_eq!(
            record_key_entries("T", &p),
            vec![
                (key_hash("T", "a"), None),
                (key_hash("T", "b"), None),
                (key_hash("T", id), Some(12_345_678)),
            ]
        );
        // The same id among KEYS (a trace message names the message it traces) stays with
        // the other keys, once.
        let p = props(&[("KEYS", id), ("UNIQ_KEY", id)]);
        assert_eq!(record_key_entries("T", &p), vec![(key_hash("T", id), None)]);
        // A unique key in another layout is an ordinary key.
        let p = props(&[("UNIQ_KEY", "U1")]);
        assert_eq!(
            record_key_entries("T", &p),
            vec![(key_hash("T", "U1"), None)]
        );
    }

    proptest! {
        #[test]
        fn any_key_is_handled(s in "\\PC{0,64}", hex in "[0-9A-F]{32}|[0-9a-f]{56}") {
            let _ = uniq_id_time(&s);
            prop_assert!(uniq_id_time(&hex).is_some());
            let p = props(&[("UNIQ_KEY", &hex), ("KEYS", &s)]);
            let entries = record_key_entries("T", &p);
            prop_assert!(entries.iter().filter(|(_, t)| t.is_some()).count() <= 1);
        }

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
