//! Waiting between retries.

use std::time::Duration;

/// "Equal jitter": a random wait between half of `d` and `d`, so that many clients
/// retrying at once do not arrive together.
pub fn jittered(d: Duration) -> Duration {
    let mut byte = [0u8; 1];
    let fraction = match getrandom::getrandom(&mut byte) {
        Ok(()) => f64::from(byte[0]) / 255.0,
        Err(_) => 1.0,
    };
    d.mul_f64(0.5 + fraction / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_between_half_and_all_of_the_wait() {
        for _ in 0..100 {
            let d = jittered(Duration::from_millis(1000));
            assert!(d >= Duration::from_millis(500) && d <= Duration::from_millis(1000));
        }
    }
}
