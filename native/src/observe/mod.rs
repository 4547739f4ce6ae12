//! Watching files other processes own, without disturbing them: the
//! settled quiet reads of a bbolt file a writer may be committing to
//! ([`settle`]), the live view's snapshots ([`watch`]) and residency
//! traces ([`trace`]).

pub mod settle;
pub mod trace;
pub mod watch;
