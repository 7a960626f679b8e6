//! Checks for shards and leases: creation, acquire, renew, release, expiry and takeover.

use super::node;
use crate::MetaStore;
use crate::error::MetaError;
use crate::model::{Epoch, ShardId, ShardLease};

fn free(shard: u32, epoch: i64) -> ShardLease {
    ShardLease {
        shard: ShardId(shard),
        epoch: Epoch(epoch),
        owner: None,
        expires_at_ms: 0,
    }
}

async fn lease_of(store: &dyn MetaStore, shard: u32) -> ShardLease {
    store
        .list_shards()
        .await
        .expect("list shards")
        .into_iter()
        .find(|l| l.shard == ShardId(shard))
        .expect("shard listed")
}

/// Needs an empty shard table; uses shards 0..4.
pub(super) async fn ensure_shards_creates_missing_free_shards(store: &dyn MetaStore) {
    assert_eq!(
        store.list_shards().await.expect("list"),
        vec![],
        "no shards at start"
    );
    assert_eq!(
        store.ensure_shards(0).await.expect("ensure 0"),
        vec![],
        "zero shards"
    );
    assert_eq!(
        store.ensure_shards(2).await.expect("ensure 2"),
        vec![free(0, 0), free(1, 0)],
        "shards 0..2 created free at epoch 0"
    );
    let n = node("ensure-node");
    let held = store
        .acquire_shard(ShardId(1), &n, 100, 50)
        .await
        .expect("acquire")
        .expect("free");
    let expect_held = ShardLease {
        shard: ShardId(1),
        epoch: Epoch(1),
        owner: Some(n.clone()),
        expires_at_ms: 150,
    };
    assert_eq!(held, expect_held);
    assert_eq!(
        store.ensure_shards(4).await.expect("ensure 4"),
        vec![free(0, 0), expect_held.clone(), free(2, 0), free(3, 0)],
        "existing shards are untouched, missing ones added"
    );
    assert_eq!(
        store.ensure_shards(3).await.expect("ensure 3").len(),
        4,
        "a smaller count removes nothing and returns every shard"
    );
    assert_eq!(store.list_shards().await.expect("list").len(), 4);
    store
        .release_shard(ShardId(1), &n, Epoch(1))
        .await
        .expect("release");
}

pub(super) async fn acquire_free_shard_bumps_epoch(store: &dyn MetaStore) {
    let n = node("node-a");
    let lease = store
        .acquire_shard(ShardId(4), &n, 1_000, 500)
        .await
        .expect("acquire")
        .expect("shard 4 is free");
    let want = ShardLease {
        shard: ShardId(4),
        epoch: Epoch(1),
        owner: Some(n),
        expires_at_ms: 1_500,
    };
    assert_eq!(lease, want, "free shard taken at epoch 0 + 1");
    assert_eq!(lease_of(store, 4).await, want, "stored lease");
}

pub(super) async fn acquire_held_shard_is_refused_until_expiry(store: &dyn MetaStore) {
    let (a, b) = (node("node-a"), node("node-b"));
    let held = store
        .acquire_shard(ShardId(5), &a, 1_000, 500)
        .await
        .expect("acquire")
        .expect("free");
    assert_eq!(
        store
            .acquire_shard(ShardId(5), &b, 1_499, 500)
            .await
            .expect("acquire by b"),
        None,
        "live lease of another node"
    );
    assert_eq!(
        lease_of(store, 5).await,
        held,
        "refused acquire changes nothing"
    );

    let taken = store
        .acquire_shard(ShardId(5), &b, 1_500, 500)
        .await
        .expect("acquire by b")
        .expect("expired at its expiry time");
    assert_eq!(
        taken,
        ShardLease {
            shard: ShardId(5),
            epoch: Epoch(2),
            owner: Some(b.clone()),
            expires_at_ms: 2_000,
        },
        "takeover bumps the epoch"
    );
    match store
        .renew_shard(ShardId(5), &a, Epoch(1), 1_600, 500)
        .await
    {
        Err(MetaError::Fenced {
            shard,
            ours,
            stored,
        }) => {
            assert_eq!((shard, ours, stored), (ShardId(5), Epoch(1), Epoch(2)));
        }
        other => panic!("old owner renewing after takeover: want Fenced, got {other:?}"),
    }
}

pub(super) async fn reacquiring_own_shard_bumps_epoch_and_fences_the_old_incarnation(
    store: &dyn MetaStore,
) {
    let a = node("node-a");
    let first = store
        .acquire_shard(ShardId(6), &a, 0, 1_000)
        .await
        .expect("acquire")
        .expect("free");
    let again = store
        .acquire_shard(ShardId(6), &a, 100, 1_000)
        .await
        .expect("acquire again")
        .expect("ours");
    assert_eq!(
        again.epoch.0,
        first.epoch.0 + 1,
        "a restarted process of the same node gets a new epoch"
    );
    assert_eq!(again.expires_at_ms, 1_100, "and a fresh lease");
    assert_eq!(again.owner, Some(a.clone()));
    match store
        .renew_shard(ShardId(6), &a, first.epoch, 200, 1_000)
        .await
    {
        Err(MetaError::Fenced { ours, stored, .. }) => {
            assert_eq!((ours, stored), (first.epoch, again.epoch));
        }
        other => panic!("the previous incarnation renewing: want Fenced, got {other:?}"),
    }
}

pub(super) async fn renew_extends_and_fences_stale_holders(store: &dyn MetaStore) {
    let (a, b) = (node("node-a"), node("node-b"));
    let e = super::take(store, 7, &a).await;
    let renewed = store
        .renew_shard(ShardId(7), &a, e, 200, 300)
        .await
        .expect("renew");
    assert_eq!(
        renewed,
        ShardLease {
            shard: ShardId(7),
            epoch: e,
            owner: Some(a.clone()),
            expires_at_ms: 500,
        }
    );
    match store.renew_shard(ShardId(7), &b, e, 200, 300).await {
        Err(MetaError::Fenced { ours, stored, .. }) => assert_eq!((ours, stored), (e, e)),
        other => panic!("renew by a node that does not own: want Fenced, got {other:?}"),
    }
    let future = Epoch(e.0 + 1);
    match store.renew_shard(ShardId(7), &a, future, 200, 300).await {
        Err(MetaError::Fenced { ours, stored, .. }) => assert_eq!((ours, stored), (future, e)),
        other => panic!("renew with a wrong epoch: want Fenced, got {other:?}"),
    }
    assert_eq!(
        lease_of(store, 7).await,
        renewed,
        "failed renewals change nothing"
    );
}

/// A lease that expired while its owner could not reach meta (an outage) but that nobody took
/// is renewed under the same epoch: the owner keeps the shard, nothing is fenced.
pub(super) async fn renew_after_expiry_keeps_an_untaken_lease(store: &dyn MetaStore) {
    let a = node("node-a");
    let taken = store
        .acquire_shard(ShardId(4), &a, 10_000, 100)
        .await
        .expect("acquire")
        .expect("shard 4 is free or ours");
    assert_eq!(taken.expires_at_ms, 10_100);
    let renewed = store
        .renew_shard(ShardId(4), &a, taken.epoch, 50_000, 100)
        .await
        .expect("renewing an expired lease nobody took");
    assert_eq!(
        renewed,
        ShardLease {
            shard: ShardId(4),
            epoch: taken.epoch,
            owner: Some(a.clone()),
            expires_at_ms: 50_100,
        },
        "same epoch, fresh expiry"
    );
    assert_eq!(lease_of(store, 4).await, renewed);
}

pub(super) async fn release_clears_owner_and_keeps_epoch(store: &dyn MetaStore) {
    let (a, b) = (node("node-a"), node("node-b"));
    let e = super::take(store, 8, &a).await;
    store
        .release_shard(ShardId(8), &a, e)
        .await
        .expect("release");
    let released = lease_of(store, 8).await;
    assert_eq!(
        (released.owner, released.epoch),
        (None, e),
        "owner cleared, epoch kept"
    );
    store
        .release_shard(ShardId(8), &a, e)
        .await
        .expect("releasing again under the same epoch is a no-op");
    match store.renew_shard(ShardId(8), &a, e, 10, 10).await {
        Err(MetaError::Fenced { .. }) => {}
        other => panic!("renew after release: want Fenced, got {other:?}"),
    }

    // A released shard is free at once, even before the old expiry.
    let taken = store
        .acquire_shard(ShardId(8), &b, 1, 1_000)
        .await
        .expect("acquire by b")
        .expect("released shard is free");
    assert_eq!(
        taken.epoch,
        Epoch(e.0 + 1),
        "taking a released shard bumps the epoch"
    );
    match store.release_shard(ShardId(8), &a, e).await {
        Err(MetaError::Fenced { ours, stored, .. }) => {
            assert_eq!((ours, stored), (e, taken.epoch));
        }
        other => panic!("release under an old epoch: want Fenced, got {other:?}"),
    }
    assert_eq!(
        lease_of(store, 8).await,
        taken,
        "stale release changes nothing"
    );
}

pub(super) async fn lease_calls_on_unknown_shard_are_not_found(store: &dyn MetaStore) {
    let a = node("node-a");
    let unknown = ShardId(9_999);
    let is_not_found = |r: &Result<(), MetaError>| matches!(r, Err(MetaError::NotFound { .. }));
    let acquire = store.acquire_shard(unknown, &a, 0, 10).await.map(|_| ());
    assert!(is_not_found(&acquire), "acquire unknown shard: {acquire:?}");
    let renew = store
        .renew_shard(unknown, &a, Epoch(1), 0, 10)
        .await
        .map(|_| ());
    assert!(is_not_found(&renew), "renew unknown shard: {renew:?}");
    let release = store.release_shard(unknown, &a, Epoch(1)).await;
    assert!(is_not_found(&release), "release unknown shard: {release:?}");
    let state = store.shard_state(unknown).await.map(|_| ());
    assert!(is_not_found(&state), "state of unknown shard: {state:?}");
}

pub(super) async fn concurrent_acquires_have_one_winner(store: &dyn MetaStore) {
    let (a, b, c) = (node("race-a"), node("race-b"), node("race-c"));
    let (ra, rb, rc) = tokio::join!(
        store.acquire_shard(ShardId(9), &a, 0, 1_000),
        store.acquire_shard(ShardId(9), &b, 0, 1_000),
        store.acquire_shard(ShardId(9), &c, 0, 1_000),
    );
    let winners: Vec<ShardLease> = [ra, rb, rc]
        .into_iter()
        .filter_map(|r| r.expect("acquire"))
        .collect();
    assert_eq!(
        winners.len(),
        1,
        "exactly one node wins a free shard: {winners:?}"
    );
    assert_eq!(winners[0].epoch, Epoch(1));
    assert_eq!(lease_of(store, 9).await, winners[0], "the winner is stored");
}

pub(super) async fn epochs_only_increase_across_takeovers(store: &dyn MetaStore) {
    let nodes = [node("node-a"), node("node-b")];
    let mut last = lease_of(store, 10).await.epoch;
    for round in 0..6_i64 {
        let who = &nodes[usize::from(round % 2 == 1)];
        // Each round starts after the previous lease (ttl 10) expired.
        let lease = store
            .acquire_shard(ShardId(10), who, round * 100, 10)
            .await
            .expect("acquire")
            .expect("expired lease is taken over");
        assert_eq!(lease.epoch, Epoch(last.0 + 1), "round {round}: epoch + 1");
        last = lease.epoch;
    }
}
