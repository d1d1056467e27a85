//! The edge frees what it allocates on every path: the real worker under workerd, with
//! a KV namespace whose every read rejects, answers 20,000 visits in one isolate, and
//! V8's heap (after a full collection) holds no more than it did before them. A closure
//! handed to JavaScript that is never called is never freed: the redirect path used to
//! leak one per failed read, about 6 MB over these 20,000.

use hop_e2e::repo_root;
use std::process::Command;

/// What the isolate may keep of 20,000 visits: far less than one byte each.
const ALLOWED_GROWTH: i64 = 1 << 20;

#[test]
fn failed_kv_reads_leave_the_isolates_heap_where_it_was() {
    let status = Command::new("bash")
        .arg(repo_root().join("scripts/build-worker"))
        .status()
        .expect("build the worker");
    assert!(status.success(), "scripts/build-worker failed");
    let output = Command::new("node")
        .current_dir(repo_root())
        .args(["scripts/bench/edge-leak.mjs", "20000"])
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    println!("{}", stdout.trim());
    let line = stdout
        .lines()
        .find(|l| l.starts_with("answered"))
        .expect("a result line");
    // Every visit was answered 503 (the link may exist; KV cannot say).
    assert!(line.starts_with("answered 22000 (status 503) "), "{line}");
    let grew: i64 = line
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("the growth in bytes");
    assert!(
        grew < ALLOWED_GROWTH,
        "the heap grew by {grew} bytes: {line}"
    );
}
