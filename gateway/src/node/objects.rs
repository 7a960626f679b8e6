//! The object store, chosen by `storage.object_store_url`: `file://DIR` (the default),
//! `memory://`, or `s3://BUCKET/PREFIX` with the `storage.s3_*` settings. This is the only
//! place an `AmazonS3Builder` is built.
//!
//! An S3 store is checked before the node starts: a create-only PUT of a small
//! `<prefix>/_stratus/probe-<random>` object, the same PUT again (which must be refused),
//! a GET that must return the bytes, and a DELETE, all within [`PROBE_TIMEOUT`]. A wrong
//! endpoint, bucket or credentials therefore fails start-up with a message naming the
//! setting, rather than the first send.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt, PutMode, PutPayload, RetryConfig};
use rand::{Rng, SeedableRng};
use tracing::{info, warn};

use crate::config::{ObjectStoreUrl, StorageSettings};

/// Longest time the start-up probe of an S3 store may take.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// An opened object store and the prefix every key written to it starts with.
#[derive(Debug)]
pub(crate) struct Objects {
    /// The store.
    pub(crate) store: Arc<dyn ObjectStore>,
    /// Key prefix (the part of an `s3://` URL after the bucket), without slashes at either
    /// end; empty for none.
    pub(crate) key_prefix: String,
}

/// Opens the store `url` names; an S3 store is probed first (see the module doc).
///
/// # Errors
/// A bad URL or setting, or a failed probe; the message names the setting to fix.
pub(crate) async fn open(
    url: &ObjectStoreUrl,
    storage: &StorageSettings,
) -> anyhow::Result<Objects> {
    match url.clone() {
        ObjectStoreUrl::Memory => Ok(Objects {
            store: Arc::new(object_store::memory::InMemory::new()),
            key_prefix: String::new(),
        }),
        ObjectStoreUrl::File(path) => {
            std::fs::create_dir_all(&path).with_context(|| {
                format!("storage.object_store_url: cannot create directory {path}")
            })?;
            let fs = object_store::local::LocalFileSystem::new_with_prefix(&path)
                .with_context(|| format!("storage.object_store_url: cannot open {path}"))?
                .with_fsync(storage.file_fsync);
            Ok(Objects {
                store: Arc::new(fs),
                key_prefix: String::new(),
            })
        }
        ObjectStoreUrl::S3 { bucket, prefix } => {
            let store: Arc<dyn ObjectStore> = Arc::new(build_s3(&bucket, storage)?);
            let where_ = describe_endpoint(&bucket, storage);
            probe(store.as_ref(), &prefix, &bucket, storage)
                .await
                .with_context(|| format!("object store check failed ({where_})"))?;
            info!(bucket, prefix, endpoint = %where_, "object store: S3 bucket reachable");
            Ok(Objects {
                store,
                key_prefix: prefix,
            })
        }
    }
}

/// Builds the S3 client (no request is sent).
///
/// # Errors
/// An endpoint that is not an http(s) URL, plain HTTP without `storage.s3_allow_http`, or
/// settings `object_store` refuses.
pub(crate) fn build_s3(
    bucket: &str,
    storage: &StorageSettings,
) -> anyhow::Result<object_store::aws::AmazonS3> {
    let mut b = match (&storage.s3_access_key_id, &storage.s3_secret_access_key) {
        (Some(id), Some(secret)) => AmazonS3Builder::new()
            .with_access_key_id(id)
            .with_secret_access_key(secret),
        _ => AmazonS3Builder::from_env(),
    };
    b = b
        .with_bucket_name(bucket)
        .with_region(&storage.s3_region)
        .with_conditional_put(S3ConditionalPut::ETagMatch)
        .with_client_options(
            ClientOptions::new()
                .with_allow_http(storage.s3_allow_http)
                .with_connect_timeout(Duration::from_secs(5))
                .with_timeout(Duration::from_secs(60)),
        )
        // Few quick retries inside object_store: `SegmentStore` retries whole calls itself.
        .with_retry(RetryConfig {
            max_retries: 3,
            retry_timeout: Duration::from_secs(30),
            ..RetryConfig::default()
        });
    let path_style = storage
        .s3_path_style
        .unwrap_or(storage.s3_endpoint.is_some());
    if let Some(endpoint) = &storage.s3_endpoint {
        let endpoint = endpoint.trim_end_matches('/');
        let Some((scheme, host)) = endpoint.split_once("://") else {
            anyhow::bail!("storage.s3_endpoint: {endpoint:?} is not an http:// or https:// URL");
        };
        match scheme {
            "https" => {}
            "http" if storage.s3_allow_http => {}
            "http" => anyhow::bail!(
                "storage.s3_endpoint: {endpoint} is plain HTTP; set storage.s3_allow_http = true to allow it"
            ),
            _ => {
                anyhow::bail!("storage.s3_endpoint: {endpoint:?} is not an http:// or https:// URL")
            }
        }
        if host.is_empty() {
            anyhow::bail!("storage.s3_endpoint: {endpoint:?} has no host");
        }
        // object_store expects a virtual-hosted endpoint to name the bucket already.
        let endpoint = if path_style {
            endpoint.to_owned()
        } else {
            format!("{scheme}://{bucket}.{host}")
        };
        b = b.with_endpoint(endpoint);
    }
    b = b.with_virtual_hosted_style_request(!path_style);
    b.build()
        .map_err(|e| anyhow::anyhow!("storage.s3_*: cannot configure the S3 client: {e}"))
}

fn describe_endpoint(bucket: &str, storage: &StorageSettings) -> String {
    match &storage.s3_endpoint {
        Some(e) => format!("bucket {bucket} at {e}"),
        None => format!("bucket {bucket} on AWS {}", storage.s3_region),
    }
}

/// Runs the start-up probe within [`PROBE_TIMEOUT`].
async fn probe(
    store: &dyn ObjectStore,
    prefix: &str,
    bucket: &str,
    storage: &StorageSettings,
) -> anyhow::Result<()> {
    #[allow(clippy::disallowed_methods)] // start-up deadline, wall-clock by design
    let r = tokio::time::timeout(PROBE_TIMEOUT, probe_steps(store, prefix, bucket, storage)).await;
    match r {
        Ok(r) => r,
        Err(_) => anyhow::bail!(
            "storage.s3_endpoint: no answer from {} within {PROBE_TIMEOUT:?}",
            storage.s3_endpoint.as_deref().unwrap_or("AWS")
        ),
    }
}

async fn probe_steps(
    store: &dyn ObjectStore,
    prefix: &str,
    bucket: &str,
    storage: &StorageSettings,
) -> anyhow::Result<()> {
    let mut rng = rand::rngs::SmallRng::from_os_rng();
    let name = format!("_stratus/probe-{:016x}", rng.random::<u64>());
    let key = if prefix.is_empty() {
        Path::from(name)
    } else {
        Path::from(format!("{prefix}/{name}"))
    };
    let body = Bytes::from_static(b"stratus start-up probe\n");
    let fail = |step: &str, e: &object_store::Error| explain(step, e, bucket, storage);

    store
        .put_opts(&key, PutPayload::from(body.clone()), PutMode::Create.into())
        .await
        .map_err(|e| fail("create-only PUT", &e))?;
    match store
        .put_opts(&key, PutPayload::from(body.clone()), PutMode::Create.into())
        .await
    {
        Err(object_store::Error::AlreadyExists { .. }) => {}
        Ok(_) => warn!(
            %key,
            "the S3 server ignored If-None-Match on an existing key: create-only uploads are \
             not enforced by this server (segment keys are never reused, so segments stay safe)"
        ),
        Err(e) => return Err(fail("second create-only PUT", &e)),
    }
    let got = store
        .get(&key)
        .await
        .map_err(|e| fail("GET", &e))?
        .bytes()
        .await
        .map_err(|e| fail("GET", &e))?;
    if got != body {
        anyhow::bail!(
            "storage.s3_endpoint: the server returned other bytes than were written to {key}"
        );
    }
    match store.delete(&key).await {
        Ok(()) => {}
        Err(e @ object_store::Error::PermissionDenied { .. }) => {
            warn!(%key, error = %e, "cannot delete the probe object: the credentials may not delete objects");
        }
        Err(e) => return Err(fail("DELETE", &e)),
    }
    Ok(())
}

/// Turns a probe failure into a message naming the setting most likely wrong.
fn explain(
    step: &str,
    e: &object_store::Error,
    bucket: &str,
    storage: &StorageSettings,
) -> anyhow::Error {
    let text = format!("{e}");
    let creds = if storage.s3_access_key_id.is_some() {
        "storage.s3_access_key_id / storage.s3_secret_access_key"
    } else {
        "storage.s3_access_key_id / storage.s3_secret_access_key (unset: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY from the environment)"
    };
    match e {
        object_store::Error::NotFound { .. } if text.contains("NoSuchBucket") => anyhow::anyhow!(
            "storage.object_store_url: bucket {bucket:?} does not exist ({step}: {e})"
        ),
        object_store::Error::NotFound { .. } => anyhow::anyhow!(
            "storage.object_store_url / storage.s3_endpoint: bucket {bucket:?} not found at the endpoint ({step}: {e})"
        ),
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => {
            let why = if text.contains("InvalidAccessKeyId") {
                "the access key id is unknown to the server"
            } else if text.contains("SignatureDoesNotMatch") {
                "the secret access key does not match the access key id"
            } else {
                "the server refused the credentials or their permissions on the bucket"
            };
            anyhow::anyhow!("{creds}: {why} ({step}: {e})")
        }
        _ => anyhow::anyhow!(
            "storage.s3_endpoint: {step} to {} failed: {e}",
            storage.s3_endpoint.as_deref().unwrap_or("AWS")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3_settings(endpoint: Option<&str>) -> StorageSettings {
        StorageSettings {
            s3_endpoint: endpoint.map(str::to_owned),
            s3_access_key_id: Some("id".into()),
            s3_secret_access_key: Some("secret".into()),
            ..StorageSettings::default()
        }
    }

    #[test]
    fn plain_http_needs_allow_http() {
        let s = s3_settings(Some("http://127.0.0.1:9000"));
        let e = build_s3("b", &s).unwrap_err().to_string();
        assert!(e.contains("storage.s3_allow_http"), "{e}");
        let s = StorageSettings {
            s3_allow_http: true,
            ..s
        };
        build_s3("b", &s).unwrap();
        build_s3("b", &s3_settings(Some("https://s3.example.com"))).unwrap();
        build_s3("b", &s3_settings(None)).unwrap();
    }

    #[test]
    fn bad_endpoints_name_the_setting() {
        for endpoint in ["127.0.0.1:9000", "ftp://host", "https://"] {
            let e = build_s3("b", &s3_settings(Some(endpoint)))
                .unwrap_err()
                .to_string();
            assert!(e.contains("storage.s3_endpoint"), "{endpoint}: {e}");
        }
    }

    #[tokio::test]
    async fn unreachable_endpoint_fails_open_naming_the_endpoint() {
        // A port that was free a moment ago: connections are refused.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let s = StorageSettings {
            s3_allow_http: true,
            ..s3_settings(Some(&format!("http://127.0.0.1:{port}")))
        };
        let e = open(&ObjectStoreUrl::parse("s3://bucket/p").unwrap(), &s)
            .await
            .unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("storage.s3_endpoint"), "{e}");
    }

    #[tokio::test]
    async fn memory_and_file_stores_have_no_prefix() {
        let o = open(&ObjectStoreUrl::Memory, &StorageSettings::default())
            .await
            .unwrap();
        assert_eq!(o.key_prefix, "");
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().join("objects").display());
        let o = open(
            &ObjectStoreUrl::parse(&url).unwrap(),
            &StorageSettings::default(),
        )
        .await
        .unwrap();
        assert_eq!(o.key_prefix, "");
        assert!(dir.path().join("objects").is_dir());
    }
}
