//! Harness for Hop's end-to-end tests: starts real processes (`wrangler dev`, and the
//! origin in later suites) on free loopback ports and stops them, with every process
//! they spawned, when dropped — also when a test fails.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub mod poll;
pub use poll::{poll, Poll};

/// How long a process may take to start answering HTTP before the test gives up.
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

/// A port that was free a moment ago on 127.0.0.1, below Linux's ephemeral range.
///
/// A port handed out by the kernel (binding port 0) is in the ephemeral range, and the
/// kernel may hand it out again to anyone binding port 0 once it is released: wrangler
/// and workerd open several such sockets as they start, and one of them once took the
/// port a test had chosen for the origin before starting the edge. Ports from
/// 20000–32767 are never handed out that way, so only a process told the port can take
/// it; tests running at once pick at random among 12,768 of them.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    const LOW: u16 = 20_000;
    const HIGH: u16 = 32_767;
    for attempt in 0u32..1_000 {
        // A fresh random seed per call and attempt, without a random-number crate.
        let roll = RandomState::new().hash_one(attempt);
        let port = LOW + (roll % u64::from(HIGH - LOW + 1)) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port between {LOW} and {HIGH}");
}

/// A child process in its own process group, killed with its whole group on drop.
#[derive(Debug)]
pub struct Process {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Process {
    /// Spawns `command` with its output in `log`.
    pub fn spawn(name: &str, mut command: Command, log: PathBuf) -> Process {
        use std::os::unix::process::CommandExt;
        let out = File::create(&log).expect("create log file");
        let err = out.try_clone().expect("clone log file");
        command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            // A group of its own, so that drop reaches the grandchildren (workerd).
            .process_group(0);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Process {
            name: name.to_owned(),
            child,
            log,
        }
    }

    /// What the process printed so far.
    pub fn log(&self) -> String {
        read_log(&self.log)
    }

    /// Waits until `url` answers HTTP at all, failing early if the process exits.
    pub async fn wait_until_answering(&mut self, url: &str) {
        self.wait_until_answering_within(url, START_TIMEOUT).await
    }

    /// As [`Process::wait_until_answering`], with its own time limit.
    pub async fn wait_until_answering_within(&mut self, url: &str, limit: Duration) {
        let client = client();
        // Apart, so that the probe may reap the child while the explanation reads the log.
        let (name, log, child) = (&self.name, &self.log, &mut self.child);
        poll(format!("{name} answers {url}"))
            .within(limit)
            .every(Duration::from_millis(100))
            .explain(|| read_log(log))
            .until_true(|| {
                // A process that exited will never answer: failing early.
                if let Ok(Some(status)) = child.try_wait() {
                    panic!(
                        "{name} exited with {status} before answering:\n{}",
                        read_log(log)
                    );
                }
                let answer = client.get(url).send();
                async move { answer.await.is_ok() }
            })
            .await
    }

    fn signal_group(&self, signal: Signal) {
        // The group id is the child's pid (`process_group(0)`). Signalled directly: the
        // `kill` binary of procps-ng 4.0.2 misreads `kill -TERM -PGID`.
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = killpg(Pid::from_raw(pid), signal);
        }
    }
}

/// What a process printed to `log` so far.
fn read_log(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

impl Process {
    /// Kills the whole group at once (SIGKILL), as a crash would, and reaps the leader.
    pub fn kill(&mut self) {
        self.signal_group(Signal::SIGKILL);
        let _ = self.child.wait();
    }

    /// Waits for the process to exit on its own.
    pub fn wait(&mut self) -> std::process::ExitStatus {
        self.child
            .wait()
            .unwrap_or_else(|e| panic!("waiting for {}: {e}", self.name))
    }

    /// Asks the whole group to stop (SIGTERM), waits up to five seconds for the leader,
    /// then kills whatever is left of the group.
    pub fn stop(&mut self) {
        self.signal_group(Signal::SIGTERM);
        // A grace period, not a wait for something that must happen (whatever is left is
        // killed after it), and in `Drop`, synchronous: not a `poll`.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Whatever is left of the group, including workerd, goes now.
        self.signal_group(Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An HTTP client that never follows redirects: the tests look at them.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("build HTTP client")
}

/// Builds the edge worker once per test process (a no-op when nothing changed).
fn build_worker() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let status = Command::new("bash")
            .arg(repo_root().join("scripts/build-worker"))
            .status()
            .expect("run scripts/build-worker");
        assert!(
            status.success(),
            "scripts/build-worker failed; run scripts/setup first"
        );
    });
}

/// The path of the pinned wrangler.
fn wrangler() -> PathBuf {
    let path = repo_root().join("node_modules/.bin/wrangler");
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup",
        path.display()
    );
    path
}

fn wrangler_command(state: &Path) -> Command {
    let mut command = Command::new(wrangler());
    command
        .current_dir(repo_root())
        .env("WRANGLER_SEND_METRICS", "false")
        .env("CI", "true")
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", state.join("config"));
    command
}

/// A running `wrangler dev` with its own local KV.
#[derive(Debug)]
pub struct Edge {
    // Dropped first: the processes stop before their state directory goes.
    process: Process,
    state: tempfile::TempDir,
    base: String,
    vars: Vec<(String, String)>,
}

impl Edge {
    /// Writes `seed` (KV key → value) into a fresh local KV, then starts `wrangler dev`
    /// on a free port over it.
    pub async fn start(seed: &[(&str, String)]) -> Edge {
        Edge::start_with(seed, &[]).await
    }

    /// As [`Edge::start`], with the worker's variables and secrets `vars` (name, value).
    pub async fn start_with(seed: &[(&str, String)], vars: &[(&str, &str)]) -> Edge {
        build_worker();
        let state = tempfile::tempdir().expect("temp dir");
        let persist = state.path().join("kv");
        if !seed.is_empty() {
            let pairs: Vec<serde_json::Value> = seed
                .iter()
                .map(|(key, value)| serde_json::json!({ "key": key, "value": value }))
                .collect();
            let file = state.path().join("seed.json");
            std::fs::write(&file, serde_json::to_vec(&pairs).expect("seed JSON"))
                .expect("write seed");
            let output = wrangler_command(state.path())
                .args([
                    "kv",
                    "bulk",
                    "put",
                    "--binding",
                    "LINKS",
                    "--local",
                    "--persist-to",
                ])
                .arg(&persist)
                .arg(&file)
                .output()
                .expect("run wrangler kv bulk put");
            assert!(
                output.status.success(),
                "seeding local KV failed:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        let (process, base) = Edge::serve(state.path(), &vars).await;
        Edge {
            process,
            state,
            base,
            vars,
        }
    }

    /// Starts `wrangler dev` on a free port over the local state in `state`.
    async fn serve(state: &Path, vars: &[(String, String)]) -> (Process, String) {
        let port = free_port();
        let mut command = wrangler_command(state);
        command
            .args([
                "dev",
                "--local",
                "--ip",
                "127.0.0.1",
                "--show-interactive-dev-session=false",
            ])
            .args(["--port", &port.to_string()])
            .args(["--inspector-port", &free_port().to_string()])
            .arg("--persist-to")
            .arg(state.join("kv"));
        // The worker's secrets are the test's to give: a developer's .dev.vars must not
        // leak in, so every one is set, empty if not given (`--var` wins over it).
        for name in ["ORIGIN_TOKEN", "SYNC_TOKEN", "PERMUTATION_KEYS"] {
            if !vars.iter().any(|(given, _)| given == name) {
                command.arg("--var").arg(format!("{name}:"));
            }
        }
        for (name, value) in vars {
            command.arg("--var").arg(format!("{name}:{value}"));
        }
        let mut process = Process::spawn("wrangler dev", command, state.join("wrangler.log"));
        let base = format!("http://127.0.0.1:{port}");
        process
            .wait_until_answering(&format!("{base}/_hop/ready"))
            .await;
        (process, base)
    }

    /// Stops `wrangler dev` and starts it again over the same local state (KV and the
    /// Cache API keep what they hold; isolate memory starts empty), on a new port.
    pub async fn restart(&mut self) {
        self.process.stop();
        let (process, base) = Edge::serve(self.state.path(), &self.vars).await;
        self.process = process;
        self.base = base;
    }

    /// The URL of `path` on this edge.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// What wrangler printed so far, for failure messages.
    pub fn log(&self) -> String {
        self.process.log()
    }

    /// A visitor's `GET /{code}` on `s.example`, from an address of its own (`CF-Connecting-IP`, as
    /// Cloudflare sets it): every visit is another visitor, as at a real edge, so no
    /// test's visits add up to one address's limits unless it sends them from one.
    pub async fn visit(&self, code: &str) -> reqwest::Response {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ip = format!("10.{}.{}.{}", (n >> 16) & 255, (n >> 8) & 255, n & 255);
        client()
            .get(self.url(&format!("/{code}")))
            .header("host", "s.example")
            .header("cf-connecting-ip", ip)
            .send()
            .await
            .expect("edge answers")
    }

    /// The directory holding this edge's local state.
    pub fn state_dir(&self) -> &Path {
        self.state.path()
    }
}

/// The origin binary, built by the first test that asks for it in this run
/// (`cargo build -p origin-api --bin hop-origin`, the command `scripts/test` runs too): a
/// test never runs a binary older than the tree it tests. A build with nothing to do
/// takes about a second.
fn origin_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| repo_root().join("target"));
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let status = Command::new(cargo)
                .args([
                    "build",
                    "--locked",
                    "-p",
                    "origin-api",
                    "--bin",
                    "hop-origin",
                ])
                .current_dir(repo_root())
                .env("CARGO_TARGET_DIR", &target)
                .status()
                .expect("run cargo build");
            assert!(status.success(), "cargo build -p origin-api failed");
            target.join("debug/hop-origin")
        })
        .clone()
}

/// A running `hop-origin serve` on a free port.
#[derive(Debug)]
pub struct Origin {
    process: Process,
    base: String,
}

impl Origin {
    /// Creates `links` (link bodies as the API takes them) in one bulk call with `key`,
    /// asserting that the origin accepted them.
    pub async fn create_bulk(&self, key: &str, links: Vec<serde_json::Value>) {
        let res = client()
            .post(self.url("/v1/links/bulk"))
            .bearer_auth(key)
            .json(&serde_json::json!({ "links": links }))
            .send()
            .await
            .expect("bulk create");
        assert_eq!(res.status(), reqwest::StatusCode::OK, "bulk create");
    }

    /// Creates one link (`POST /v1/links`), which must answer 201; the link it answers.
    pub async fn create(&self, key: &str, body: serde_json::Value) -> serde_json::Value {
        let res = client()
            .post(self.url("/v1/links"))
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .expect("create");
        let status = res.status();
        let text = res.text().await.expect("create: the answer");
        assert_eq!(status, reqwest::StatusCode::CREATED, "create: {text}");
        serde_json::from_str(&text).expect("create: a link")
    }

    /// Starts the origin with `env` (HOP_* variables) on `port`, logging to `log`.
    pub async fn start(port: u16, env: &[(&str, String)], log: PathBuf) -> Origin {
        let mut command = Command::new(origin_binary());
        command
            .arg("serve")
            .env("HOP_LISTEN", format!("127.0.0.1:{port}"))
            .env("HOP_LOG", "warn");
        for (name, value) in env {
            command.env(name, value);
        }
        let mut process = Process::spawn("hop-origin", command, log);
        let base = format!("http://127.0.0.1:{port}");
        process
            .wait_until_answering(&format!("{base}/healthz"))
            .await;
        Origin { process, base }
    }

    /// Runs `hop-origin ARGS` to completion with `env`, returning its standard output.
    pub fn run(args: &[&str], env: &[(&str, String)]) -> String {
        let mut command = Command::new(origin_binary());
        command.args(args);
        for (name, value) in env {
            command.env(name, value);
        }
        let output = command.output().expect("run hop-origin");
        assert!(
            output.status.success(),
            "hop-origin {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The URL of `path` on this origin.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// What the origin logged so far.
    pub fn log(&self) -> String {
        self.process.log()
    }

    /// A field of the process's `/proc/PID/status`, in bytes (`RssAnon`, `VmRSS`, …).
    pub fn memory(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.child.id()))
            .expect("the origin's /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().strip_suffix(" kB")?.trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or_else(|| panic!("no {field} in /proc status"))
    }

    /// Kills the origin at once (SIGKILL), as a crash would.
    pub fn kill(mut self) {
        self.process.kill();
    }

    /// The value of one counter or gauge of `/metrics`.
    pub async fn metric(&self, name: &str) -> u64 {
        let text = self.metrics_text().await;
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
    }

    /// The sum of every series of `/metrics` whose line starts with `prefix` (all the
    /// labels of one metric).
    pub async fn metric_sum(&self, prefix: &str) -> u64 {
        self.metrics_text()
            .await
            .lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    async fn metrics_text(&self) -> String {
        client()
            .get(self.url("/metrics"))
            .bearer_auth(METRICS_TOKEN)
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("metrics text")
    }
}

/// The edge token both sides of a wired test use.
pub const EDGE_TOKEN: &str = "edge-token-0123456789abcdef";
/// The sync token both sides of a wired test use.
pub const SYNC_TOKEN: &str = "sync-token-0123456789abcdef";
/// The token the harness reads an origin's `/metrics` with.
pub const METRICS_TOKEN: &str = "metrics-token-0123456789abcdef";
/// The permutation keys both sides of a wired test use.
pub const PERMUTATION_KEYS: &str = "1:000102030405060708090a0b0c0d0e0f";

/// A `wrangler dev` wired to the origin that will listen on `origin_port`: it asks that
/// origin about new links and accepts its pushes.
pub async fn wired_edge(origin_port: u16) -> Edge {
    wired_edge_to(&format!("http://127.0.0.1:{origin_port}"), &[]).await
}

/// `n` codes of the generated shape (seven base-62 characters), the same ones for the
/// same nonzero `seed` (xorshift): codes no test created, the same in every run.
pub fn random_codes(n: usize, seed: u64) -> Vec<String> {
    const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        char::from(ALPHABET[(x % 62) as usize])
    };
    (0..n).map(|_| (0..7).map(|_| next()).collect()).collect()
}

/// Serves `app` in the background on a port of its own on loopback; its base URL.
pub async fn serve_in_background(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// An origin on SQLite publishing to a `wrangler dev` that asks it about new links, as
/// in production with nothing between them, and an API key of its database.
#[derive(Debug)]
pub struct Wired {
    pub edge: Edge,
    pub origin: Origin,
    pub origin_port: u16,
    /// The origin's settings, for `Origin::run` and a restart.
    pub env: Vec<(&'static str, String)>,
    pub key: String,
    // Last: the processes stop before their database goes.
    pub dir: tempfile::TempDir,
}

impl Wired {
    /// Starts both, with a key for `owner` (an administrator's when `admin`).
    pub async fn start(owner: &str, admin: bool) -> Wired {
        let dir = tempfile::tempdir().expect("temp dir");
        let origin_port = free_port();
        let edge = wired_edge(origin_port).await;
        let env = origin_env(dir.path(), Some(&edge));
        let key = api_key(&env, owner, admin);
        let origin = Origin::start(origin_port, &env, dir.path().join("origin.log")).await;
        Wired {
            edge,
            origin,
            origin_port,
            env,
            key,
            dir,
        }
    }
}

/// As [`wired_edge`], for an origin at `origin_url`, with more worker variables.
pub async fn wired_edge_to(origin_url: &str, more: &[(&str, &str)]) -> Edge {
    let mut vars = vec![
        ("ORIGIN_URL", origin_url),
        ("ORIGIN_TOKEN", EDGE_TOKEN),
        ("SYNC_TOKEN", SYNC_TOKEN),
        ("PERMUTATION_KEYS", PERMUTATION_KEYS),
    ];
    vars.extend_from_slice(more);
    Edge::start_with(&[], &vars).await
}

/// The origin's settings for a wired test: SQLite in `dir`, domain `s.example`, and,
/// given an edge, publishing to it.
pub fn origin_env(dir: &Path, publish_to: Option<&Edge>) -> Vec<(&'static str, String)> {
    let mut env = vec![
        (
            "HOP_DATABASE_URL",
            format!("sqlite://{}", dir.join("hop.db").display()),
        ),
        ("HOP_DEFAULT_DOMAIN", "s.example".to_owned()),
        ("HOP_PERMUTATION_KEYS", PERMUTATION_KEYS.to_owned()),
        ("HOP_EDGE_TOKEN", EDGE_TOKEN.to_owned()),
        ("HOP_CREATE_RATE", "1000000".to_owned()),
        ("HOP_OWNER_CREATE_RATE", "1000000".to_owned()),
        // Many origins run at once here: metrics on each one's own port, with a token.
        ("HOP_METRICS_LISTEN", "off".to_owned()),
        ("HOP_METRICS_TOKEN", METRICS_TOKEN.to_owned()),
    ];
    if let Some(edge) = publish_to {
        env.push(("HOP_EDGE_SYNC_URL", edge.url("")));
        env.push(("HOP_EDGE_SYNC_TOKEN", SYNC_TOKEN.to_owned()));
    }
    env
}

/// A new API key for `owner` in the database `env` names.
pub fn api_key(env: &[(&str, String)], owner: &str, admin: bool) -> String {
    let mut args = vec!["keys", "create", "--owner", owner];
    if admin {
        args.push("--admin");
    }
    Origin::run(&args, env)
        .lines()
        .last()
        .expect("the secret on the last line")
        .to_owned()
}

/// The link at `url` (`{origin}/v1/links/{domain}/{code}`) as its owner's `key` reads it.
pub async fn read_link(url: &str, key: &str) -> serde_json::Value {
    client()
        .get(url)
        .bearer_auth(key)
        .send()
        .await
        .expect("read")
        .json()
        .await
        .expect("link")
}

/// Waits (up to a minute) until the origin at `origin` reports `{domain}/{code}` as
/// published to the edge.
pub async fn wait_published(origin: &str, key: &str, domain: &str, code: &str) {
    let url = format!("{origin}/v1/links/{domain}/{code}");
    // The link as last read, for the failure message.
    let last = std::sync::Mutex::new(serde_json::Value::Null);
    let link = poll(format!("{code} is published"))
        .within(Duration::from_secs(60))
        .every(Duration::from_millis(50))
        .explain(|| last.lock().unwrap_or_else(|e| e.into_inner()).to_string())
        .until(|| async {
            let link = read_link(&url, key).await;
            if link["edge"]["state"] == "published" {
                return Some(link);
            }
            *last.lock().unwrap_or_else(|e| e.into_inner()) = link;
            None
        })
        .await;
    assert!(link["edge"]["visible_everywhere_by"].is_string(), "{link}");
}

/// Whether a push (its JSON body) carries a link record (`"key":"l:…"`).
fn carries_records(body: &[u8]) -> bool {
    let needle = br#""key":"l:"#;
    body.windows(needle.len()).any(|w| w == needle)
}

/// What a [`SinkProxy`] does with the publisher's pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkMode {
    /// Passes every push on to the edge.
    Pass,
    /// Answers every push 503, as a sink that is down.
    Down,
    /// Passes pushes of the fast lane (no link record in them) and holds every push of
    /// link records until the client gives up: a normal lane that is stuck.
    StallRecords,
}

/// A proxy between the origin's publisher and the worker's `/_hop/sync`, which a test
/// switches between [`SinkMode`]s.
#[derive(Debug, Clone)]
pub struct SinkProxy {
    /// The URL to give the origin as `HOP_EDGE_SYNC_URL`.
    pub url: String,
    mode: std::sync::Arc<std::sync::Mutex<SinkMode>>,
}

impl SinkProxy {
    /// Starts a proxy to the edge at `edge` (its base URL), passing pushes on.
    pub async fn start(edge: String) -> SinkProxy {
        use axum::extract::{Request, State};
        use axum::response::{IntoResponse, Response};
        type Shared = (String, std::sync::Arc<std::sync::Mutex<SinkMode>>);
        async fn forward(State((edge, mode)): State<Shared>, req: Request) -> Response {
            let mode = *mode.lock().unwrap_or_else(|e| e.into_inner());
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, 64 << 20)
                .await
                .unwrap_or_default();
            match mode {
                SinkMode::Down => {
                    return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "sink down")
                        .into_response()
                }
                SinkMode::StallRecords if carries_records(&body) => {
                    std::future::pending::<()>().await;
                }
                _ => {}
            }
            let mut out = client().post(format!("{edge}{}", parts.uri));
            for (name, value) in &parts.headers {
                if name != "host" && name != "content-length" {
                    out = out.header(name, value);
                }
            }
            match out.body(body).send().await {
                Ok(res) => {
                    let status = axum::http::StatusCode::from_u16(res.status().as_u16())
                        .unwrap_or(axum::http::StatusCode::BAD_GATEWAY);
                    (status, res.bytes().await.unwrap_or_default()).into_response()
                }
                Err(e) => (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
            }
        }
        let mode = std::sync::Arc::new(std::sync::Mutex::new(SinkMode::Pass));
        let app = axum::Router::new()
            .fallback(forward)
            .with_state((edge, mode.clone()));
        SinkProxy {
            url: serve_in_background(app).await,
            mode,
        }
    }

    /// Switches what the proxy does with the next pushes.
    pub fn set(&self, mode: SinkMode) {
        *self.mode.lock().unwrap_or_else(|e| e.into_inner()) = mode;
    }
}

/// As [`origin_env`], publishing to `edge` through a [`SinkProxy`] the test can switch.
pub async fn origin_env_through(
    dir: &Path,
    edge: &Edge,
) -> (SinkProxy, Vec<(&'static str, String)>) {
    let sink = SinkProxy::start(edge.url("")).await;
    let mut env = origin_env(dir, None);
    env.push(("HOP_EDGE_SYNC_URL", sink.url.clone()));
    env.push(("HOP_EDGE_SYNC_TOKEN", SYNC_TOKEN.to_owned()));
    (sink, env)
}
