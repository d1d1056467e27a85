//! The origin talks to PostgreSQL over TLS (sqlx with rustls): against a throwaway
//! server of its own that takes TLS connections only, with a certificate from a private
//! CA, `sslmode=require` and `sslmode=verify-full` (with that CA as the root)
//! connect and migrate; a plain connection is refused, and so is `verify-full` against
//! another root. Skipped, saying so, where PostgreSQL's `initdb`
//! or `openssl` is missing.

use sqlx::Connection;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The newest `initdb` of Debian's PostgreSQL packages, if any.
fn pg_bin() -> Option<PathBuf> {
    let mut bins: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|b| b.join("initdb").exists() && b.join("pg_ctl").exists())
        .collect();
    bins.sort();
    bins.pop()
}

fn root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs `program` as the `postgres` user when this test runs as root (PostgreSQL's
/// tools refuse root), else as it is.
fn as_server(program: &Path, args: &[&str]) -> std::process::Output {
    let mut command = if root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    command.args(args).output().expect("run a PostgreSQL tool")
}

fn ok(output: std::process::Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn openssl(args: &[&str], dir: &Path) {
    ok(
        Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl"),
        &format!("openssl {}", args.join(" ")),
    );
}

/// In `dir`: a certificate authority `{ca}.crt`, and when `server` is set, a
/// certificate for 127.0.0.1 it signed (`server.crt`, `server.key`), as a private CA
/// gives a database server.
fn certificates(dir: &Path, ca: &str, server: bool) {
    let (key, crt) = (format!("{ca}.key"), format!("{ca}.crt"));
    openssl(
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={ca}"),
            "-keyout",
            &key,
            "-out",
            &crt,
        ],
        dir,
    );
    if !server {
        return;
    }
    openssl(
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
        dir,
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .expect("write ext");
    openssl(
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            &crt,
            "-CAkey",
            &key,
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.crt",
        ],
        dir,
    );
    // PostgreSQL refuses a key others may read.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.join("server.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
}

/// A PostgreSQL server in a directory of its own, stopped when dropped.
struct TlsServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

impl TlsServer {
    fn start(bin: PathBuf) -> TlsServer {
        let dir = tempfile::Builder::new()
            .prefix("hop-pg-tls")
            .tempdir()
            .expect("tempdir");
        let path = dir.path();
        certificates(path, "ca", true);
        certificates(path, "other-ca", false);
        if root() {
            ok(
                Command::new("chown")
                    .args(["-R", "postgres"])
                    .arg(path)
                    .output()
                    .expect("chown"),
                "chown",
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let data = path.join("data");
        ok(
            as_server(
                &bin.join("initdb"),
                &[
                    "-D",
                    data.to_str().unwrap_or_default(),
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "--no-sync",
                ],
            ),
            "initdb",
        );
        let dir_s = path.display();
        let conf = format!(
            "\nport = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{dir_s}'\n\
             fsync = off\nssl = on\nssl_cert_file = '{dir_s}/server.crt'\nssl_key_file = '{dir_s}/server.key'\n"
        );
        let append = |file: &str, text: &str, replace: bool| {
            let p = data.join(file);
            let mut all = if replace {
                String::new()
            } else {
                std::fs::read_to_string(&p).expect("read conf")
            };
            all.push_str(text);
            std::fs::write(&p, all).expect("write conf");
        };
        append("postgresql.conf", &conf, false);
        // TLS connections only, over TCP.
        append(
            "pg_hba.conf",
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n",
            true,
        );
        let log = path.join("log");
        ok(
            as_server(
                &bin.join("pg_ctl"),
                &[
                    "-D",
                    data.to_str().unwrap_or_default(),
                    "-l",
                    log.to_str().unwrap_or_default(),
                    "-w",
                    "-t",
                    "60",
                    "start",
                ],
            ),
            "pg_ctl start",
        );
        TlsServer { bin, dir, port }
    }

    fn url(&self, params: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?{params}",
            self.port
        )
    }

    fn cert(&self, name: &str) -> String {
        self.dir
            .path()
            .join(format!("{name}.crt"))
            .display()
            .to_string()
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = as_server(
            &self.bin.join("pg_ctl"),
            &[
                "-D",
                data.to_str().unwrap_or_default(),
                "-m",
                "immediate",
                "stop",
            ],
        );
    }
}

#[tokio::test]
async fn the_origin_reaches_postgres_over_tls_and_checks_its_certificate() {
    let (Some(bin), true) = (
        pg_bin(),
        Command::new("openssl").arg("version").output().is_ok(),
    ) else {
        assert!(
            !crate::common::postgres_required(),
            "PostgreSQL's initdb or openssl is missing, and HOP_TEST_REQUIRE_POSTGRES is set"
        );
        eprintln!("NOTICE: PostgreSQL's initdb or openssl is missing: the TLS test is skipped");
        return;
    };
    let server = TlsServer::start(bin);

    for params in [
        "sslmode=require".to_owned(),
        format!("sslmode=verify-full&sslrootcert={}", server.cert("ca")),
    ] {
        let url = server.url(&params);
        let db = origin_api::prepare(&crate::common::settings(&url))
            .await
            .unwrap_or_else(|e| panic!("{params}: {e}"));
        assert_eq!(db.kind(), "postgres");
        let (pending, _) = db.migration_status().await.expect("migrations read");
        assert!(pending.is_empty(), "{params}: migrated");
        db.close().await;
    }
    // Plain text is refused by the server; another root by the origin.
    for params in [
        "sslmode=disable".to_owned(),
        format!(
            "sslmode=verify-full&sslrootcert={}",
            server.cert("other-ca")
        ),
    ] {
        let refused = sqlx::PgConnection::connect(&server.url(&params)).await;
        assert!(refused.is_err(), "{params} connected");
    }
}
