//! A segment section checked and converted to column values before its commit transaction
//! starts: what can be refused without the database is refused here.

use std::collections::HashSet;

use super::convert::{shard_to_db, u64_to_db};
use crate::error::{MetaError, Result};
use crate::model::{QueueAppend, SegmentCommit};

/// A checked section with its column values.
#[derive(Debug)]
pub(crate) struct Section<'a> {
    pub(crate) commit: &'a SegmentCommit,
    pub(crate) shard: i64,
    pub(crate) section_pos: i64,
    pub(crate) section_len: i64,
    pub(crate) footer_pos: i64,
    pub(crate) footer_len: i64,
    pub(crate) queues: Vec<Append<'a>>,
}

/// One queue append with its new max offset.
#[derive(Debug)]
pub(crate) struct Append<'a> {
    pub(crate) topic: &'a str,
    pub(crate) queue_id: i32,
    pub(crate) first: i64,
    pub(crate) count: i64,
    pub(crate) end: i64,
    pub(crate) append: &'a QueueAppend,
}

/// A section refused for `why`.
pub(crate) fn invalid(commit: &SegmentCommit, why: String) -> MetaError {
    MetaError::Conflict(format!(
        "segment {} shard {}: {why}",
        commit.object_key, commit.shard
    ))
}

impl<'a> Section<'a> {
    /// Checks what can be checked without the database: positions fit in BIGINT, the
    /// commit-log range is not reversed, every effect names the section's shard, each queue
    /// appears once with at least one entry.
    pub(crate) fn prepare(commit: &'a SegmentCommit) -> Result<Self> {
        if commit.commit_log_end < commit.commit_log_start {
            return Err(invalid(
                commit,
                format!(
                    "commit-log end {} before start {}",
                    commit.commit_log_end, commit.commit_log_start
                ),
            ));
        }
        if let Some(e) = commit.effects.iter().find(|e| e.shard() != commit.shard) {
            return Err(invalid(
                commit,
                format!("effect on shard {} in this section: {e:?}", e.shard()),
            ));
        }
        let mut seen = HashSet::with_capacity(commit.queues.len());
        let mut queues = Vec::with_capacity(commit.queues.len());
        for q in &commit.queues {
            if !seen.insert((q.topic.as_str(), q.queue_id)) {
                return Err(invalid(
                    commit,
                    format!("queue {}/{} twice", q.topic, q.queue_id),
                ));
            }
            let end = q
                .first_offset
                .0
                .checked_add(i64::from(q.count))
                .filter(|_| q.count > 0 && q.first_offset.0 >= 0)
                .ok_or_else(|| {
                    invalid(
                        commit,
                        format!(
                            "queue {}/{}: bad range {} + {}",
                            q.topic, q.queue_id, q.first_offset, q.count
                        ),
                    )
                })?;
            queues.push(Append {
                topic: q.topic.as_str(),
                queue_id: q.queue_id.0,
                first: q.first_offset.0,
                count: i64::from(q.count),
                end,
                append: q,
            });
        }
        Ok(Self {
            commit,
            shard: shard_to_db(commit.shard),
            section_pos: u64_to_db("section position", commit.section_pos)?,
            section_len: u64_to_db("section length", commit.section_len)?,
            footer_pos: u64_to_db("footer position", commit.footer_pos)?,
            footer_len: u64_to_db("footer length", commit.footer_len)?,
            queues,
        })
    }
}
