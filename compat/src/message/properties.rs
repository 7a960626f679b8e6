//! The properties string (§15.4): `name 0x01 value 0x02` repeated.

/// Separator between a name and its value.
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Separator after each pair.
pub const PROPERTY_SEPARATOR: char = '\u{2}';

/// Well-known property keys (§17).
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
        let _ = s;
        todo!()
    }

    /// Value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
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

    /// Encodes as `name\x01value\x02…`.
    pub fn encode(&self) -> String {
        todo!()
    }
}
