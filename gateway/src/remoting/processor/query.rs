//! QUERY_MESSAGE (12): messages by key or unique key, as the reference's
//! `QueryMessageProcessor` answers it, from the key index (`Reader::find_by_key`).
//!
//! The Java admin sends the query to every broker of the topic's route and merges the
//! answers (filtering on the keys itself), so a node answers for the one shard the request
//! is for: its `bname`, else the port it came in on. The body is the stored records back to
//! back, the bytes a pull returns, so the client's decoder gives them their offset and
//! client ids.

use std::sync::Arc;

use bytes::BytesMut;
use stratus_compat::ResponseCode;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::broker_name;
use stratus_compat::request::query::{QueryMessageRequestHeader, QueryMessageResponseHeader};

use crate::error::Result;
use crate::remoting::Remoting;
use crate::remoting::dispatch::{respond, success};
use crate::remoting::net::Channel;

/// The reference's remark when nothing matched.
pub(crate) const NOT_FOUND_REMARK: &str = "can not find message, maybe time range not correct";

/// Byte position of PHYSICALOFFSET in a stored record.
const PHYSICAL_OFFSET_POS: usize = 28;

/// QUERY_MESSAGE (12).
pub(crate) async fn query_message(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = QueryMessageRequestHeader::from_command(cmd)?;
    let shard = rmq
        .node
        .shards
        .require(broker_name(cmd).as_deref(), ch.shard)?;
    let records = rmq
        .node
        .reader
        .find_by_key(
            shard,
            &h.topic,
            &h.key,
            h.begin_timestamp,
            h.end_timestamp,
            h.effective_max(),
        )
        .await?;
    // The index is written in the commit of the records it names, so it is complete up to
    // now; the offset is the newest record answered (the reference gives its index file's
    // end: the time and offset up to which it is built).
    let header = QueryMessageResponseHeader {
        index_last_update_timestamp: rmq.node.clock.now_ms(),
        index_last_update_phyoffset: records
            .iter()
            .filter_map(|r| r.get(PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8))
            .filter_map(|b| <[u8; 8]>::try_from(b).ok())
            .map(i64::from_be_bytes)
            .max()
            .unwrap_or(0),
    };
    let mut resp = if records.is_empty() {
        respond(ResponseCode::QueryNotFound, NOT_FOUND_REMARK)
    } else {
        let mut body = BytesMut::with_capacity(records.iter().map(|r| r.len()).sum());
        for r in &records {
            body.extend_from_slice(r);
        }
        let mut resp = success();
        resp.body = body.freeze();
        resp
    };
    header.write_to(&mut resp);
    Ok(resp)
}
