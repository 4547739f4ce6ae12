#![no_main]
//! See `mapwise_fuzz::detect_layout`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| mapwise_fuzz::detect_layout(data));
