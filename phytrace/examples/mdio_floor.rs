//! The same-fields floor of `cargo xtask bench` (`phytrace::probe::floor`): attaches it,
//! prints `ready`, drains its records until SIGINT, then prints how many it drained.

use std::process::ExitCode;

use tokio::signal::unix::{SignalKind, signal};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Ok(mut sigint) = signal(SignalKind::interrupt()) else {
        eprintln!("mdio_floor: cannot catch SIGINT");
        return ExitCode::FAILURE;
    };
    let attached = || println!("ready");
    match phytrace::probe::floor::run(attached, async move {
        sigint.recv().await;
    })
    .await
    {
        Ok(records) => {
            println!("{records} records");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("mdio_floor: {err:#}");
            ExitCode::FAILURE
        }
    }
}
