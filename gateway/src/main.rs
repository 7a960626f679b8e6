//! The `stratus` binary: parse the command line, load settings, init tracing, run.

use std::io::Write;

use clap::Parser;
use stratus_gateway::app::App;
use stratus_gateway::cli::{Cli, Command};
use tracing_subscriber::EnvFilter;

fn init_tracing() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let json = std::env::var("STRATUS_LOG_FORMAT").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::PrintConfig(args) => {
            let s = args.settings()?;
            let mut out = std::io::stdout().lock();
            out.write_all(s.to_toml().as_bytes())?;
            Ok(())
        }
        Command::Serve(args) => {
            init_tracing();
            let settings = args.settings()?;
            let app = App::build(settings).await?;
            tracing::info!(addrs = ?app.local_addrs(), "stratus ready");
            app.run(shutdown_signal()).await
        }
        Command::Bench(args) => stratus_bench::run(args).await,
    }
}
