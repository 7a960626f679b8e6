//! Command line: `stratus serve`, `stratus print-config`, `stratus bench`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::Settings;

/// A RocketMQ-compatible gateway over object storage.
#[derive(Debug, Parser)]
#[command(name = "stratus", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a node (defaults: data in ./data, name server 127.0.0.1:9876, broker 127.0.0.1:10911).
    Serve(ServeArgs),
    /// Print the effective settings as TOML and exit.
    PrintConfig(ServeArgs),
    /// Drive load over the wire against any RocketMQ name server and print figures.
    Bench(stratus_bench::BenchArgs),
}

/// Options shared by `serve` and `print-config`; each overrides the config file and env.
#[derive(Debug, clap::Args, Clone, Default)]
pub struct ServeArgs {
    /// TOML config file.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// Data directory (embedded metadata, default object store directory).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Name-server listen address.
    #[arg(long)]
    pub namesrv_addr: Option<SocketAddr>,
    /// Broker listen address.
    #[arg(long)]
    pub broker_addr: Option<SocketAddr>,
    /// Address published to clients (defaults to the broker address).
    #[arg(long)]
    pub advertised_addr: Option<String>,
    /// Object store URL (`file://…`, `memory://`).
    #[arg(long)]
    pub object_store_url: Option<String>,
    /// Metadata URL (`embedded://…`).
    #[arg(long)]
    pub meta_url: Option<String>,
}

impl ServeArgs {
    /// Loads settings and applies the overrides.
    ///
    /// # Errors
    /// When the configuration does not load or validate.
    pub fn settings(&self) -> anyhow::Result<Settings> {
        let mut s = Settings::load(self.config.as_deref())?;
        if let Some(d) = &self.data_dir {
            s.node.data_dir = d.clone();
        }
        if let Some(a) = self.namesrv_addr {
            s.listen.namesrv_addr = a;
        }
        if let Some(a) = self.broker_addr {
            s.listen.broker_addr = a;
        }
        if let Some(a) = &self.advertised_addr {
            s.listen.advertised_addr = Some(a.clone());
        }
        if let Some(u) = &self.object_store_url {
            s.storage.object_store_url = Some(u.clone());
        }
        if let Some(u) = &self.meta_url {
            s.meta.url = Some(u.clone());
        }
        s.validate()?;
        Ok(s)
    }
}
