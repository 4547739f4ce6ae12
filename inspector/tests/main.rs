//! Integration tests of the inspector, in one binary (one link on two
//! cores): views (TestBackend snapshots and colours), app behaviour on
//! fixed data, the subcommands (against vmtouch and on corrupt files),
//! tmux-driven end-to-end runs of the real binary, files changing under
//! it (`live`), and readers that must leave files as they found them
//! (`readonly`).

#[path = "../../testkit/peers.rs"]
mod peers;

#[path = "../../testkit/churn.rs"]
mod churn;

#[path = "../../testkit/rrdcached.rs"]
mod rrdcached;

mod cli;
mod common;
mod hostile;
mod live;
mod readonly;
mod replay;
mod rrdcached_pending;
mod tmux;
mod update;
mod views;
