//! Integration tests of the inspector, in one binary (one link on two
//! cores): views (TestBackend snapshots and colours), app behaviour on
//! fixed data, the subcommands (against vmtouch and on corrupt files),
//! and a tmux-driven end-to-end run of the real binary.

#[path = "../../testkit/peers.rs"]
mod peers;

mod cli;
mod common;
mod hostile;
mod replay;
mod tmux;
mod update;
mod views;
