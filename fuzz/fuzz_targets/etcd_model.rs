#![no_main]
//! See `mapwise_fuzz::etcd_model`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| mapwise_fuzz::etcd_model(data));
