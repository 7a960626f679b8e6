//! The deployment files in `deploy/` checked against the binary: no Docker engine runs here,
//! so each file is parsed and every command line and setting it gives a node is run through
//! `stratus print-config`, which loads and validates exactly what `serve` would.
#![allow(clippy::unwrap_used)] // test code: failures should panic

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_yaml::Value;
use stratus_tests::{stratus_bin, workspace_root};

/// Runs `stratus` with `args` and exactly `env` (plus PATH); returns stdout or panics with
/// stderr.
fn print_config(args: &[String], env: &BTreeMap<String, String>, what: &str) -> String {
    let out = Command::new(stratus_bin())
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{what}: `stratus {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `serve …` with `serve` replaced by `print-config`, and `path` for the config file.
fn as_print_config(args: &[String], config: &Path) -> Vec<String> {
    assert_eq!(
        args.first().map(String::as_str),
        Some("serve"),
        "the node runs `stratus serve`: {args:?}"
    );
    let mut out = vec!["print-config".to_owned()];
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        out.push(a.clone());
        if a == "--config" || a == "-c" {
            it.next();
            out.push(config.display().to_string());
        }
    }
    out
}

fn toml_value<'a>(toml: &'a toml_lite::Doc, key: &str) -> &'a str {
    toml.get(key)
        .unwrap_or_else(|| panic!("print-config has no {key}"))
}

/// Just enough TOML reading for print-config's flat `key = value` lines under sections.
mod toml_lite {
    use std::collections::BTreeMap;

    pub(crate) struct Doc(BTreeMap<String, String>);

    impl Doc {
        pub(crate) fn parse(text: &str) -> Self {
            let mut section = String::new();
            let mut map = BTreeMap::new();
            for line in text.lines().map(str::trim) {
                if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                    section = s.to_owned();
                } else if let Some((k, v)) = line.split_once(" = ") {
                    map.insert(format!("{section}.{k}"), v.trim_matches('"').to_owned());
                }
            }
            Self(map)
        }

        pub(crate) fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).map(String::as_str)
        }
    }
}

fn string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_mapping()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => serde_yaml::to_string(other).unwrap().trim().to_owned(),
                    };
                    (k.as_str().unwrap().to_owned(), v)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

fn example_config() -> std::path::PathBuf {
    workspace_root().join("deploy/stratus.example.toml")
}

#[test]
fn dockerfile_runs_the_binary_with_a_valid_command_and_exposes_every_port() {
    let text = std::fs::read_to_string(workspace_root().join("deploy/Dockerfile")).unwrap();
    let json_of = |directive: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.starts_with(directive))
            .unwrap_or_else(|| panic!("no {directive}"));
        serde_json::from_str(line[directive.len()..].trim()).unwrap()
    };
    assert_eq!(json_of("ENTRYPOINT"), ["stratus"]);
    let cmd = json_of("CMD");
    assert!(
        text.contains("COPY deploy/stratus.example.toml /etc/stratus/stratus.toml"),
        "the image carries the example config where CMD reads it"
    );
    assert!(
        text.contains("--bin stratus"),
        "the image builds the stratus binary"
    );
    let out = print_config(
        &as_print_config(&cmd, &example_config()),
        &BTreeMap::from([("STRATUS_NODE__SHARDS".to_owned(), "6".to_owned())]),
        "Dockerfile CMD",
    );
    let doc = toml_lite::Doc::parse(&out);
    assert_eq!(toml_value(&doc, "listen.namesrv_addr"), "0.0.0.0:9876");
    assert_eq!(toml_value(&doc, "listen.broker_addr"), "0.0.0.0:10911");
    assert!(
        text.contains("ENV STRATUS_KAFKA__LISTEN_ADDR=0.0.0.0:9092"),
        "the image's Kafka listener is reachable from outside"
    );
    let exposed: BTreeSet<u16> = text
        .lines()
        .filter_map(|l| l.strip_prefix("EXPOSE "))
        .flat_map(|l| l.split_whitespace().map(|p| p.parse::<u16>().unwrap()))
        .collect();
    let shards = (0..6).flat_map(|s| [10911 + 3 * s, 10909 + 3 * s]);
    let kafka = (0..7).map(|s| 9092 + s);
    for port in [9876, 5557].into_iter().chain(shards).chain(kafka) {
        assert!(exposed.contains(&port), "port {port} exposed");
    }
}

#[test]
fn compose_runs_three_nodes_on_minio_and_postgres_with_valid_settings() {
    let text = std::fs::read_to_string(workspace_root().join("deploy/docker-compose.yml")).unwrap();
    let mut doc: Value = serde_yaml::from_str(&text).unwrap();
    doc.apply_merge().unwrap();
    let services = doc["services"].as_mapping().unwrap();
    for s in ["minio", "postgres", "bucket"] {
        assert!(services.contains_key(s), "service {s}");
    }
    let nodes: Vec<&str> = services
        .keys()
        .filter_map(|k| k.as_str())
        .filter(|k| k.starts_with("stratus-"))
        .collect();
    assert_eq!(nodes.len(), 3, "three stratus nodes: {nodes:?}");
    let mut ids = BTreeSet::new();
    for name in nodes {
        let svc = &services[name];
        let mut svc = svc.clone();
        svc.apply_merge().unwrap();
        let env = string_map(&svc["environment"]);
        let image = svc["image"].as_str().unwrap();
        assert!(
            image.starts_with("stratus"),
            "{name} runs the stratus image"
        );
        // The image's CMD with this service's environment.
        let out = print_config(
            &[
                "print-config".into(),
                "--config".into(),
                example_config().display().to_string(),
                "--namesrv-addr".into(),
                "0.0.0.0:9876".into(),
                "--broker-addr".into(),
                "0.0.0.0:10911".into(),
            ],
            &env,
            name,
        );
        let cfg = toml_lite::Doc::parse(&out);
        assert!(
            ids.insert(toml_value(&cfg, "node.id").to_owned()),
            "{name}: node ids differ"
        );
        assert!(
            toml_value(&cfg, "meta.url").starts_with("postgres://"),
            "{name} on PostgreSQL"
        );
        assert!(
            toml_value(&cfg, "storage.object_store_url").starts_with("s3://"),
            "{name} on S3"
        );
        let shards: u16 = toml_value(&cfg, "node.shards").parse().unwrap();
        // The advertised range is what the host maps to the container's shard ports.
        let advertised = toml_value(&cfg, "listen.advertised_addr");
        let adv_port: u16 = advertised.rsplit_once(':').unwrap().1.parse().unwrap();
        let ranges = strings(&svc["ports"]);
        // Shard s on port + 3s, its VIP channel 2 below: one range from the first VIP port.
        let wanted = format!(
            "{}-{}:10909-{}",
            adv_port - 2,
            adv_port + 3 * (shards - 1),
            10911 + 3 * (shards - 1)
        );
        assert!(
            ranges.contains(&wanted),
            "{name}: ports {ranges:?} map the advertised shard range {wanted}"
        );
    }
}

#[test]
fn kubernetes_runs_a_stateless_deployment_with_valid_settings() {
    let text = std::fs::read_to_string(workspace_root().join("deploy/k8s/stratus.yaml")).unwrap();
    let docs: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let kind_of = |k: &str| docs.iter().find(|d| d["kind"].as_str() == Some(k));
    assert!(
        !docs
            .iter()
            .any(|d| d["kind"].as_str() == Some("StatefulSet")),
        "nodes are stateless: no StatefulSet"
    );
    let deployment = kind_of("Deployment").expect("a Deployment");
    let spec = &deployment["spec"]["template"]["spec"];
    assert!(
        deployment["spec"]["replicas"].as_u64().unwrap() >= 3,
        "three nodes or more"
    );
    for v in spec["volumes"].as_sequence().unwrap() {
        assert!(
            v.get("persistentVolumeClaim").is_none(),
            "no persistent volume: {v:?}"
        );
    }
    let secret = string_map(&kind_of("Secret").unwrap()["stringData"]);
    let config = kind_of("ConfigMap").unwrap()["data"]["stratus.toml"]
        .as_str()
        .unwrap()
        .to_owned();
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("stratus.toml");
    std::fs::write(&config_path, &config).unwrap();

    let container = &spec["containers"][0];
    assert_eq!(strings(&container["command"]), ["stratus"]);
    // The container's environment, resolved the way the kubelet would.
    let mut env = BTreeMap::new();
    for e in container["env"].as_sequence().unwrap() {
        let name = e["name"].as_str().unwrap().to_owned();
        let value = if let Some(v) = e["value"].as_str() {
            v.replace("$(POD_NAME)", "stratus-7d9f-abcde")
                .replace("$(POD_IP)", "10.1.2.3")
        } else if let Some(field) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            match field {
                "metadata.name" => "stratus-7d9f-abcde".to_owned(),
                "status.podIP" => "10.1.2.3".to_owned(),
                other => panic!("unexpected fieldRef {other}"),
            }
        } else {
            let key = e["valueFrom"]["secretKeyRef"]["key"].as_str().unwrap();
            secret
                .get(key)
                .cloned()
                .unwrap_or_else(|| panic!("secret key {key}"))
        };
        env.insert(name, value);
    }
    let out = print_config(
        &as_print_config(&strings(&container["args"]), &config_path),
        &env,
        "Deployment",
    );
    let cfg = toml_lite::Doc::parse(&out);
    assert_eq!(toml_value(&cfg, "node.id"), "stratus-7d9f-abcde");
    assert_eq!(toml_value(&cfg, "listen.advertised_addr"), "10.1.2.3:10911");
    assert!(toml_value(&cfg, "meta.url").starts_with("postgres://"));
    assert!(toml_value(&cfg, "storage.object_store_url").starts_with("s3://"));
    let shards: u16 = toml_value(&cfg, "node.shards").parse().unwrap();
    let ports: BTreeSet<u64> = container["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| p["containerPort"].as_u64().unwrap())
        .collect();
    assert!(ports.contains(&9876), "name-server port");
    for s in 0..u64::from(shards) {
        assert!(ports.contains(&(10911 + 3 * s)), "port of shard {s}");
        assert!(ports.contains(&(10909 + 3 * s)), "VIP port of shard {s}");
    }
    let service = kind_of("Service").unwrap();
    assert_eq!(service["spec"]["ports"][0]["port"].as_u64(), Some(9876));
}
