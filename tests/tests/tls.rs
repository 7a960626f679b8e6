//! TLS on every listener of a running node (`[tls]`), with the real Java client 5.3.3
//! (`tls.enable=true`, verifying the server's chain against the test's CA) and curl for
//! `/metrics`: enforcing refuses plaintext clients and keeps serving TLS ones, permissive
//! serves both on one port, a replaced certificate is served without a restart, and
//! required client certificates are checked.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use stratus_compat::RequestCode;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_tests::{ClientRun, Node, args, client_installed, clients_required};

const T: Duration = Duration::from_secs(120);

/// A CA and a certificate it signed for 127.0.0.1 / localhost (and a client certificate),
/// made with the openssl command line.
struct Pki {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn make_pki(dir: &Path, name: &str) -> Pki {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    openssl(
        &d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={name} test CA"),
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ],
    );
    std::fs::write(
        d.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n",
    )
    .unwrap();
    for who in ["server", "client"] {
        openssl(
            &d,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                &format!("/CN={who}"),
                "-keyout",
                &format!("{who}.key.rsa"),
                "-out",
                &format!("{who}.csr"),
            ],
        );
        openssl(
            &d,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{who}.csr"),
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                "ext.cnf",
                "-out",
                &format!("{who}.pem"),
            ],
        );
        // PKCS#8, which both rustls and the Java client (Netty) read.
        openssl(
            &d,
            &[
                "pkcs8",
                "-topk8",
                "-nocrypt",
                "-in",
                &format!("{who}.key.rsa"),
                "-out",
                &format!("{who}.key"),
            ],
        );
    }
    Pki {
        ca: d.join("ca.pem"),
        cert: d.join("server.pem"),
        key: d.join("server.key"),
        client_cert: d.join("client.pem"),
        client_key: d.join("client.key"),
    }
}

/// JVM options of a Java client with TLS on, verifying the server against `ca`, and
/// presenting a client certificate when given.
fn java_tls(ca: &Path, client: Option<&Pki>) -> String {
    let mut o = format!(
        "-Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dtls.enable=true \
         -Dtls.test.mode.enable=false -Dtls.client.authServer=true \
         -Dtls.client.trustCertPath={} -Dtls.config.file=/nonexistent",
        ca.display()
    );
    if let Some(p) = client {
        o.push_str(&format!(
            " -Dtls.client.certPath={} -Dtls.client.keyPath={}",
            p.client_cert.display(),
            p.client_key.display()
        ));
    }
    o
}

/// Sends `count` messages with the Java 5 client under `opts`; the acknowledged count.
fn java_send(node: &Node, scratch: &Path, topic: &str, opts: &str, count: usize) -> usize {
    let a = args(&[
        "produce",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        topic,
        "--group",
        "PG_tls",
        "--count",
        &count.to_string(),
        "--mode",
        "sync",
        "--tag",
        "T",
        "--keys-prefix",
        "t",
        "--body-size",
        "64",
    ]);
    let run =
        ClientRun::spawn_with_env("java5", &a, scratch, &[("JAVA_CLIENT_OPTS", opts)]).unwrap();
    let (_, events) = run.wait(T).unwrap();
    events.iter().filter(|e| e["event"] == "sent").count()
}

/// Pulls everything of `topic` with the Java 5 client under `opts`; the count received.
fn java_pull(node: &Node, scratch: &Path, topic: &str, opts: &str, expect: usize) -> usize {
    let a = args(&[
        "pull",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        topic,
        "--group",
        "CG_tls",
        "--expect",
        &expect.to_string(),
        "--timeout-secs",
        "60",
    ]);
    let run =
        ClientRun::spawn_with_env("java5", &a, scratch, &[("JAVA_CLIENT_OPTS", opts)]).unwrap();
    let (_, events) = run.wait(T).unwrap();
    events
        .iter()
        .filter(|e: &&Value| e["event"] == "recv")
        .count()
}

/// Whether a plaintext remoting client gets a route answer from `addr`.
fn plaintext_answered(addr: std::net::SocketAddr) -> bool {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let Ok(c) = RemotingClient::connect(addr).await else {
            return false;
        };
        let mut cmd = RemotingCommand::request(RequestCode::GetRouteinfoByTopic.to_i32(), 0);
        cmd.put_ext("topic", "TBW102");
        matches!(c.invoke(cmd, Duration::from_secs(3)).await, Ok(r) if r.code == 0)
    })
}

/// `/metrics` through curl: over https trusting `ca`, or plain http.
fn curl_metrics(addr: std::net::SocketAddr, ca: Option<&Path>) -> Option<String> {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--max-time", "5"]);
    match ca {
        Some(ca) => cmd
            .arg("--cacert")
            .arg(ca)
            .arg(format!("https://127.0.0.1:{}/metrics", addr.port())),
        None => cmd.arg(format!("http://127.0.0.1:{}/metrics", addr.port())),
    };
    let out = cmd.output().unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn start(dir: &Path, pki: &Pki, mode: &str, extra: &[(&str, &str)]) -> Node {
    let (cert, key) = (
        pki.cert.display().to_string(),
        pki.key.display().to_string(),
    );
    let mut envs = vec![
        ("STRATUS_TLS__MODE", mode),
        ("STRATUS_TLS__CERT_FILE", cert.as_str()),
        ("STRATUS_TLS__KEY_FILE", key.as_str()),
        ("STRATUS_TLS__RELOAD_INTERVAL", "500ms"),
    ];
    envs.extend_from_slice(extra);
    Node::start_with_env(&dir.join("data"), &[], &envs).unwrap()
}

fn skip() -> bool {
    if client_installed("java5") {
        return false;
    }
    assert!(
        !clients_required(),
        "java5 client required but not installed"
    );
    eprintln!("skipping: java5 client not installed");
    true
}

#[test]
fn enforcing_serves_tls_clients_refuses_plaintext_and_reloads_the_certificate() {
    if skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("clients");
    let first = make_pki(dir.path(), "first");
    // The node reads copies, so the test can replace them.
    let live = dir.path().join("live");
    std::fs::create_dir_all(&live).unwrap();
    let pki = Pki {
        ca: first.ca.clone(),
        cert: live.join("server.pem"),
        key: live.join("server.key"),
        client_cert: first.client_cert.clone(),
        client_key: first.client_key.clone(),
    };
    std::fs::copy(&first.cert, &pki.cert).unwrap();
    std::fs::copy(&first.key, &pki.key).unwrap();
    let node = start(dir.path(), &pki, "enforcing", &[]);
    let opts = java_tls(&first.ca, None);

    assert_eq!(java_send(&node, &scratch, "TlsT", &opts, 10), 10);
    // A plaintext client gets nothing, on the name-server port and the broker port.
    assert!(!plaintext_answered(node.namesrv));
    assert!(!plaintext_answered(node.broker));
    // …and the node goes on serving TLS clients.
    assert_eq!(java_pull(&node, &scratch, "TlsT", &opts, 10), 10);
    // /metrics is TLS too.
    let text = curl_metrics(node.metrics, Some(&first.ca)).expect("https /metrics");
    assert!(text.contains("stratus_gateway_connections"), "{text}");
    assert!(
        curl_metrics(node.metrics, None).is_none(),
        "plain http refused"
    );

    // A certificate from another CA replaces the first one, without a restart.
    let second = make_pki(dir.path(), "second");
    std::fs::copy(&second.key, &pki.key).unwrap();
    std::fs::copy(&second.cert, &pki.cert).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while curl_metrics(node.metrics, Some(&second.ca)).is_none() {
        assert!(
            Instant::now() < deadline,
            "the new certificate is not served"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(curl_metrics(node.metrics, Some(&first.ca)).is_none());
    let opts2 = java_tls(&second.ca, None);
    assert_eq!(java_send(&node, &scratch, "TlsT", &opts2, 5), 5);
    // A client that trusts only the old CA is refused now.
    assert_eq!(java_send(&node, &scratch, "TlsT", &opts, 1), 0);
}

#[test]
fn permissive_serves_tls_and_plaintext_on_the_same_ports() {
    if skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("clients");
    let pki = make_pki(dir.path(), "p");
    let node = start(dir.path(), &pki, "permissive", &[]);
    assert!(plaintext_answered(node.namesrv));
    assert!(plaintext_answered(node.broker));
    let opts = java_tls(&pki.ca, None);
    assert_eq!(java_send(&node, &scratch, "PermT", &opts, 8), 8);
    let plain = "-Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1";
    assert_eq!(java_pull(&node, &scratch, "PermT", plain, 8), 8);
    assert!(curl_metrics(node.metrics, Some(&pki.ca)).is_some());
    assert!(curl_metrics(node.metrics, None).is_some());
}

#[test]
fn required_client_certificates_are_verified() {
    if skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("clients");
    let pki = make_pki(dir.path(), "m");
    let other = make_pki(dir.path(), "other");
    let ca = pki.ca.display().to_string();
    let node = start(
        dir.path(),
        &pki,
        "enforcing",
        &[
            ("STRATUS_TLS__CLIENT_AUTH", "require"),
            ("STRATUS_TLS__CLIENT_CA_FILE", ca.as_str()),
        ],
    );
    assert_eq!(
        java_send(&node, &scratch, "MtlsT", &java_tls(&pki.ca, Some(&pki)), 4),
        4
    );
    // No client certificate, or one from another CA: refused.
    assert_eq!(
        java_send(&node, &scratch, "MtlsT", &java_tls(&pki.ca, None), 1),
        0
    );
    assert_eq!(
        java_send(
            &node,
            &scratch,
            "MtlsT",
            &java_tls(&pki.ca, Some(&other)),
            1
        ),
        0
    );
}
