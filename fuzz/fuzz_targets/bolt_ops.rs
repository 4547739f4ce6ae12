#![no_main]
//! See `mapwise_fuzz::bolt_ops`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| mapwise_fuzz::bolt_ops(data));
