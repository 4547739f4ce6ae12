//! What this process has used so far: CPU time and page faults
//! (`getrusage(RUSAGE_SELF)`), for commands that report their own cost.

/// CPU time and page faults of this process (`getrusage`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// User CPU time, seconds.
    pub user_s: f64,
    /// System CPU time, seconds.
    pub sys_s: f64,
    /// Minor page faults (served without I/O).
    pub minflt: i64,
    /// Major page faults (each waited for I/O).
    pub majflt: i64,
}

impl Usage {
    /// What this process has used so far; all zero when `getrusage`
    /// fails.
    // `i64::from` keeps this building where `c_long` is 32 bits.
    #[expect(clippy::useless_conversion)]
    #[must_use]
    pub fn now() -> Usage {
        // SAFETY: `rusage` is plain data; zero is a valid value of every field.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid, writable `struct rusage`.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
            return Usage::default();
        }
        #[expect(clippy::cast_precision_loss)]
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        Usage {
            user_s: secs(ru.ru_utime),
            sys_s: secs(ru.ru_stime),
            minflt: i64::from(ru.ru_minflt),
            majflt: i64::from(ru.ru_majflt),
        }
    }

    /// What was used between `from` and this sample.
    #[must_use]
    pub fn since(&self, from: &Usage) -> Usage {
        Usage {
            user_s: self.user_s - from.user_s,
            sys_s: self.sys_s - from.sys_s,
            minflt: self.minflt - from.minflt,
            majflt: self.majflt - from.majflt,
        }
    }
}
