//! The store's statements and their compile-time twins, held to each other.
//!
//! The store runs each file of `origin-api/src/store/queries/` (`include_str!`); the
//! twins in `sql-check/checks.rs` hand the same file to `sqlx::query_file!`, which checks
//! it against both migrated schemas when sql-check builds. The twins are written by hand
//! (the arguments are the Rust types the store binds), so nothing but this test keeps
//! them complete and true: every statement has exactly one twin, every twin names a
//! statement, every statement is one the store runs, and each twin's comment names the
//! store file that runs it (`/// \`store/links.rs\`: …`), which must.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

/// Names of `queries/*.sql` written in `text` (`store/queries/x.sql` or `queries/x.sql`).
fn statements_named(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("queries/") {
        let tail = &rest[at + "queries/".len()..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        if let Some(stem) = name.strip_suffix(".sql") {
            if !stem.is_empty() {
                found.push(name.to_owned());
            }
        }
        rest = &tail[end..];
    }
    found
}

/// Each twin of `checks`: the statement it checks, and the store file its comment names.
fn twins(checks: &str) -> Vec<(String, Option<String>)> {
    let lines: Vec<&str> = checks.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with("pub async fn ") {
            continue;
        }
        // The doc comment right above the function, and the body down to its end.
        let mut first = i;
        while first > 0 && lines[first - 1].starts_with("///") {
            first -= 1;
        }
        let doc = lines[first..i].join("\n");
        let end = lines[i..]
            .iter()
            .position(|l| *l == "}")
            .map_or(lines.len(), |e| i + e);
        let body = lines[i..end].join("\n");
        let named = doc
            .strip_prefix("/// `")
            .and_then(|d| d.split_once('`'))
            .map(|(file, _)| file.to_owned())
            .filter(|f| f.starts_with("store/") && f.ends_with(".rs"));
        for statement in statements_named(&body) {
            out.push((statement, named.clone()));
        }
    }
    out
}

/// What is wrong between the statements on disk, the store's files and the twins.
fn mismatches(
    on_disk: &BTreeSet<String>,
    store: &BTreeMap<String, String>,
    checks: &str,
) -> Vec<String> {
    let mut wrong = Vec::new();
    let twins = twins(checks);
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for (statement, named) in &twins {
        *count.entry(statement).or_default() += 1;
        if !on_disk.contains(statement) {
            wrong.push(format!(
                "a twin checks {statement}, which is not a statement"
            ));
        }
        match named {
            None => wrong.push(format!(
                "the twin of {statement} does not name the store file that runs it (/// `store/x.rs`: …)"
            )),
            Some(file) => {
                let runs = store
                    .get(file)
                    .is_some_and(|code| statements_named(code).contains(statement));
                if !runs {
                    wrong.push(format!(
                        "the twin of {statement} names {file}, which does not run it"
                    ));
                }
            }
        }
    }
    let run: BTreeSet<String> = store.values().flat_map(|c| statements_named(c)).collect();
    for statement in on_disk {
        match count.get(statement.as_str()) {
            None => wrong.push(format!(
                "{statement} has no twin in sql-check/checks.rs: the build does not check it"
            )),
            Some(n) if *n > 1 => wrong.push(format!("{statement} has {n} twins")),
            Some(_) => {}
        }
        if !run.contains(statement) {
            wrong.push(format!("{statement} is run by no file of the store"));
        }
    }
    wrong
}

fn store_files(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).expect("the store's directory") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if path.is_dir() {
            if name != "queries" {
                store_files(&path, &format!("{prefix}{name}/"), out);
            }
        } else if name.ends_with(".rs") {
            let code = std::fs::read_to_string(&path).expect("a store file");
            out.insert(format!("{prefix}{name}"), code);
        }
    }
}

#[test]
fn every_statement_has_one_twin_that_names_the_store_file_running_it() {
    let root = repo_root();
    let queries = root.join("origin-api/src/store/queries");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&queries)
        .expect("store/queries")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".sql"))
        .collect();
    assert!(on_disk.len() > 100, "{} statements", on_disk.len());
    let mut store = BTreeMap::new();
    store_files(&root.join("origin-api/src/store"), "store/", &mut store);
    let checks =
        std::fs::read_to_string(root.join("sql-check/checks.rs")).expect("sql-check/checks.rs");
    let wrong = mismatches(&on_disk, &store, &checks);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_missing_a_doubled_a_stray_and_a_misnamed_twin_are_each_found() {
    let on_disk: BTreeSet<String> = ["a.sql", "b.sql", "c.sql"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let store: BTreeMap<String, String> = [
        (
            "store/links.rs".to_owned(),
            r#"const A: &str = include_str!("queries/a.sql");
               const B: &str = include_str!("queries/b.sql");"#
                .to_owned(),
        ),
        (
            "store/bans.rs".to_owned(),
            r#"const C: &str = include_str!("queries/c.sql");"#.to_owned(),
        ),
    ]
    .into_iter()
    .collect();
    let twin = |doc: &str, file: &str| {
        format!(
            "/// `{doc}`: what it reads.\npub async fn t(c: &mut Conn) -> Result<(), sqlx::Error> {{\n    sqlx::query_file!(\"../../origin-api/src/store/queries/{file}\").fetch_one(c).await?;\n    Ok(())\n}}\n"
        )
    };
    let good = [
        twin("store/links.rs", "a.sql"),
        twin("store/links.rs", "b.sql"),
        twin("store/bans.rs", "c.sql"),
    ]
    .join("\n");
    assert_eq!(mismatches(&on_disk, &store, &good), Vec::<String>::new());

    let missing = [
        twin("store/links.rs", "a.sql"),
        twin("store/bans.rs", "c.sql"),
    ]
    .join("\n");
    let found = mismatches(&on_disk, &store, &missing);
    assert!(
        found.iter().any(|w| w.contains("b.sql has no twin")),
        "{found:?}"
    );

    let doubled = format!("{good}\n{}", twin("store/links.rs", "a.sql"));
    let found = mismatches(&on_disk, &store, &doubled);
    assert!(
        found.iter().any(|w| w.contains("a.sql has 2 twins")),
        "{found:?}"
    );

    let stray = format!("{good}\n{}", twin("store/links.rs", "gone.sql"));
    let found = mismatches(&on_disk, &store, &stray);
    assert!(
        found.iter().any(|w| w.contains("gone.sql, which is not")),
        "{found:?}"
    );

    let misnamed = [
        twin("store/links.rs", "a.sql"),
        twin("store/links.rs", "b.sql"),
        twin("store/links.rs", "c.sql"),
    ]
    .join("\n");
    let found = mismatches(&on_disk, &store, &misnamed);
    assert!(
        found
            .iter()
            .any(|w| w.contains("c.sql names store/links.rs")),
        "{found:?}"
    );

    let mut unused = store.clone();
    unused.insert("store/bans.rs".to_owned(), String::new());
    let found = mismatches(&on_disk, &unused, &good);
    assert!(
        found.iter().any(|w| w.contains("c.sql is run by no file")),
        "{found:?}"
    );
}
