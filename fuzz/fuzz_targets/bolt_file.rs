#![no_main]
//! See `mapwise_fuzz::bolt_file`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| mapwise_fuzz::bolt_file(data));
