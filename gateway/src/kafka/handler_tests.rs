//! The Kafka front end's handlers against an in-memory node (every shard owned, manual
//! clock): produce and fetch back, idempotent retries, offsets, groups, admin.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use stratus_compat::kafka::compression::Compression;
use stratus_compat::kafka::records::{BatchBuilder, Header, decode_batches};
use tokio_util::sync::CancellationToken;

use super::dispatch::{Ctx, sb};
use super::net::Conn;
use super::{Kafka, OtherMembers};
use crate::node::testing::{TestNode, node_with};

async fn front(shards: u32) -> (Arc<Kafka>, TestNode) {
    let test = node_with(|s| {
        s.node.shards = shards;
        s.kafka.group_initial_rebalance_delay = std::time::Duration::ZERO;
    })
    .await;
    let kafka = Kafka::new(test.node.clone(), OtherMembers(Arc::new(|_| false)));
    (kafka, test)
}

fn ctx(version: i16) -> Ctx {
    Ctx {
        conn: Conn {
            peer: "127.0.0.1:40000".parse().unwrap(),
            shard: None,
            closed: CancellationToken::new(),
        },
        version,
        client_id: "test-client".into(),
    }
}

fn batch(first_seq: i32, producer: i64, values: &[&str], compression: Compression) -> Bytes {
    let mut b = BatchBuilder::new(0, 1_700_000_000_000, compression);
    if producer >= 0 {
        b = b.producer(producer, 0, first_seq);
    }
    for (i, v) in values.iter().enumerate() {
        let headers = [Header {
            key: Bytes::from_static(b"h"),
            value: Some(Bytes::copy_from_slice(v.as_bytes())),
        }];
        b.push(
            i as i64,
            1_700_000_000_000 + i as i64,
            Some(b"key"),
            Some(v.as_bytes()),
            &headers,
        )
        .unwrap();
    }
    b.finish().unwrap()
}

fn produce_req(topic: &str, partition: i32, records: Bytes) -> ProduceRequest {
    let mut p = PartitionProduceData::default();
    p.index = partition;
    p.records = Some(records);
    let mut t = TopicProduceData::default();
    t.name = TopicName(sb(topic));
    t.partition_data = vec![p];
    let mut r = ProduceRequest::default();
    r.acks = -1;
    r.timeout_ms = 10_000;
    r.topic_data = vec![t];
    r
}

async fn produce(kafka: &Arc<Kafka>, topic: &str, partition: i32, records: Bytes) -> (i16, i64) {
    let resp = super::produce::start(kafka, &ctx(9), produce_req(topic, partition, records))
        .await
        .expect("acks=-1 is answered");
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

async fn fetch(
    kafka: &Arc<Kafka>,
    topic: &str,
    partition: i32,
    offset: i64,
) -> (i16, i64, Vec<(i64, String)>) {
    let mut fp = FetchPartition::default();
    fp.partition = partition;
    fp.fetch_offset = offset;
    fp.partition_max_bytes = 1 << 20;
    fp.current_leader_epoch = -1;
    let mut ft = FetchTopic::default();
    ft.topic = TopicName(sb(topic));
    ft.partitions = vec![fp];
    let mut req = FetchRequest::default();
    req.max_bytes = 1 << 20;
    req.max_wait_ms = 0;
    req.topics = vec![ft];
    let resp = super::fetch::fetch(kafka, &ctx(12), req).await;
    let pd = &resp.responses[0].partitions[0];
    let mut got = Vec::new();
    if let Some(records) = &pd.records {
        for b in decode_batches(records, 1 << 24).unwrap() {
            for r in &b.records {
                got.push((
                    b.record_offset(r),
                    String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap(),
                ));
            }
        }
    }
    (pd.error_code, pd.high_watermark, got)
}

async fn create(kafka: &Arc<Kafka>, topic: &str, partitions: i32) {
    super::admin::create_topic(kafka, topic, partitions)
        .await
        .unwrap();
}

#[tokio::test]
async fn produced_records_are_fetched_back_with_their_offsets_for_every_codec() {
    let (kafka, _t) = front(1).await;
    create(&kafka, "orders.v1", 1).await;
    let mut next = 0;
    for c in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let (code, base) =
            produce(&kafka, "orders.v1", 0, batch(-1, -1, &["a", "b", "c"], c)).await;
        assert_eq!((code, base), (0, next), "{c:?}");
        next += 3;
    }
    let (code, hw, got) = fetch(&kafka, "orders.v1", 0, 4).await;
    assert_eq!((code, hw), (0, 15));
    assert_eq!(got.first(), Some(&(4, "b".to_owned())));
    assert_eq!(got.len(), 11);
    assert!(
        got.windows(2).all(|w| w[1].0 == w[0].0 + 1),
        "dense offsets"
    );
    // Past the end, before the start: out of range; at the end: nothing.
    assert_eq!(fetch(&kafka, "orders.v1", 0, 16).await.0, 1);
    assert_eq!(fetch(&kafka, "orders.v1", 0, -1).await.0, 1);
    assert_eq!(fetch(&kafka, "orders.v1", 0, 15).await.2, vec![]);
}

#[tokio::test]
async fn retried_idempotent_batches_are_stored_once_and_gaps_refused() {
    let (kafka, _t) = front(1).await;
    create(&kafka, "idem", 1).await;
    assert_eq!(
        produce(
            &kafka,
            "idem",
            0,
            batch(0, 77, &["a", "b"], Compression::None)
        )
        .await,
        (0, 0)
    );
    assert_eq!(
        produce(&kafka, "idem", 0, batch(2, 77, &["c"], Compression::None)).await,
        (0, 2)
    );
    // The first batch again (a retry after a lost answer): its original offset, not stored.
    assert_eq!(
        produce(
            &kafka,
            "idem",
            0,
            batch(0, 77, &["a", "b"], Compression::None)
        )
        .await,
        (0, 0)
    );
    // A gap.
    assert_eq!(
        produce(&kafka, "idem", 0, batch(9, 77, &["x"], Compression::None))
            .await
            .0,
        45
    );
    let (_, hw, got) = fetch(&kafka, "idem", 0, 0).await;
    assert_eq!(hw, 3);
    assert_eq!(
        got.iter().map(|g| g.1.as_str()).collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
}

#[tokio::test]
async fn bad_batches_and_unknown_partitions_get_kafka_errors() {
    let (kafka, _t) = front(1).await;
    create(&kafka, "t", 2).await;
    let mut bad = batch(-1, -1, &["a"], Compression::None).to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    assert_eq!(
        produce(&kafka, "t", 0, Bytes::from(bad)).await.0,
        2,
        "CORRUPT_MESSAGE"
    );
    assert_eq!(
        produce(&kafka, "t", 5, batch(-1, -1, &["a"], Compression::None))
            .await
            .0,
        3
    );
    assert_eq!(
        produce(&kafka, "nope", 0, batch(-1, -1, &["a"], Compression::None))
            .await
            .0,
        3
    );
    assert_eq!(
        produce(&kafka, "t", 1, Bytes::from_static(b"\x00\x01"))
            .await
            .0,
        2
    );
}

#[tokio::test]
async fn partitions_spread_over_shards_and_metadata_names_each_leader() {
    let (kafka, _t) = front(3).await;
    create(&kafka, "spread", 6).await;
    let mut req = MetadataRequest::default();
    let mut t = metadata_request::MetadataRequestTopic::default();
    t.name = Some(TopicName(sb("spread")));
    req.topics = Some(vec![t]);
    let resp = super::metadata::metadata(&kafka, &ctx(12), req).await;
    let leaders: Vec<i32> = resp.topics[0]
        .partitions
        .iter()
        .map(|p| p.leader_id.0)
        .collect();
    assert_eq!(leaders, [0, 1, 2, 0, 1, 2]);
    for p in 0..6 {
        assert_eq!(
            produce(
                &kafka,
                "spread",
                p,
                batch(-1, -1, &["x"], Compression::None)
            )
            .await,
            (0, 0)
        );
    }
}

fn join_req(member: &str) -> JoinGroupRequest {
    let mut p = JoinGroupRequestProtocol::default();
    p.name = sb("range");
    p.metadata = Bytes::from_static(b"meta");
    let mut r = JoinGroupRequest::default();
    r.group_id = GroupId(sb("g"));
    r.session_timeout_ms = 10_000;
    r.rebalance_timeout_ms = 5_000;
    r.member_id = sb(member);
    r.protocol_type = sb("consumer");
    r.protocols = vec![p];
    r
}

#[tokio::test]
async fn a_member_joins_syncs_heartbeats_commits_and_leaves() {
    let (kafka, _t) = front(1).await;
    create(&kafka, "gt", 1).await;
    let first = super::groups::join(&kafka, &ctx(9), join_req("")).await;
    assert_eq!(first.error_code, 79, "MEMBER_ID_REQUIRED");
    let member = first.member_id.as_str().to_owned();
    let joined = super::groups::join(&kafka, &ctx(9), join_req(&member)).await;
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.leader.as_str(), member);
    assert_eq!(joined.members.len(), 1);
    let mut sync = SyncGroupRequest::default();
    sync.group_id = GroupId(sb("g"));
    sync.generation_id = joined.generation_id;
    sync.member_id = sb(member.clone());
    let mut a = sync_group_request::SyncGroupRequestAssignment::default();
    a.member_id = sb(member.clone());
    a.assignment = Bytes::from_static(b"assigned");
    sync.assignments = vec![a];
    let synced = super::groups::sync(&kafka, &ctx(5), sync).await;
    assert_eq!(
        (synced.error_code, &synced.assignment[..]),
        (0, &b"assigned"[..])
    );
    let mut hb = HeartbeatRequest::default();
    hb.group_id = GroupId(sb("g"));
    hb.generation_id = joined.generation_id;
    hb.member_id = sb(member.clone());
    assert_eq!(
        super::groups::heartbeat(&kafka, &ctx(4), hb.clone())
            .await
            .error_code,
        0
    );
    hb.generation_id += 1;
    assert_eq!(
        super::groups::heartbeat(&kafka, &ctx(4), hb)
            .await
            .error_code,
        22,
        "ILLEGAL_GENERATION"
    );

    let mut commit = OffsetCommitRequest::default();
    commit.group_id = GroupId(sb("g"));
    commit.generation_id_or_member_epoch = joined.generation_id;
    commit.member_id = sb(member.clone());
    let mut ct = offset_commit_request::OffsetCommitRequestTopic::default();
    ct.name = TopicName(sb("gt"));
    let mut cp = offset_commit_request::OffsetCommitRequestPartition::default();
    cp.partition_index = 0;
    cp.committed_offset = 42;
    ct.partitions = vec![cp];
    commit.topics = vec![ct];
    let resp = super::offsets::commit(&kafka, &ctx(8), commit).await;
    assert_eq!(resp.topics[0].partitions[0].error_code, 0);
    // The offset is the core's: RocketMQ's view of group "g" sees it.
    let q = kafka.queue_key("gt", super::partition_place(0, 1).unwrap());
    let stored = kafka
        .node
        .committed_offset(&stratus_compat::types::ConsumerGroup::new("g"), &q)
        .await
        .unwrap();
    assert_eq!(stored.map(|o| o.0), Some(42));

    let mut leave = LeaveGroupRequest::default();
    leave.group_id = GroupId(sb("g"));
    let mut m = leave_group_request::MemberIdentity::default();
    m.member_id = sb(member);
    leave.members = vec![m];
    let left = super::groups::leave(&kafka, &ctx(4), leave).await;
    assert_eq!(left.members[0].error_code, 0);
    let mut d = DescribeGroupsRequest::default();
    d.groups = vec![GroupId(sb("g"))];
    let described = super::groups::describe(&kafka, &ctx(5), d).await;
    assert_eq!(described.groups[0].group_state.as_str(), "Empty");
}

#[tokio::test]
async fn a_group_with_live_rocketmq_consumers_is_refused() {
    let test = node_with(|_| {}).await;
    let kafka = Kafka::new(test.node.clone(), OtherMembers(Arc::new(|g| g == "g")));
    let r = super::groups::join(&kafka, &ctx(9), join_req("")).await;
    assert_eq!(r.error_code, 23, "INCONSISTENT_GROUP_PROTOCOL");
}

#[tokio::test]
async fn a_shards_next_owner_answers_a_retried_batch_from_meta() {
    let (kafka, t) = front(1).await;
    create(&kafka, "failover", 1).await;
    assert_eq!(
        produce(
            &kafka,
            "failover",
            0,
            batch(0, 5, &["a", "b"], Compression::None)
        )
        .await,
        (0, 0)
    );
    assert_eq!(
        produce(
            &kafka,
            "failover",
            0,
            batch(2, 5, &["c"], Compression::None)
        )
        .await,
        (0, 2)
    );
    // A new front end (the shard's next owner) knows the producer only from meta.
    let next = Kafka::new(t.node.clone(), OtherMembers(Arc::new(|_| false)));
    let shard = stratus_meta::ShardId(0);
    next.producers
        .load(shard, t.node.meta.producer_batches(shard).await.unwrap());
    assert_eq!(
        produce(&next, "failover", 0, batch(2, 5, &["c"], Compression::None)).await,
        (0, 2)
    );
    assert_eq!(
        produce(&next, "failover", 0, batch(3, 5, &["d"], Compression::None)).await,
        (0, 3)
    );
    assert_eq!(
        fetch(&next, "failover", 0, 0).await.1,
        4,
        "nothing stored twice"
    );
}

/// Real requests of every family, encoded as a client would, then mutated (bytes flipped,
/// cut, lengths rewritten): decoding and serving them never panics, and the node still
/// answers a good request afterwards.
#[tokio::test]
async fn mutated_requests_never_panic_the_front_end() {
    use bytes::{BufMut, BytesMut};
    use kafka_protocol::protocol::Encodable;
    use rand::{Rng, SeedableRng};

    let (kafka, _t) = front(2).await;
    create(&kafka, "m", 4).await;
    fn frame<R: Encodable>(api: ApiKey, version: i16, req: &R) -> Vec<u8> {
        let mut h = RequestHeader::default();
        h.request_api_key = api as i16;
        h.request_api_version = version;
        h.correlation_id = 1;
        h.client_id = Some(sb("fuzz"));
        let mut b = BytesMut::new();
        h.encode(&mut b, api.request_header_version(version))
            .unwrap();
        req.encode(&mut b, version).unwrap();
        b.to_vec()
    }
    let mut meta = MetadataRequest::default();
    let mut mt = metadata_request::MetadataRequestTopic::default();
    mt.name = Some(TopicName(sb("m")));
    meta.topics = Some(vec![mt]);
    let mut fetch = FetchRequest::default();
    let mut ft = FetchTopic::default();
    ft.topic = TopicName(sb("m"));
    let mut fp = FetchPartition::default();
    fp.partition_max_bytes = 1 << 16;
    ft.partitions = vec![fp];
    fetch.topics = vec![ft];
    fetch.max_bytes = 1 << 20;
    let mut commit = OffsetCommitRequest::default();
    commit.group_id = GroupId(sb("g"));
    commit.generation_id_or_member_epoch = -1;
    let mut ct = offset_commit_request::OffsetCommitRequestTopic::default();
    ct.name = TopicName(sb("m"));
    ct.partitions = vec![offset_commit_request::OffsetCommitRequestPartition::default()];
    commit.topics = vec![ct];
    let mut create_req = CreateTopicsRequest::default();
    let mut c = create_topics_request::CreatableTopic::default();
    c.name = TopicName(sb("fresh"));
    c.num_partitions = 3;
    c.replication_factor = 1;
    create_req.topics = vec![c];
    let mut list = ListOffsetsRequest::default();
    let mut lt = list_offsets_request::ListOffsetsTopic::default();
    lt.name = TopicName(sb("m"));
    lt.partitions = vec![list_offsets_request::ListOffsetsPartition::default()];
    list.topics = vec![lt];
    let mut find = FindCoordinatorRequest::default();
    find.coordinator_keys = vec![sb("g")];
    let mut configs = DescribeConfigsRequest::default();
    let mut cr = describe_configs_request::DescribeConfigsResource::default();
    cr.resource_type = 2;
    cr.resource_name = sb("m");
    configs.resources = vec![cr];
    let seeds: Vec<Vec<u8>> = vec![
        frame(
            ApiKey::Produce,
            9,
            &produce_req("m", 1, batch(0, 9, &["a", "b"], Compression::Gzip)),
        ),
        frame(
            ApiKey::Produce,
            3,
            &produce_req("m", 0, batch(-1, -1, &["c"], Compression::Lz4)),
        ),
        frame(ApiKey::Metadata, 12, &meta),
        frame(ApiKey::Metadata, 1, &meta),
        frame(ApiKey::Fetch, 12, &fetch),
        frame(ApiKey::Fetch, 4, &fetch),
        frame(ApiKey::OffsetCommit, 8, &commit),
        frame(ApiKey::JoinGroup, 9, &join_req("")),
        frame(ApiKey::JoinGroup, 0, &join_req("")),
        frame(ApiKey::CreateTopics, 7, &create_req),
        frame(ApiKey::ListOffsets, 8, &list),
        frame(ApiKey::FindCoordinator, 6, &find),
        frame(ApiKey::DescribeConfigs, 4, &configs),
    ];
    let conn = ctx(0).conn;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let (mut served, mut refused) = (0u32, 0u32);
    for i in 0..20_000 {
        let mut f = seeds[i % seeds.len()].clone();
        match rng.random_range(0..4) {
            0 => {
                for _ in 0..rng.random_range(1..4) {
                    let at = rng.random_range(0..f.len());
                    f[at] ^= 1 << rng.random_range(0..8);
                }
            }
            1 => f.truncate(rng.random_range(0..f.len())),
            2 => {
                let at = rng
                    .random_range(8..f.len().max(9))
                    .min(f.len().saturating_sub(4));
                let v: i32 = [i32::MAX, -2, 0x7fff_fff0, 65_535][rng.random_range(0..4)];
                f[at..at + 4].copy_from_slice(&v.to_be_bytes());
            }
            _ => {
                let at = rng.random_range(0..f.len());
                let mut b = BytesMut::from(&f[..at]);
                b.put_u8(rng.random());
                b.put_slice(&f[at..]);
                f = b.to_vec();
            }
        }
        match super::dispatch::start(&kafka, &conn, Bytes::from(f)) {
            Ok(task) => {
                served += 1;
                let _ = tokio::time::timeout(std::time::Duration::from_millis(20), task).await;
            }
            Err(_) => refused += 1,
        }
    }
    assert!(
        served > 1000 && refused > 1000,
        "both paths exercised: {served} served, {refused} refused"
    );
    let good = super::dispatch::start(&kafka, &conn, Bytes::from(seeds[2].clone()))
        .unwrap()
        .await;
    assert!(matches!(good, super::dispatch::Answer::Frame(_)));
}

#[tokio::test]
#[allow(clippy::disallowed_methods)] // waits in real time for a background meta write
async fn a_groups_next_coordinator_keeps_its_members_and_generation() {
    let (kafka, t) = front(1).await;
    let member = super::groups::join(&kafka, &ctx(9), join_req(""))
        .await
        .member_id;
    let joined = super::groups::join(&kafka, &ctx(9), join_req(member.as_str())).await;
    let mut sync = SyncGroupRequest::default();
    sync.group_id = GroupId(sb("g"));
    sync.generation_id = joined.generation_id;
    sync.member_id = member.clone();
    let mut a = sync_group_request::SyncGroupRequestAssignment::default();
    a.member_id = member.clone();
    a.assignment = Bytes::from_static(b"mine");
    sync.assignments = vec![a];
    assert_eq!(
        super::groups::sync(&kafka, &ctx(5), sync).await.error_code,
        0
    );
    // The settled group reaches meta in the background.
    for _ in 0..200 {
        if t.node
            .meta
            .get_kv("stratus.kafka.groups", "g")
            .await
            .unwrap()
            .is_some()
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // The next coordinator (a new front end over the same meta) knows the member.
    let next = Kafka::new(t.node.clone(), OtherMembers(Arc::new(|_| false)));
    let mut hb = HeartbeatRequest::default();
    hb.group_id = GroupId(sb("g"));
    hb.generation_id = joined.generation_id;
    hb.member_id = member.clone();
    assert_eq!(
        super::groups::heartbeat(&next, &ctx(4), hb)
            .await
            .error_code,
        0
    );
    let mut d = DescribeGroupsRequest::default();
    d.groups = vec![GroupId(sb("g")), GroupId(sb("never"))];
    let described = super::groups::describe(&next, &ctx(5), d).await;
    assert_eq!(described.groups[0].group_state.as_str(), "Stable");
    assert_eq!(
        &described.groups[0].members[0].member_assignment[..],
        b"mine"
    );
    assert_eq!(described.groups[1].group_state.as_str(), "Dead");
}
