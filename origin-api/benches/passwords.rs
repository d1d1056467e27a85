//! What a dashboard sign-in costs the origin: one argon2id verification (and what making
//! a hash costs, for `users create` and a password change).

use criterion::{criterion_group, criterion_main, Criterion};
use origin_api::accounts::password;

fn passwords(c: &mut Criterion) {
    let phc = password::hash("correct horse battery staple").expect("hash");
    let mut group = c.benchmark_group("argon2id");
    group.sample_size(20);
    group.bench_function("verify", |b| {
        b.iter(|| password::verify("correct horse battery staple", &phc))
    });
    group.bench_function("hash", |b| {
        b.iter(|| password::hash("correct horse battery staple"))
    });
    group.finish();
}

criterion_group!(benches, passwords);
criterion_main!(benches);
