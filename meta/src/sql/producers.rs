//! Idempotent producers' recent batches ([`SegmentEffect::ProducerBatch`]): written by the
//! commit of the section holding the batch, read by a shard's next owner, expired by time.
//!
//! [`SegmentEffect::ProducerBatch`]: crate::model::SegmentEffect::ProducerBatch

use sqlx::Pool;
use stratus_compat::types::{QueueId, QueueOffset, Topic};

use super::convert::{shard_from_db, shard_to_db};
use super::dialect::Dialect;
use super::driver::{Bind, Columns, RowsAffected};
use crate::error::Result;
use crate::model::{ProducerBatch, ShardId};

/// Batches kept per producer and queue.
const KEEP: i64 = 5;

/// Inserts one batch (inside the commit's transaction) and forgets the producer's batches
/// on that queue older than the newest [`KEEP`].
pub(crate) async fn insert<D: Dialect>(tx: &mut D::Connection, b: &ProducerBatch) -> Result<()> {
    sqlx::query(
        "INSERT INTO producer_batches (shard_id, producer_id, topic, queue_id, first_offset, \
         epoch, first_seq, last_seq, committed_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         ON CONFLICT (shard_id, producer_id, topic, queue_id, first_offset) DO NOTHING",
    )
    .arg(shard_to_db(b.shard))
    .arg(b.producer_id)
    .arg(b.topic.as_str())
    .arg(b.queue_id.0)
    .arg(b.first_offset.0)
    .arg(i32::from(b.epoch))
    .arg(b.first_seq)
    .arg(b.last_seq)
    .arg(b.committed_ms)
    .execute(D::on_conn(tx))
    .await
    .map_err(D::db_err("remember a producer batch"))?;
    sqlx::query(
        "DELETE FROM producer_batches WHERE shard_id = $1 AND producer_id = $2 AND topic = $3 \
         AND queue_id = $4 AND first_offset < (SELECT MIN(first_offset) FROM (SELECT \
         first_offset FROM producer_batches WHERE shard_id = $1 AND producer_id = $2 AND \
         topic = $3 AND queue_id = $4 ORDER BY first_offset DESC LIMIT $5) AS newest)",
    )
    .arg(shard_to_db(b.shard))
    .arg(b.producer_id)
    .arg(b.topic.as_str())
    .arg(b.queue_id.0)
    .arg(KEEP)
    .execute(D::on_conn(tx))
    .await
    .map_err(D::db_err("forget old producer batches"))?;
    Ok(())
}

/// Every remembered batch of `shard`, by producer, queue and offset.
pub(crate) async fn producer_batches<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
) -> Result<Vec<ProducerBatch>> {
    let rows = sqlx::query(
        "SELECT shard_id, producer_id, topic, queue_id, first_offset, epoch, first_seq, \
         last_seq, committed_ms FROM producer_batches WHERE shard_id = $1 \
         ORDER BY producer_id, topic, queue_id, first_offset",
    )
    .arg(shard_to_db(shard))
    .try_map(|r: D::Row| {
        Ok((
            r.int(0)?,
            r.int(1)?,
            r.text(2)?,
            r.int4(3)?,
            r.int(4)?,
            r.int4(5)?,
            r.int4(6)?,
            r.int4(7)?,
            r.int(8)?,
        ))
    })
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("load producer batches"))?;
    rows.into_iter()
        .map(|(s, pid, topic, q, off, epoch, first, last, at)| {
            Ok(ProducerBatch {
                shard: shard_from_db(s)?,
                producer_id: pid,
                topic: Topic::new(topic),
                queue_id: QueueId(q),
                epoch: i16::try_from(epoch).unwrap_or(i16::MAX),
                first_seq: first,
                last_seq: last,
                first_offset: QueueOffset(off),
                committed_ms: at,
            })
        })
        .collect()
}

/// Forgets the batches of producers not heard from since `before_ms`; how many rows went.
pub(crate) async fn expire<D: Dialect>(pool: &Pool<D>, before_ms: i64) -> Result<u64> {
    let done = sqlx::query("DELETE FROM producer_batches WHERE committed_ms < $1")
        .arg(before_ms)
        .execute(D::on_pool(pool))
        .await
        .map_err(D::db_err("expire producer batches"))?;
    Ok(done.rows_affected())
}
