#![no_main]
//! See `mapwise_fuzz::rrd_ops`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| mapwise_fuzz::rrd_ops(data));
