//! Vocabulary newtypes shared by every crate: the ids and offsets the protocol defines.
//!
//! Offsets of different kinds are different types: a [`QueueOffset`] (index in a
//! ConsumeQueue) can never be passed where a [`CommitLogOffset`] (byte handle of a stored
//! record) is expected.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! string_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Wraps a string without validating it.
            pub fn new(s: impl Into<String>) -> Self {
                Self(s.into())
            }
            /// The string form.
            pub fn as_str(&self) -> &str {
                &self.0
            }
            /// Consumes the wrapper.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:?}", self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

macro_rules! int_newtype {
    ($(#[$doc:meta])* $name:ident, $int:ty) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
        #[serde(transparent)]
        pub struct $name(pub $int);

        impl $name {
            /// The raw integer.
            pub const fn get(self) -> $int {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }
    };
}

string_newtype!(
    /// A RocketMQ topic name (`[%|a-zA-Z0-9_-]`, at most 127 bytes for normal topics).
    Topic
);
string_newtype!(
    /// A consumer group name.
    ConsumerGroup
);
string_newtype!(
    /// A producer group name.
    ProducerGroup
);
string_newtype!(
    /// A client instance id as sent in heartbeats (opaque text).
    ClientId
);
string_newtype!(
    /// A broker name as published in routes; Stratus publishes one per shard.
    BrokerName
);

int_newtype!(
    /// A queue id inside one broker (shard) of a topic.
    QueueId,
    i32
);
int_newtype!(
    /// The logical offset of a message in its ConsumeQueue: dense, from 0, never reused.
    QueueOffset,
    i64
);
int_newtype!(
    /// The 64-bit handle of a stored record (`PHYSICALOFFSET`), as carried in offset message ids.
    CommitLogOffset,
    i64
);
int_newtype!(
    /// The request id carried in `opaque`.
    Opaque,
    i32
);

impl QueueOffset {
    /// The offset `n` entries further on.
    pub const fn add(self, n: i64) -> Self {
        Self(self.0 + n)
    }
}

/// Java's `String.hashCode` over UTF-16 code units with 32-bit wrap-around, sign-extended
/// to 64 bits: the tags code a ConsumeQueue entry stores. Example: `TagA` → 2598919.
pub fn java_string_hash(s: &str) -> i64 {
    let mut h: i32 = 0;
    for unit in s.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(i32::from(unit));
    }
    i64::from(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_string_hash_matches_known_values() {
        assert_eq!(java_string_hash("TagA"), 2_598_919);
        assert_eq!(java_string_hash("*"), 42);
        assert_eq!(java_string_hash(""), 0);
        // Wraps like Java: "polygenelubricants".hashCode() == Integer.MIN_VALUE
        assert_eq!(java_string_hash("polygenelubricants"), i64::from(i32::MIN));
    }
}
