#![no_main]
//! See `mapwise_fuzz::revlog_index`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| mapwise_fuzz::revlog_index(data));
