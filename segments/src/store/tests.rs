use std::sync::Arc;

use bytes::Bytes;
use object_store::ObjectStoreExt;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;

use super::faults::FaultyStore;
use super::*;
use crate::testkit::fast_store_config;

fn store() -> (Arc<FaultyStore>, SegmentStore) {
    let faults = FaultyStore::new(Arc::new(InMemory::new()));
    (
        faults.clone(),
        SegmentStore::new(faults, fast_store_config()),
    )
}

#[tokio::test]
async fn put_create_retries_transient_failures() {
    let (faults, s) = store();
    faults.fail_puts(2);
    s.put_create("a/b.seg", Bytes::from_static(b"hello"))
        .await
        .unwrap();
    assert_eq!(faults.puts(), 3);
    assert_eq!(
        s.get("a/b.seg").await.unwrap(),
        Bytes::from_static(b"hello")
    );
}

#[tokio::test]
async fn put_create_gives_up_after_max_attempts() {
    let (faults, s) = store();
    faults.fail_puts(10);
    let e = s
        .put_create("k", Bytes::from_static(b"x"))
        .await
        .unwrap_err();
    assert!(
        matches!(e, SegmentError::ObjectStore { op: "put", .. }),
        "{e}"
    );
    assert_eq!(faults.puts(), 3);
}

#[tokio::test]
async fn ambiguous_put_is_resolved_by_reading_the_object_back() {
    let (faults, s) = store();
    faults.ambiguous_puts(1);
    s.put_create("k", Bytes::from_static(b"mine"))
        .await
        .unwrap();
    assert_eq!(faults.puts(), 2);
    assert_eq!(faults.gets(), 1);
}

#[tokio::test]
async fn existing_key_with_other_bytes_is_an_error_and_is_not_overwritten() {
    let (faults, s) = store();
    s.put_create("k", Bytes::from_static(b"theirs"))
        .await
        .unwrap();
    let e = s
        .put_create("k", Bytes::from_static(b"mine"))
        .await
        .unwrap_err();
    let SegmentError::ObjectStore { source, .. } = &e else {
        panic!("{e}")
    };
    assert!(matches!(
        **source,
        object_store::Error::AlreadyExists { .. }
    ));
    assert_eq!(faults.puts(), 2, "AlreadyExists is never retried");
    assert_eq!(s.get("k").await.unwrap(), Bytes::from_static(b"theirs"));
}

#[tokio::test]
async fn not_found_is_not_retried() {
    let (faults, s) = store();
    let e = s.get("missing").await.unwrap_err();
    assert!(is_not_found(&e));
    assert_eq!(faults.gets(), 1);
    s.delete("missing").await.unwrap();
}

#[tokio::test]
async fn transient_get_failures_are_retried() {
    let (faults, s) = store();
    s.put_create("k", Bytes::from_static(b"0123456789"))
        .await
        .unwrap();
    faults.fail_gets(2);
    assert_eq!(
        s.get_range("k", 2..5).await.unwrap(),
        Bytes::from_static(b"234")
    );
    assert_eq!(faults.gets(), 3);
    // A range past the end is cut at the end of the object.
    assert_eq!(
        s.get_range("k", 8..100).await.unwrap(),
        Bytes::from_static(b"89")
    );
}

#[tokio::test]
async fn local_filesystem_honours_create_only_and_lists_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    let s = SegmentStore::new(fs.clone(), fast_store_config());
    s.put_create("segments/n/i/2.seg", Bytes::from_static(b"two"))
        .await
        .unwrap();
    s.put_create("segments/n/i/1.seg", Bytes::from_static(b"one"))
        .await
        .unwrap();
    s.put_create("segments/n/i/1.seg", Bytes::from_static(b"one"))
        .await
        .unwrap();
    assert!(
        s.put_create("segments/n/i/1.seg", Bytes::from_static(b"uno"))
            .await
            .is_err()
    );
    let listed = s.list("segments/n").await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|o| (o.key.as_str(), o.size))
            .collect::<Vec<_>>(),
        vec![("segments/n/i/1.seg", 3), ("segments/n/i/2.seg", 3)]
    );
    s.delete("segments/n/i/1.seg").await.unwrap();
    assert!(fs.head(&Path::from("segments/n/i/1.seg")).await.is_err());
}

#[tokio::test(start_paused = true)]
async fn slow_calls_time_out_and_are_retried() {
    let faults = FaultyStore::new(Arc::new(InMemory::new()));
    let s = SegmentStore::new(
        faults.clone(),
        StoreConfig {
            op_timeout: Duration::from_millis(100),
            ..fast_store_config()
        },
    );
    faults.set_put_latency(Duration::from_secs(1));
    let e = s
        .put_create("k", Bytes::from_static(b"x"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("timed out"), "{e}");
    assert_eq!(faults.puts(), 3);
}
