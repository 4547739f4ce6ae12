//! Integration tests of the inspector, in one binary (one link on two
//! cores): views (TestBackend snapshots and colours), app behaviour on
//! fixed data, the subcommands (against vmtouch and on corrupt files),
//! residency of trees (`many`, against vmtouch and fincore),
//! tmux-driven end-to-end runs of the real binary, files changing under
//! it (`live`), readers that must leave files as they found them
//! (`readonly`), the quiet readers against a real etcd under load
//! (`etcd_load`), and the metrics a real Prometheus scrapes (`export`).

use mapwise_testkit::{churn, etcd, peers, rrdcached, writer};

mod cli;
mod common;
mod etcd_load;
mod etcd_space;
mod export;
mod fixed;
mod hostile;
mod live;
mod many;
mod readonly;
mod replay;
mod rrdcached_pending;
mod tmux;
mod update;
mod views;
