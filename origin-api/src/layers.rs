//! The origin's modules form layers, and dependencies point down: the interface (routes,
//! server, command line) uses the services, the services use the infrastructure (the
//! database, the store, the caches), and everything uses the model. A module that names
//! one above it fails this test, as does a new top-level module no layer lists.
//!
//! A unit test of the crate (no test binary of its own to link). It reads the sources
//! rather than the compiled crate: every `crate::<module>` path outside comments,
//! including those inside `use crate::{…}` groups.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Bottom first. A module may use its own layer and those below.
const LAYERS: &[(&str, &[&str])] = &[
    ("model", &["model", "random_ids"]),
    (
        "foundation",
        &[
            "config", "owners", "retry", "proxies", "metrics", "api_keys",
        ],
    ),
    (
        "infrastructure",
        &["db", "store", "cache", "ceiling", "segments"],
    ),
    (
        "services",
        &[
            "error",
            "redirects",
            "ratelimit",
            "auth",
            "links",
            "bans",
            "domains",
            "clicks",
            "publisher",
            "housekeeping",
            "freshness",
        ],
    ),
    (
        "interface",
        &[
            "app",
            "routes",
            "server",
            "in_flight",
            "cli",
            "lib",
            "main",
            "layers",
        ],
    ),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a source file belongs to: `links` for `src/links/create.rs`,
/// `cache` for `src/cache/front.rs` and `src/cache.rs`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).expect("under src");
    let first = relative.components().next().expect("a component");
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_owned()
}

/// Every module named by a `crate::` path in `code` (comments removed).
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or_default();
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // `use crate::{a, b::c}`: each item's first segment (a group over one
                // line; rustfmt splits longer ones one item a line, seen below).
                let inner = group.split('}').next().unwrap_or_default();
                for item in inner.split(',') {
                    let name = ident(item.trim());
                    if !name.is_empty() {
                        out.insert(name);
                    }
                }
            } else {
                let name = ident(rest);
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
    // Items of a `use crate::{` group that rustfmt put on lines of their own.
    let mut in_group = false;
    for line in code.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("use crate::{") && !trimmed.contains('}') {
            in_group = true;
            continue;
        }
        if in_group {
            if trimmed.starts_with('}') {
                in_group = false;
                continue;
            }
            let name = ident(trimmed);
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn no_module_uses_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    assert!(files.len() > 20, "found only {} sources", files.len());
    let mut wrong = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        if module == "layers" {
            // This checker: its paths are examples in strings.
            continue;
        }
        let Some(own) = layer_of(&module) else {
            wrong.push(format!("{module}: in no layer (add it to LAYERS)"));
            continue;
        };
        let code = std::fs::read_to_string(file).expect("read source");
        for named in named_modules(&code) {
            // The crate root's re-export of the state is the state's layer.
            let named = if named == "AppState" {
                "state".to_owned()
            } else {
                named
            };
            match layer_of(&named) {
                Some(theirs) if theirs > own => wrong.push(format!(
                    "{} ({}) uses crate::{named} ({})",
                    file.strip_prefix(&src).unwrap_or(file).display(),
                    LAYERS[own].0,
                    LAYERS[theirs].0
                )),
                Some(_) => {}
                None => wrong.push(format!(
                    "{}: crate::{named} is in no layer",
                    file.strip_prefix(&src).unwrap_or(file).display()
                )),
            }
        }
    }
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
}

#[test]
fn the_reader_finds_paths_in_groups_and_ignores_comments() {
    let code = "use crate::{model::Link, store};\n// crate::routes in a comment\n\
                let x = crate::cache::thing(); /// crate::server\nuse crate::{\n    db::Db,\n    metrics,\n};\n";
    let found: Vec<String> = named_modules(code).into_iter().collect();
    assert_eq!(found, ["cache", "db", "metrics", "model", "store"]);
}
