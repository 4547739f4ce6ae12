#![no_main]
//! See `mapwise_fuzz::rrd_file`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| mapwise_fuzz::rrd_file(data));
