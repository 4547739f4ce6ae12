//! Integration tests of the browser viewer (one binary, modules).

mod browser;
mod colors;
mod hostile;
mod readonly;
