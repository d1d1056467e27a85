//! The real `hop-origin` under a flood no browser would send: unique, enormous `Host`,
//! `User-Agent` and `Referer` values on every request. Whatever it refuses or answers,
//! it must keep none of it: its anonymous memory ends within 50 MB of where it began.

use hop_e2e::{api_key, free_port, origin_env, Origin};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ALLOWED_GROWTH: u64 = 50 << 20;
const FLOOD: usize = 20_000;
const AT_ONCE: usize = 16;

/// Sends `head` on a new connection and reads until the server closes it; errors (the
/// server closing before the head is fully sent) are part of the attack.
async fn send(port: u16, head: Vec<u8>) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let _ = stream.write_all(&head).await;
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut got)).await;
    String::from_utf8_lossy(&got)
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// `n` bytes of `a`–`z` unique to `i`.
fn unique(i: usize, n: usize) -> String {
    let tag = format!("{i:08}");
    let mut s = String::with_capacity(n);
    s.push_str(&tag);
    while s.len() < n {
        s.push((b'a' + (s.len() % 26) as u8) as char);
    }
    s
}

async fn flood(
    port: u16,
    make: impl Fn(usize) -> Vec<u8> + Send + Sync + 'static,
) -> Vec<(Option<u16>, usize)> {
    let make = std::sync::Arc::new(make);
    let mut tasks = Vec::new();
    for lane in 0..AT_ONCE {
        let make = make.clone();
        tasks.push(tokio::spawn(async move {
            let mut seen = std::collections::HashMap::new();
            for i in (lane..FLOOD).step_by(AT_ONCE) {
                *seen.entry(send(port, make(i)).await).or_insert(0) += 1;
            }
            seen
        }));
    }
    let mut total = std::collections::HashMap::new();
    for t in tasks {
        for (status, n) in t.await.expect("flood task") {
            *total.entry(status).or_insert(0) += n;
        }
    }
    let mut total: Vec<_> = total.into_iter().collect();
    total.sort();
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_unique_enormous_headers_leaves_memory_where_it_was() {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = origin_env(dir.path(), None);
    let key = api_key(&env, "acme", false);
    let port = free_port();
    let origin = Origin::start(port, &env, dir.path().join("origin.log")).await;
    origin
        .create_bulk(
            &key,
            vec![serde_json::json!({"target_url": "https://e.example/", "code": "flood-me"})],
        )
        .await;
    // Warm: the served hosts read, the link in memory, the allocator's arenas made.
    let warm = flood(port, |i| {
        format!("GET /flood-me HTTP/1.1\r\nHost: s.example\r\nUser-Agent: Mozilla/5.0 w{i}\r\nConnection: close\r\n\r\n").into_bytes()
    })
    .await;
    assert_eq!(warm, vec![(Some(302), FLOOD)]);
    let before = origin.memory("RssAnon");

    // 100 KB each: past the head limit, so refused before anything is parsed.
    let huge = flood(port, |i| {
        let v = unique(i, 100_000);
        format!("GET /flood-me HTTP/1.1\r\nHost: {v}.example\r\nUser-Agent: Mozilla/5.0 {v}\r\nReferer: https://{v}.example/\r\nConnection: close\r\n\r\n").into_bytes()
    })
    .await;
    // Within the head limit, unique and served: each one reaches the click recorder.
    let served = flood(port, |i| {
        let v = unique(i, 4_000);
        format!("GET /flood-me HTTP/1.1\r\nHost: s.example\r\nUser-Agent: Mozilla/5.0 {v}\r\nReferer: https://r{i}.example/{v}\r\nConnection: close\r\n\r\n").into_bytes()
    })
    .await;
    // And unique hosts within the limit, that this origin does not serve.
    let hosts = flood(port, |i| {
        let v = unique(i, 60);
        format!("GET /flood-me HTTP/1.1\r\nHost: {v}.{}.example\r\nUser-Agent: Mozilla/5.0 {}\r\nConnection: close\r\n\r\n", unique(i + 1, 60), unique(i, 4_000)).into_bytes()
    })
    .await;
    let after = origin.memory("RssAnon");
    let grew = after.saturating_sub(before);
    println!(
        "RssAnon before {} MiB, after {} MiB (grew {} KiB); huge {huge:?}, served {served:?}, hosts {hosts:?}",
        before >> 20,
        after >> 20,
        grew >> 10
    );
    // Every huge head was refused (431), or cut off while it was still being sent.
    assert!(
        huge.iter().all(|(s, _)| matches!(s, Some(431) | None)),
        "{huge:?}"
    );
    assert_eq!(served, vec![(Some(302), FLOOD)]);
    assert_eq!(hosts, vec![(Some(404), FLOOD)]);
    assert!(
        grew < ALLOWED_GROWTH,
        "the origin kept {} MiB of the flood",
        grew >> 20
    );
    drop(origin);
}
