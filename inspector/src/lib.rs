//! `inspector`: which pages of a bbolt file sit in the Linux page cache,
//! live, overlaid on the file's B+tree structure.
//!
//! The binary (`src/main.rs`) parses the command line, sets the terminal
//! up and runs the loop; this library holds everything that can be tested
//! without a terminal:
//!
//! * [`app`] — all state ([`app::App`], each pane's own in a module of
//!   its own), updated by [`event::Action`]s; touch, evict, advise and lock
//!   run on a worker thread;
//!   file I/O only through a [`app::Target`] (the live
//!   [`mapwise_native::observe::watch::Watch`], a replay, or the tests' fixed data).
//! * [`event`] — terminal events to actions, pure.
//! * [`ui`] — drawing from `&App`, one module per screen region.
//! * [`describe`] — a decoded page as lines of text (detail pane and
//!   `inspector page`).
//! * [`stats`] — residency arithmetic and number formatting.
//! * [`cli`] — the non-interactive subcommands (`residency`, `pages`,
//!   `page`, `check`, `layout`).
//! * [`many`] — `residency` over many files and trees (`-R`, `--top`).
//! * [`etcd`] — `inspector etcd`: an etcd db's space by key prefix and
//!   revision history, and `dbSize` forecast after compaction and defrag.
//! * [`follow`] — a whole bbolt snapshot held in memory, read quietly
//!   from a file its writer commits to (for `etcd`, which reads values).
//! * [`demo`] — the bundled bbolt file opened when no file is given.
//! * [`replay`] — a recorded residency trace as a [`app::Target`]
//!   (`inspector replay`).
//!
//! **Invariant: the inspector never writes the file it shows and never
//! changes its residency except when asked (touch, evict, lock).**
//! Structure is read with `O_DIRECT` and residency with `mincore(2)`,
//! both in `mapwise-native`.
#![forbid(unsafe_code)]

pub mod app;
pub mod cli;
pub mod demo;
pub mod describe;
pub mod dir;
pub mod etcd;
pub mod event;
pub mod export;
pub mod follow;
pub mod many;
pub mod replay;
pub mod stats;
pub mod top;
pub mod ui;
pub mod warm;
pub mod worker;
