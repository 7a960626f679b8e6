//! The properties string (`docs/remoting-protocol.md#properties`): `name 0x01 value 0x02`
//! repeated.
//!
//! Parsing follows Java's `string2messageProperties`: split at `0x02`, split each segment at
//! its first `0x01`, skip segments with no separator or an empty name or value, and let a
//! later duplicate replace an earlier one. Names and values cannot contain the separators.

/// Separator between a name and its value.
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Separator after each pair.
pub const PROPERTY_SEPARATOR: char = '\u{2}';

/// Well-known property keys (`docs/remoting-protocol.md#property-keys`).
pub mod keys {
    /// Tag.
    pub const TAGS: &str = "TAGS";
    /// Space-separated keys.
    pub const KEYS: &str = "KEYS";
    /// Client unique id.
    pub const UNIQ_KEY: &str = "UNIQ_KEY";
    /// Wait for store.
    pub const WAIT: &str = "WAIT";
    /// Delay level.
    pub const DELAY: &str = "DELAY";
    /// Cluster name added on store.
    pub const CLUSTER: &str = "CLUSTER";
    /// Real topic while in a system topic.
    pub const REAL_TOPIC: &str = "REAL_TOPIC";
    /// Real queue id while in a system topic.
    pub const REAL_QID: &str = "REAL_QID";
    /// Half message marker.
    pub const TRAN_MSG: &str = "TRAN_MSG";
    /// Producer group.
    pub const PGROUP: &str = "PGROUP";
    /// 5.x POP checkpoint, stripped from sends.
    pub const POP_CK: &str = "POP_CK";
    /// Original topic of a retried message.
    pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
    /// Reconsume count on client re-sends.
    pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
    /// Max reconsume times on client re-sends.
    pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
    /// Id of the first delivery of a retried message.
    pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
    /// Timer message: absolute delivery time, ms since the epoch (5.x).
    pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
    /// Timer message: delay from the send, in seconds (5.x).
    pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
    /// Timer message: delay from the send, in milliseconds (5.x).
    pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
    /// Timer message: the due time the broker computed (set while it waits).
    pub const TIMER_OUT_MS: &str = "TIMER_OUT_MS";
    /// Half message: its transaction id (`MessageConst.PROPERTY_TRANSACTION_ID`).
    pub const TRANSACTION_ID: &str = "__transactionId__";
    /// Half message sent with CHECK_TRANSACTION_STATE: check-backs so far.
    pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
    /// Half message: seconds before the first check-back, at least the broker's timeout.
    pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
}

/// Ordered list of (name, value) pairs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Properties {
    pairs: Vec<(String, String)>,
}

impl Properties {
    /// Parses leniently: segments without a separator or with an empty name or value are
    /// skipped; a later duplicate overrides an earlier one.
    pub fn parse(s: &str) -> Self {
        let mut props = Self::default();
        for segment in s.split(PROPERTY_SEPARATOR) {
            if let Some((name, value)) = segment.split_once(NAME_VALUE_SEPARATOR)
                && !name.is_empty()
                && !value.is_empty()
            {
                props.insert(name, value);
            }
        }
        props
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// True when there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Sets (replacing) `name`.
    pub fn insert(&mut self, name: &str, value: &str) {
        match self.pairs.iter_mut().find(|(k, _)| k == name) {
            Some(pair) => pair.1 = value.to_owned(),
            None => self.pairs.push((name.to_owned(), value.to_owned())),
        }
    }

    /// Removes `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<String> {
        let i = self.pairs.iter().position(|(k, _)| k == name)?;
        Some(self.pairs.remove(i).1)
    }

    /// Pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Encodes as `name\x01value\x02…`, in insertion order. Pairs that [`Self::parse`]
    /// would drop (empty name or value) are left out, so `parse(encode(p)) == p` whenever no
    /// name or value contains a separator.
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(self.encoded_len());
        for (k, v) in self.iter().filter(|(k, v)| !k.is_empty() && !v.is_empty()) {
            out.push_str(k);
            out.push(NAME_VALUE_SEPARATOR);
            out.push_str(v);
            out.push(PROPERTY_SEPARATOR);
        }
        out
    }

    /// Length of [`Self::encode`]'s output.
    pub fn encoded_len(&self) -> usize {
        self.iter()
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
            .map(|(k, v)| k.len() + v.len() + 2)
            .sum()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Properties {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut props = Self::default();
        for (k, v) in iter {
            props.insert(&k.into(), &v.into());
        }
        props
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parse_reads_java_output_and_skips_malformed_segments() {
        let p = Properties::parse(
            "TAGS\u{1}TagA\u{2}KEYS\u{1}k1 k2\u{2}junk\u{2}\u{1}v\u{2}e\u{1}\u{2}a\u{1}b\u{1}c",
        );
        let pairs: Vec<_> = p.iter().collect();
        assert_eq!(
            pairs,
            vec![("TAGS", "TagA"), ("KEYS", "k1 k2"), ("a", "b\u{1}c")]
        );
    }

    #[test]
    fn later_duplicates_override_earlier_ones() {
        let p = Properties::parse("A\u{1}1\u{2}B\u{1}2\u{2}A\u{1}3\u{2}");
        assert_eq!(p.get("A"), Some("3"));
        assert_eq!(p.len(), 2);
    }

    #[test]
    fn encode_writes_a_separator_after_every_pair() {
        let p: Properties = [("WAIT", "true"), ("TAGS", "T"), ("EMPTY", "")]
            .into_iter()
            .collect();
        assert_eq!(p.encode(), "WAIT\u{1}true\u{2}TAGS\u{1}T\u{2}");
        assert_eq!(p.encoded_len(), p.encode().len());
        assert_eq!(Properties::default().encode(), "");
    }

    proptest! {
        #[test]
        fn properties_round_trip(pairs in proptest::collection::vec(("[^\u{1}\u{2}]{1,10}", "[^\u{1}\u{2}]{1,10}"), 0..8)) {
            let p: Properties = pairs.into_iter().collect();
            prop_assert_eq!(Properties::parse(&p.encode()), p);
        }

        #[test]
        fn properties_parse_never_panics(s in ".{0,64}") {
            let _ = Properties::parse(&s);
        }
    }
}
