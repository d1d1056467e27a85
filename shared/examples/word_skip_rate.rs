//! How often a generated code spells a word and is skipped (docs/words.md): the
//! built-in lists judged over random seven-character base62 codes, as `refuse_generated`
//! judges a counter's codes. Deterministic: the same figure on every run.
//!   cargo run --release -p shared --example word_skip_rate [CODES]

use shared::words::Words;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// splitmix64: enough to spread codes evenly, and reproducible.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn main() {
    let codes: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000_000);
    let words = Words::default();
    let mut state = 0x00c0_ffee;
    let mut skipped = 0u64;
    let mut code = String::with_capacity(7);
    for _ in 0..codes {
        code.clear();
        for _ in 0..7 {
            code.push(char::from(BASE62[(next(&mut state) % 62) as usize]));
        }
        if words.refuse_generated(&code).is_some() {
            skipped += 1;
        }
    }
    println!(
        "{skipped} of {codes} seven-character base62 codes spell a word: {:.3}% (1 in {:.0})",
        skipped as f64 * 100.0 / codes as f64,
        codes as f64 / skipped.max(1) as f64
    );
}
