//! Segment commits.
//!
//! A commit is one write transaction. Each section is checked first ([`Section::prepare`]),
//! then its rows are written by the dialect ([`Dialect::apply_section`]) with conditional
//! statements whose `WHERE` clauses carry the invariants (epoch, owner, commit-log end, queue
//! max offsets), so the happy path never reads before writing. When a condition does not
//! hold, the transaction reads what is stored to name the failure, then rolls back. A
//! section's effects (`half.rs`) run last in the same transaction, so they commit exactly
//! when the section does.

use sqlx::Pool;

use super::dialect::{Applied, Dialect};
use super::driver::{Bind, Columns};
use super::half::apply_effects;
use super::leases::shard_not_found;
use super::section::{Append, Section, invalid};
use crate::error::{MetaError, Result};
use crate::model::{Epoch, SegmentCommit};

pub(crate) async fn commit_segment<D: Dialect>(
    pool: &Pool<D>,
    sections: &[SegmentCommit],
) -> Result<()> {
    if sections.is_empty() {
        return Ok(());
    }
    let prepared = sections
        .iter()
        .map(Section::prepare)
        .collect::<Result<Vec<_>>>()?;
    let mut tx = pool
        .begin_with(D::BEGIN_WRITE)
        .await
        .map_err(D::db_err("begin segment commit"))?;
    for section in &prepared {
        apply_section::<D>(&mut tx, section).await?;
    }
    tx.commit().await.map_err(D::db_err("commit segment"))?;
    Ok(())
}

/// Applies one section inside the commit transaction. On error the caller drops the
/// transaction, which rolls every section back, effects included. A retry of a committed
/// section applies nothing, its effects included.
async fn apply_section<D: Dialect>(tx: &mut D::Connection, s: &Section<'_>) -> Result<()> {
    match D::apply_section(tx, s).await? {
        Applied::Done => apply_effects::<D>(tx, &s.commit.effects).await,
        Applied::ShardRefused => explain_shard_refusal::<D>(tx, s).await,
        Applied::QueuesRefused(range) => {
            let appends = s.queues.get(range).unwrap_or_default();
            Err(explain_queue_refusal::<D>(tx, s, appends).await)
        }
    }
}

/// The shard refused the commit-log advance: say why. A section identical to one already
/// committed (a retry after an ambiguous failure) is accepted and applies nothing.
async fn explain_shard_refusal<D: Dialect>(tx: &mut D::Connection, s: &Section<'_>) -> Result<()> {
    let c = s.commit;
    let row = sqlx::query("SELECT epoch, owner, commit_log_end FROM shards WHERE shard_id = $1")
        .arg(s.shard)
        .try_map(|r: D::Row| Ok((r.int(0)?, r.opt_text(1)?, r.int(2)?)))
        .fetch_optional(D::on_conn(tx))
        .await
        .map_err(D::db_err("read shard"))?;
    let Some((epoch, owner, end)) = row else {
        return Err(shard_not_found(c.shard));
    };
    if epoch != c.epoch.0 || owner.as_deref() != Some(c.node.0.as_str()) {
        return Err(MetaError::Fenced {
            shard: c.shard,
            ours: c.epoch,
            stored: Epoch(epoch),
        });
    }
    let already = sqlx::query(
        "SELECT segment_id FROM segments \
         WHERE shard_id = $1 AND commit_log_end = $2 AND commit_log_start = $3 \
           AND object_key = $4 AND epoch = $5",
    )
    .arg(s.shard)
    .arg(c.commit_log_end.0)
    .arg(c.commit_log_start.0)
    .arg(c.object_key.as_str())
    .arg(c.epoch.0)
    .try_map(|r: D::Row| r.int(0))
    .fetch_optional(D::on_conn(tx))
    .await
    .map_err(D::db_err("look up committed section"))?;
    if already.is_some() {
        return Ok(());
    }
    Err(invalid(
        c,
        format!(
            "commit-log start {} is not the stored end {end}",
            c.commit_log_start
        ),
    ))
}

/// Some queue's max offset was not the append's first offset: find the first one (the
/// transaction is rolled back afterwards).
async fn explain_queue_refusal<D: Dialect>(
    tx: &mut D::Connection,
    s: &Section<'_>,
    appends: &[Append<'_>],
) -> MetaError {
    for a in appends {
        let stored = sqlx::query(
            "SELECT max_offset FROM queues WHERE shard_id = $1 AND topic = $2 AND queue_id = $3",
        )
        .arg(s.shard)
        .arg(a.topic)
        .arg(a.queue_id)
        .try_map(|r: D::Row| r.int(0))
        .fetch_optional(D::on_conn(tx))
        .await;
        match stored {
            Err(e) => return D::map_sqlx("read queue max offset", e),
            Ok(max) => {
                // Read after the refused statement: queues it advanced (or created) now
                // end at the append's end, so only a queue at neither bound is the culprit.
                let max = max.unwrap_or(0);
                if max != a.first && max != a.end {
                    return invalid(
                        s.commit,
                        format!(
                            "queue {}/{}: first offset {} is not the stored max offset {max}",
                            a.topic, a.queue_id, a.first
                        ),
                    );
                }
            }
        }
    }
    MetaError::Conflict(format!(
        "segment {}: queue offsets changed during the commit",
        s.commit.object_key
    ))
}
