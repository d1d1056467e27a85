//! How the sources of `origin-api`, `shared` and `edge-worker` depend on one another,
//! checked from the sources themselves (no compiled crate): no import cycle between
//! files (issue 37, "no circles"; the edge worker's since issue 55), the origin's layers pointing down (D-204), and no file of `shared` longer
//! than [`MAX_SHARED_LINES`].
//!
//! How a file's imports are read. Each `.rs` file under `src` is a module: `foo.rs` and
//! `foo/mod.rs` are `foo`, `foo/bar.rs` is `foo::bar`, `lib.rs` is the crate root and
//! `main.rs` the root of a crate of its own (the binary). Its code, outside comments and
//! string and character literals, is read for paths:
//!
//! - `crate::a::b`, `super::x` (`super::super::x`), `self::x`, and in the binary the
//!   library's own name (`origin_api::x`);
//! - `use` trees, groups nested to any depth: `use crate::{a::{b, c as d}, e::*}`;
//! - a child module named relatively (`bar::X` in `foo.rs`, with `foo/bar.rs`), a name
//!   a `use` of the file brought in (`use crate::store;` then `store::links::f()`), and a
//!   child of a module the file glob-imports (`use super::*;` then `sibling::f()`).
//!
//! Each path resolves to the longest prefix of it that is a module file, and that file is
//! imported (an edge of the graph). A name the crate root re-exports (`pub use
//! state::AppState` in `lib.rs`) resolves to where it comes from: the root is the crate's
//! index, and `crate::AppState` is a use of `state` (the layer test always read it so).
//! Declaring a child module (`mod bar;`) is no edge; using it (`bar::X`) is, and a child
//! using its parent (`super::Something` in `foo/bar.rs`) is an edge `foo::bar` → `foo`.
//! Code inside an inline module (`#[cfg(test)] mod tests { … }`) counts as its file's
//! (simpler, and stricter), with that module part of the file: its `use super::*` names
//! the file itself, no edge.
//!
//! Cycles are the strongly connected components of the graph (Tarjan's algorithm) with
//! more than one file; each is reported with its files and, for each file, one import
//! into the component with its `file:line`.
//!
//! Debug aid: `HOP_ARCH_SHOW=<module>` prints every edge from and to that module (`decision`,
//! `routes::links`, `crate` for a root), in every crate that has it:
//!
//! ```text
//! HOP_ARCH_SHOW=decision cargo test -p hop-e2e --test architecture -- --nocapture
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Import cycles between files of `origin-api/src` tolerated for now (each sorted, paths
/// relative to `src`): none since issue 37 removed the last. A cycle not listed fails the
/// test, and so does one listed that no longer exists, so the list can only shrink
/// unseen.
const ORIGIN_CYCLES_LEFT: &[&[&str]] = &[];

/// The longest a file of `shared/src` may be, in lines.
const MAX_SHARED_LINES: usize = 800;

// ---------------------------------------------------------------------------------------
// Reading code: tokens outside comments and literals.

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Open,
    Close,
    Comma,
    Semi,
    Star,
    Other(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// The tokens of `code` that can be part of a path, with their lines (1-based): comments,
/// strings (plain, byte, C and raw), character literals and numbers are left out, and a
/// lifetime is only its name.
fn tokens(code: &str) -> Vec<Token> {
    let c: Vec<char> = code.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // Skips a quoted literal whose opening quote is at `i`, honouring escapes.
    let quoted = |mut i: usize, line: &mut usize| -> usize {
        let quote = c[i];
        i += 1;
        while i < c.len() && c[i] != quote {
            if c[i] == '\\' {
                i += 1;
            }
            if at(i) == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i + 1
    };
    // Skips a raw string whose `r` is at `i`: `r"…"`, `r#"…"#`.
    let raw = |mut i: usize, line: &mut usize| -> usize {
        i += 1;
        let mut hashes = 0;
        while at(i) == '#' {
            hashes += 1;
            i += 1;
        }
        i += 1; // the opening quote
        while i < c.len() {
            if c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                return i + 1 + hashes;
            }
            if c[i] == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i
    };
    // Whether a raw string starts at `i` (at its `r`).
    let raw_at = |i: usize| -> bool {
        let mut j = i + 1;
        while at(j) == '#' {
            j += 1;
        }
        at(j) == '"'
    };
    while i < c.len() {
        let ch = c[i];
        match ch {
            '\n' => {
                line += 1;
                i += 1;
            }
            '/' if at(i + 1) == '/' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 0;
                while i < c.len() {
                    if c[i] == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if c[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
            }
            '"' => i = quoted(i, &mut line),
            '\'' => {
                if at(i + 1) == '\\' || (at(i + 1) != '\'' && at(i + 2) == '\'') {
                    // A character literal: 'a', '\n', '\'', '\u{1F600}'.
                    i = quoted(i, &mut line);
                } else {
                    // A lifetime or a label: its name is read as an identifier.
                    i += 1;
                }
            }
            'r' if raw_at(i) => i = raw(i, &mut line),
            'b' | 'c' if at(i + 1) == 'r' && raw_at(i + 1) => i = raw(i + 1, &mut line),
            'b' | 'c' if at(i + 1) == '"' => i = quoted(i + 1, &mut line),
            'b' if at(i + 1) == '\'' => i = quoted(i + 1, &mut line),
            'r' if at(i + 1) == '#' && is_ident_start(at(i + 2)) => {
                // A raw identifier: `r#type`.
                let start = i + 2;
                i = start;
                while i < c.len() && is_ident_char(c[i]) {
                    i += 1;
                }
                let tok = Tok::Ident(c[start..i].iter().collect());
                out.push(Token { tok, line });
            }
            ch if is_ident_start(ch) => {
                let start = i;
                while i < c.len() && is_ident_char(c[i]) {
                    i += 1;
                }
                let tok = Tok::Ident(c[start..i].iter().collect());
                out.push(Token { tok, line });
            }
            ch if ch.is_ascii_digit() => {
                while i < c.len() && is_ident_char(c[i]) {
                    i += 1;
                }
            }
            ':' if at(i + 1) == ':' => {
                out.push(Token {
                    tok: Tok::Sep,
                    line,
                });
                i += 2;
            }
            ch if ch.is_whitespace() => i += 1,
            ch => {
                let tok = match ch {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ',' => Tok::Comma,
                    ';' => Tok::Semi,
                    '*' => Tok::Star,
                    other => Tok::Other(other),
                };
                out.push(Token { tok, line });
                i += 1;
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Reading paths: `use` trees and paths in code, each with the inline modules it is in.

/// A path as written, where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Written {
    segments: Vec<String>,
    line: usize,
    /// The inline modules (`mod tests { … }`) around it, outermost first.
    inline: Vec<String>,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// A path in code.
    Path,
    /// A `use` leaf that brings in this name (`_` brings in none).
    Use(String),
    /// A `use …::*`: `segments` is the module.
    Glob,
}

/// Every path in `code`: `use` leaves (groups expanded) and paths of two segments or more.
fn written_paths(code: &str) -> Vec<Written> {
    let t = tokens(code);
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut i = 0;
    let ident = |i: usize| match t.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    let is = |i: usize, tok: &Tok| t.get(i).is_some_and(|t| &t.tok == tok);
    while i < t.len() {
        let names = || inline.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        match &t[i].tok {
            Tok::Open => {
                depth += 1;
                i += 1;
            }
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            Tok::Ident(word)
                if word == "mod" && ident(i + 1).is_some() && is(i + 2, &Tok::Open) =>
            {
                inline.push((ident(i + 1).unwrap_or_default().to_owned(), depth + 1));
                i += 2;
            }
            Tok::Ident(word) if word == "use" && !is(i.wrapping_sub(1), &Tok::Sep) => {
                i += 1;
                let mut leaves = Vec::new();
                use_tree(&t, &mut i, &[], &mut leaves);
                for (segments, line, kind) in leaves {
                    out.push(Written {
                        segments,
                        line,
                        inline: names(),
                        kind,
                    });
                }
                while i < t.len() && t[i].tok != Tok::Semi {
                    i += 1;
                }
            }
            Tok::Ident(first)
                if first != "Self"
                    && !is(i.wrapping_sub(1), &Tok::Sep)
                    && is(i + 1, &Tok::Sep)
                    && ident(i + 2).is_some() =>
            {
                let line = t[i].line;
                let mut segments = vec![first.clone()];
                i += 1;
                while is(i, &Tok::Sep) {
                    match ident(i + 1) {
                        Some(s) => {
                            segments.push(s.to_owned());
                            i += 2;
                        }
                        None => break,
                    }
                }
                out.push(Written {
                    segments,
                    line,
                    inline: names(),
                    kind: Kind::Path,
                });
            }
            _ => i += 1,
        }
    }
    out
}

/// Reads one use tree at `t[*i]` under `prefix`: its leaves, with their lines.
fn use_tree(
    t: &[Token],
    i: &mut usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, usize, Kind)>,
) {
    let mut path = prefix.to_vec();
    if t.get(*i).is_some_and(|t| t.tok == Tok::Sep) {
        *i += 1;
    }
    while let Some(token) = t.get(*i) {
        match &token.tok {
            Tok::Ident(segment) => {
                path.push(segment.clone());
                let line = token.line;
                *i += 1;
                if t.get(*i).is_some_and(|t| t.tok == Tok::Sep) {
                    *i += 1;
                    continue;
                }
                let mut name = segment.clone();
                if matches!(t.get(*i).map(|t| &t.tok), Some(Tok::Ident(w)) if w == "as") {
                    if let Some(Tok::Ident(alias)) = t.get(*i + 1).map(|t| &t.tok) {
                        name = alias.clone();
                    }
                    *i += 2;
                }
                if segment == "self" && path.len() > 1 {
                    // `a::b::{self}`: the module `a::b` itself.
                    path.pop();
                    if name == "self" {
                        name = path.last().cloned().unwrap_or_default();
                    }
                }
                out.push((path, line, Kind::Use(name)));
                return;
            }
            Tok::Star => {
                out.push((path, token.line, Kind::Glob));
                *i += 1;
                return;
            }
            Tok::Open => {
                *i += 1;
                while let Some(token) = t.get(*i) {
                    match token.tok {
                        Tok::Close => {
                            *i += 1;
                            return;
                        }
                        Tok::Comma => *i += 1,
                        Tok::Semi => return,
                        _ => {
                            let before = *i;
                            use_tree(t, i, &path, out);
                            if *i == before {
                                *i += 1;
                            }
                        }
                    }
                }
                return;
            }
            _ => return,
        }
    }
}

// ---------------------------------------------------------------------------------------
// The graph of files.

/// Which crate of a package a file belongs to: the library, or a binary (by its root).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Unit {
    Lib,
    Bin(String),
}

#[derive(Debug)]
struct File {
    /// Relative to `src`, with `/`.
    path: String,
    unit: Unit,
    module: Vec<String>,
    written: Vec<Written>,
}

impl File {
    fn module_name(&self) -> String {
        match (&self.unit, self.module.is_empty()) {
            (_, false) => self.module.join("::"),
            (Unit::Lib, true) => "crate".to_owned(),
            (Unit::Bin(root), true) => root.trim_end_matches(".rs").to_owned(),
        }
    }
}

#[derive(Debug)]
struct Graph {
    files: Vec<File>,
    /// By (from, to): the first line.
    edges: BTreeMap<(usize, usize), usize>,
}

/// The module of a source file (`src`-relative, `/`-separated) and its crate.
fn module_of(path: &str) -> (Unit, Vec<String>) {
    let parts: Vec<&str> = path.trim_end_matches(".rs").split('/').collect();
    match parts.as_slice() {
        ["lib"] => (Unit::Lib, Vec::new()),
        ["main"] => (Unit::Bin(path.to_owned()), Vec::new()),
        ["bin", _] => (Unit::Bin(path.to_owned()), Vec::new()),
        [dirs @ .., "mod"] => (Unit::Lib, dirs.iter().map(|s| s.to_string()).collect()),
        all => (Unit::Lib, all.iter().map(|s| s.to_string()).collect()),
    }
}

/// The graph of `sources` (`src`-relative path, code), `lib_name` being how a binary
/// names the library (`origin_api`).
fn graph(lib_name: &str, sources: &[(String, String)]) -> Graph {
    let files: Vec<File> = sources
        .iter()
        .map(|(path, code)| {
            let (unit, module) = module_of(path);
            File {
                path: path.clone(),
                unit,
                module,
                written: written_paths(code),
            }
        })
        .collect();
    let modules: BTreeMap<(Unit, Vec<String>), usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| ((f.unit.clone(), f.module.clone()), i))
        .collect();
    let resolver = Resolver {
        files: &files,
        modules: &modules,
        lib_name,
    };
    // What each file's `use` leaves bring in, by name: a crate and a path from its root.
    let aliases: Vec<BTreeMap<String, Absolute>> =
        (0..files.len()).map(|f| resolver.aliases(f)).collect();
    let mut edges = BTreeMap::new();
    for (from, file) in files.iter().enumerate() {
        for w in &file.written {
            let Some(absolute) = resolver.absolute(from, &aliases[from], w, true) else {
                continue;
            };
            let Some(to) = resolver.target(&absolute, &aliases, 0) else {
                continue;
            };
            if to != from {
                let line = edges.entry((from, to)).or_insert(w.line);
                *line = (*line).min(w.line);
            }
        }
    }
    Graph { files, edges }
}

/// A path from a crate's root.
type Absolute = (Unit, Vec<String>);

struct Resolver<'g> {
    files: &'g [File],
    modules: &'g BTreeMap<(Unit, Vec<String>), usize>,
    lib_name: &'g str,
}

impl Resolver<'_> {
    fn is_module(&self, unit: &Unit, path: &[String]) -> bool {
        self.modules.contains_key(&(unit.clone(), path.to_vec()))
    }

    /// The names a file's `use` leaves bring in, in order (a later leaf may build on an
    /// earlier one: `use crate::store; use store::links;`).
    fn aliases(&self, file: usize) -> BTreeMap<String, Absolute> {
        let mut names = BTreeMap::new();
        for w in &self.files[file].written {
            let Kind::Use(name) = &w.kind else { continue };
            if name == "_" {
                continue;
            }
            if let Some(absolute) = self.absolute(file, &names, w, true) {
                names.insert(name.clone(), absolute);
            }
        }
        names
    }

    /// Where a written path starts from: `None` for one that leaves the package (`std::`,
    /// another crate) or names nothing a module file holds. A relative path may be a
    /// child of a module the file glob-imports (`globs`: look there).
    fn absolute(
        &self,
        file: usize,
        aliases: &BTreeMap<String, Absolute>,
        w: &Written,
        globs: bool,
    ) -> Option<Absolute> {
        let f = &self.files[file];
        let here: Vec<String> = f.module.iter().chain(&w.inline).cloned().collect();
        let (first, rest) = w.segments.split_first()?;
        let with = |base: Vec<String>, rest: &[String]| -> Vec<String> {
            base.into_iter().chain(rest.iter().cloned()).collect()
        };
        match first.as_str() {
            "crate" => Some((f.unit.clone(), rest.to_vec())),
            "self" => Some((f.unit.clone(), with(here, rest))),
            "super" => {
                let ups = w.segments.iter().take_while(|s| *s == "super").count();
                let mut base = here;
                for _ in 0..ups {
                    base.pop()?;
                }
                Some((f.unit.clone(), with(base, &w.segments[ups..])))
            }
            name if name == self.lib_name && f.unit != Unit::Lib => {
                Some((Unit::Lib, rest.to_vec()))
            }
            name => {
                if let Some((unit, base)) = aliases.get(name) {
                    // Not the leaf that brought the name in, naming itself.
                    if !matches!(&w.kind, Kind::Use(n) if n == name && rest.is_empty()) {
                        return Some((unit.clone(), with(base.clone(), rest)));
                    }
                }
                let child = with(f.module.clone(), std::slice::from_ref(first));
                if self.is_module(&f.unit, &child) {
                    return Some((f.unit.clone(), with(child, rest)));
                }
                // A child of a module this file glob-imports.
                if !globs {
                    return None;
                }
                f.written
                    .iter()
                    .filter(|g| g.kind == Kind::Glob)
                    .filter_map(|g| self.absolute(file, &BTreeMap::new(), g, false))
                    .map(|(unit, module)| (unit, with(module, std::slice::from_ref(first))))
                    .find(|(unit, module)| self.is_module(unit, module))
                    .map(|(unit, module)| (unit, with(module, rest)))
            }
        }
    }

    /// The file a path lands in: the longest prefix of it that is a module file; through
    /// the crate root's re-exports.
    fn target(
        &self,
        (unit, path): &Absolute,
        aliases: &[BTreeMap<String, Absolute>],
        hops: usize,
    ) -> Option<usize> {
        let longest = (0..=path.len())
            .rev()
            .find(|n| self.is_module(unit, &path[..*n]))?;
        let file = self.modules[&(unit.clone(), path[..longest].to_vec())];
        if longest == 0 && hops < 8 {
            if let Some((name, rest)) = path.split_first() {
                if let Some((via_unit, via)) = aliases[file].get(name) {
                    let through = via.iter().chain(rest).cloned().collect();
                    return self.target(&(via_unit.clone(), through), aliases, hops + 1);
                }
            }
        }
        Some(file)
    }
}

/// Tarjan's strongly connected components of `graph`, each as its files' indices.
fn components(graph: &Graph) -> Vec<Vec<usize>> {
    struct State {
        next: BTreeMap<usize, Vec<usize>>,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        found: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for w in s.next.get(&v).cloned().unwrap_or_default() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.found.push(component);
        }
    }
    let n = graph.files.len();
    let mut next: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &(from, to) in graph.edges.keys() {
        next.entry(from).or_default().push(to);
    }
    let mut s = State {
        next,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        counter: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.found
}

/// A cycle: its files (sorted, `src`-relative) and, per file, one import within it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cycle {
    files: Vec<String>,
    examples: Vec<String>,
}

impl Cycle {
    fn report(&self, crate_dir: &str) -> String {
        let mut out = format!("cycle of {} files: {:?}\n", self.files.len(), self.files);
        for e in &self.examples {
            out.push_str(&format!("    {crate_dir}/src/{e}\n"));
        }
        out
    }
}

/// The import cycles of `graph`, sorted.
fn cycles(graph: &Graph) -> Vec<Cycle> {
    let mut found: Vec<Cycle> = components(graph)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|mut c| {
            c.sort_by(|a, b| graph.files[*a].path.cmp(&graph.files[*b].path));
            let members: BTreeSet<usize> = c.iter().copied().collect();
            let examples = c
                .iter()
                .filter_map(|&from| {
                    let (&(_, to), &line) = graph
                        .edges
                        .range((from, 0)..(from + 1, 0))
                        .find(|((_, to), _)| members.contains(to))?;
                    Some(format!(
                        "{}:{line} imports {} ({})",
                        graph.files[from].path,
                        graph.files[to].module_name(),
                        graph.files[to].path
                    ))
                })
                .collect();
            Cycle {
                files: c.iter().map(|&f| graph.files[f].path.clone()).collect(),
                examples,
            }
        })
        .collect();
    found.sort_by(|a, b| a.files.cmp(&b.files));
    found
}

/// Every edge from and to the module `name` (for `HOP_ARCH_SHOW`).
fn show(graph: &Graph, crate_dir: &str, name: &str) -> String {
    let mut out = String::new();
    for (i, file) in graph.files.iter().enumerate() {
        if file.module_name() != name {
            continue;
        }
        out.push_str(&format!(
            "{crate_dir}: {name} ({})\n  imports:\n",
            file.path
        ));
        for (&(_, to), line) in graph.edges.iter().filter(|((from, _), _)| *from == i) {
            let t = &graph.files[to];
            out.push_str(&format!(
                "    {} ({}) at {}:{line}\n",
                t.module_name(),
                t.path,
                file.path
            ));
        }
        out.push_str("  imported by:\n");
        for (&(from, _), line) in graph.edges.iter().filter(|((_, to), _)| *to == i) {
            let f = &graph.files[from];
            out.push_str(&format!("    {} at {}:{line}\n", f.module_name(), f.path));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// The repository's sources.

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The sources of the crate in `crate_dir` (`shared`, `origin-api`), `src`-relative.
fn sources(crate_dir: &str) -> Vec<(String, String)> {
    let src = repo_root().join(crate_dir).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
        .iter()
        .map(|file| {
            let relative = file.strip_prefix(&src).expect("under src");
            let path = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let code =
                std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            (path, code)
        })
        .collect()
}

/// The graph of a crate of the repository, printing what `HOP_ARCH_SHOW` asks for.
fn crate_graph(crate_dir: &str, lib_name: &str) -> Graph {
    let sources = sources(crate_dir);
    assert!(
        sources.len() > 10,
        "{crate_dir}: only {} sources",
        sources.len()
    );
    let graph = graph(lib_name, &sources);
    if let Ok(name) = std::env::var("HOP_ARCH_SHOW") {
        print!("{}", show(&graph, crate_dir, &name));
    }
    graph
}

#[test]
fn shared_has_no_import_cycle() {
    let graph = crate_graph("shared", "shared");
    let found = cycles(&graph);
    let report: String = found.iter().map(|c| c.report("shared")).collect();
    assert!(found.is_empty(), "import cycles in shared:\n{report}");
}

/// The edge worker too (issue 55): `health` at the bottom, counted into by every
/// other module; `kv` holding the binding's name; the keys and the runtime's randomness
/// in modules of their own, so `clicks` and `fallback` need not import each other.
#[test]
fn edge_worker_has_no_import_cycle() {
    let graph = crate_graph("edge-worker", "edge_worker");
    let found = cycles(&graph);
    let report: String = found.iter().map(|c| c.report("edge-worker")).collect();
    assert!(found.is_empty(), "import cycles in edge-worker:\n{report}");
}

#[test]
fn origin_has_no_import_cycle() {
    let graph = crate_graph("origin-api", "origin_api");
    let found = cycles(&graph);
    let wrong = unlisted_or_gone(&found, ORIGIN_CYCLES_LEFT, "origin-api");
    let all: String = found.iter().map(|c| c.report("origin-api")).collect();
    assert!(
        wrong.is_empty(),
        "{}\nevery cycle found today:\n{all}",
        wrong.concat()
    );
}

/// What is wrong with the cycles `found` against those `listed`: each one found that is
/// not listed, and each one listed that is no longer found.
fn unlisted_or_gone(found: &[Cycle], listed: &[&[&str]], crate_dir: &str) -> Vec<String> {
    let listed: BTreeSet<Vec<String>> = listed
        .iter()
        .map(|c| c.iter().map(|f| f.to_string()).collect())
        .collect();
    let mut wrong = Vec::new();
    for cycle in found {
        if !listed.contains(&cycle.files) {
            wrong.push(format!("a new {}", cycle.report(crate_dir)));
        }
    }
    let existing: BTreeSet<&Vec<String>> = found.iter().map(|c| &c.files).collect();
    for gone in listed.iter().filter(|c| !existing.contains(c)) {
        wrong.push(format!(
            "no longer a cycle: {gone:?}: remove it from ORIGIN_CYCLES_LEFT\n"
        ));
    }
    wrong
}

#[test]
fn no_file_of_shared_is_longer_than_its_limit() {
    let long: Vec<String> = sources("shared")
        .iter()
        .map(|(path, code)| (path, code.lines().count()))
        .filter(|(_, lines)| *lines > MAX_SHARED_LINES)
        .map(|(path, lines)| format!("shared/src/{path}: {lines} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "longer than {MAX_SHARED_LINES} lines (split them):\n{}",
        long.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// The origin's layers (D-204; was origin-api/src/layers.rs).

/// Bottom first. A module may use its own layer and those below.
const LAYERS: &[(&str, &[&str])] = &[
    ("model", &["model", "views", "random_ids"]),
    (
        "foundation",
        &[
            "config",
            "owners",
            "retry",
            "proxies",
            "metrics",
            "same_site",
            "deadline",
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
            "principal",
            "api_keys",
            "outbox",
            "redirects",
            "edge",
            "health",
            "ratelimit",
            "auth",
            "links",
            "imports",
            "bans",
            "domains",
            "clicks",
            "publisher",
            "housekeeping",
            "freshness",
            "accounts",
            "webhooks",
            "leased",
            "abuse",
            "purge",
        ],
    ),
    (
        "interface",
        &[
            "app",
            "routes",
            "dashboard",
            "server",
            "in_flight",
            "cli",
            "lib",
            "main",
        ],
    ),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

/// The top-level module a source file belongs to: `links` for `links/create.rs`, `cache`
/// for `cache/front.rs` and `cache.rs`, `lib` and `main` for the roots.
fn top_module(path: &str) -> &str {
    let first = path.split('/').next().unwrap_or_default();
    first.trim_end_matches(".rs")
}

/// The origin's modules form layers, and dependencies point down: the interface (routes,
/// server, command line) uses the services, the services use the infrastructure (the
/// database, the store, the caches), and everything uses the model. A module that names
/// one above it fails this test, as does a new top-level module no layer lists.
#[test]
fn origin_layers_point_down() {
    let graph = crate_graph("origin-api", "origin_api");
    assert!(
        graph.files.len() > 20,
        "found only {} sources",
        graph.files.len()
    );
    let wrong = layer_violations(&graph);
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
}

/// Every top-level module in no layer, and every import of a module in a layer above its
/// own.
fn layer_violations(graph: &Graph) -> Vec<String> {
    let mut wrong = BTreeSet::new();
    for file in &graph.files {
        let module = top_module(&file.path);
        if layer_of(module).is_none() {
            wrong.insert(format!("{module}: in no layer (add it to LAYERS)"));
        }
    }
    for (&(from, to), line) in &graph.edges {
        let (from, to) = (&graph.files[from], &graph.files[to]);
        let (own, named) = (top_module(&from.path), top_module(&to.path));
        let (Some(own_layer), Some(their_layer)) = (layer_of(own), layer_of(named)) else {
            continue;
        };
        if their_layer > own_layer {
            wrong.insert(format!(
                "{}:{line} ({}) uses {} ({})",
                from.path,
                LAYERS[own_layer].0,
                to.module_name(),
                LAYERS[their_layer].0
            ));
        }
    }
    wrong.into_iter().collect()
}

/// The doors: the modules that only parse, call a service and render.
const DOORS: &[&str] = &["routes", "dashboard", "cli", "server", "in_flight"];
/// The composition root besides: it holds the database handle to build the services, and
/// nothing of the store.
const ROOT: &[&str] = &["app", "lib", "main"];
/// A door that reaches the database on purpose, and why.
const DOORS_AT_THE_DATABASE: &[(&str, &str)] = &[(
    "cli/config_check.rs",
    "`config check` probes whether the database answers and how far it is migrated",
)];

/// No door reaches the store or the database (issue 55): a door that did would hold a
/// policy of its own, beside the service's. The root reaches the database only to build
/// the services, never the store.
#[test]
fn doors_reach_no_store_and_no_database() {
    let graph = crate_graph("origin-api", "origin_api");
    let wrong = door_violations(&graph);
    assert!(
        wrong.is_empty(),
        "a door reaches past the services:\n{}",
        wrong.join("\n")
    );
}

/// No service hands its pool out (issue 55): a database field is private, or `pub(super)`
/// for a service whose files share a directory; never `pub` or `pub(crate)`, which would
/// let any door reach past the service's rules.
#[test]
fn no_service_hands_out_its_pool() {
    let wrong: Vec<String> = sources("origin-api")
        .iter()
        .flat_map(|(path, code)| open_pool_fields(path, code))
        .collect();
    assert!(
        wrong.is_empty(),
        "a database field others can reach:\n{}",
        wrong.join("\n")
    );
}

/// Each line of `code` (the file at `path`) declaring a field holding a `Db` visible
/// beyond its service: `pub`, `pub(crate)`, `pub(in …)`, or `pub(super)` in a file of
/// its own (there `super` is the whole crate), as `path:line`.
fn open_pool_fields(path: &str, code: &str) -> Vec<String> {
    let in_a_directory = path.contains('/');
    code.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let line = line.trim_start();
            let rest = if let Some(rest) = line.strip_prefix("pub(super) ") {
                if in_a_directory {
                    return None;
                }
                rest
            } else if let Some(rest) = line.strip_prefix("pub(in ") {
                rest.split_once(") ")?.1
            } else {
                line.strip_prefix("pub(crate) ")
                    .or_else(|| line.strip_prefix("pub "))?
            };
            let (name, ty) = rest.split_once(':')?;
            if name.contains(['(', ' ']) {
                return None;
            }
            let ty = ty.trim().trim_end_matches(',');
            let holds_db = ["Db", "crate::db::Db", "Arc<Db>", "std::sync::Arc<Db>"].contains(&ty);
            holds_db.then(|| format!("{path}:{}", i + 1))
        })
        .collect()
}

#[test]
fn a_public_pool_field_is_found_and_a_private_one_is_not() {
    let code = "struct A {\n    pub db: Db,\n    pub(super) pool: Db,\n    db2: Db,\n    pub(crate) x: crate::db::Db,\n    pub y: Arc<Db>,\n}\npub fn f(db: Db) {}";
    assert_eq!(
        open_pool_fields("a.rs", code),
        ["a.rs:2", "a.rs:3", "a.rs:5", "a.rs:6"]
    );
    // In a directory, `pub(super)` reaches only the service's own files.
    assert_eq!(
        open_pool_fields("links/service.rs", code),
        [
            "links/service.rs:2",
            "links/service.rs:5",
            "links/service.rs:6"
        ]
    );
}

fn door_violations(graph: &Graph) -> Vec<String> {
    let mut wrong = BTreeSet::new();
    for (&(from, to), line) in &graph.edges {
        let (from, to) = (&graph.files[from], &graph.files[to]);
        let (own, named) = (top_module(&from.path), top_module(&to.path));
        let refused = if DOORS.contains(&own) {
            named == "store" || named == "db"
        } else {
            ROOT.contains(&own) && named == "store"
        };
        if refused && !DOORS_AT_THE_DATABASE.iter().any(|(p, _)| *p == from.path) {
            wrong.insert(format!("{}:{line} uses {}", from.path, to.module_name()));
        }
    }
    wrong.into_iter().collect()
}

// ---------------------------------------------------------------------------------------
// The reader and the graph, on small examples.

fn example(files: &[(&str, &str)]) -> Graph {
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect();
    graph("example", &sources)
}

/// The edges of `graph` as `from -> to` module names.
fn edges(graph: &Graph) -> Vec<String> {
    let mut all: Vec<String> = graph
        .edges
        .keys()
        .map(|&(f, t)| {
            format!(
                "{} -> {}",
                graph.files[f].module_name(),
                graph.files[t].module_name()
            )
        })
        .collect();
    all.sort();
    all
}

#[test]
fn a_cycle_of_two_files_is_found_with_an_edge_of_each() {
    let g = example(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        (
            "b.rs",
            "pub struct B;\n\nfn f() -> crate::a::A { crate::a::A }\n",
        ),
        ("c.rs", "use crate::a::A;\n"),
    ]);
    let found = cycles(&g);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].files, ["a.rs", "b.rs"]);
    assert_eq!(
        found[0].examples,
        ["a.rs:1 imports b (b.rs)", "b.rs:3 imports a (a.rs)"]
    );
    // Without the way back, none.
    let g = example(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::B;\n"),
        ("b.rs", "pub struct B;\n"),
    ]);
    assert!(cycles(&g).is_empty());
}

#[test]
fn use_groups_are_read_to_any_depth() {
    let code = "use crate::{a::{b, c::{self, D as E}}, f, g::*};\npub(crate) use super::h::{\n    I,\n    j::K,\n};\n";
    let found: Vec<(Vec<String>, usize, Kind)> = written_paths(code)
        .into_iter()
        .map(|w| (w.segments, w.line, w.kind))
        .collect();
    let path = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let name = |s: &str| Kind::Use(s.to_owned());
    assert_eq!(
        found,
        [
            (path("crate::a::b"), 1, name("b")),
            (path("crate::a::c"), 1, name("c")),
            (path("crate::a::c::D"), 1, name("E")),
            (path("crate::f"), 1, name("f")),
            (path("crate::g"), 1, Kind::Glob),
            (path("super::h::I"), 3, name("I")),
            (path("super::h::j::K"), 4, name("K")),
        ]
    );
    let g = example(&[
        ("lib.rs", "mod a;\nmod d;\nmod f;\n"),
        ("a/mod.rs", "mod b;\nmod c;\n"),
        ("a/b.rs", ""),
        ("a/c.rs", ""),
        ("d.rs", "use crate::{a::{b, c::X}, f};\n"),
        ("f.rs", ""),
    ]);
    assert_eq!(edges(&g), ["d -> a::b", "d -> a::c", "d -> f"]);
}

#[test]
fn comments_strings_and_characters_hide_no_path_and_make_none() {
    let code = r####"
// crate::a in a comment
/// crate::b in a doc comment
/* crate::c /* nested */ crate::d */
let s = "crate::e \" crate::f";
let r = r#"crate::g " crate::h"#;
let b = b"crate::i";
let q = '"'; let p = '\''; fn f<'a>(x: &'a str) {}
let real = crate::j::K;
"####;
    let found: Vec<Vec<String>> = written_paths(code)
        .into_iter()
        .map(|w| w.segments)
        .collect();
    assert_eq!(found, [vec!["crate", "j", "K"]]);
    assert_eq!(written_paths(code)[0].line, 9);
}

#[test]
fn super_self_and_relative_paths_resolve_to_module_files() {
    let g = example(&[
        ("lib.rs", "pub mod foo;\nmod top;\npub use top::Top;\n"),
        // The parent declares its child (no edge) and uses it (an edge).
        ("foo/mod.rs", "mod bar;\nmod baz;\npub struct Something;\nfn f() { bar::go() }\n"),
        // A child using its parent: an edge.
        ("foo/bar.rs", "use super::Something;\npub fn go() {}\n"),
        // `self::` and a sibling through `super::`, and a test module inline: its
        // `super::*` is the file itself.
        ("foo/baz.rs", "fn g() { self::h(); super::bar::go() }\nfn h() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::Something;\n}\n"),
        // The crate root's re-export is where the name comes from.
        ("top.rs", "pub struct Top;\n"),
        ("other.rs", "fn f(_: crate::Top) {}\n"),
    ]);
    assert_eq!(
        edges(&g),
        [
            "crate -> top",
            "foo -> foo::bar",
            "foo::bar -> foo",
            "foo::baz -> foo",
            "foo::baz -> foo::bar",
            "other -> top",
        ]
    );
    assert!(cycles(&g)[0].files == ["foo/bar.rs", "foo/mod.rs"]);
}

#[test]
fn names_brought_in_and_glob_imports_lead_to_their_modules() {
    let g = example(&[
        ("lib.rs", "mod store;\nmod links;\n"),
        ("store/mod.rs", "pub mod links;\n"),
        ("store/links.rs", ""),
        ("links/mod.rs", "mod create;\nmod fields;\n"),
        // `store` brought in, then a module of it named through it; `fields` is the
        // parent's, glob-imported; `std::` and `serde::` are not the package's.
        ("links/create.rs", "use super::*;\nuse crate::store;\nuse std::fmt;\nfn f() { store::links::find(); fields::check(); serde::x(); fmt::y() }\n"),
        ("links/fields.rs", ""),
    ]);
    assert_eq!(
        edges(&g),
        [
            "links::create -> links",
            "links::create -> links::fields",
            "links::create -> store",
            "links::create -> store::links",
        ]
    );
}

#[test]
fn a_binary_names_the_library_by_its_name() {
    let g = example(&[
        ("lib.rs", "pub mod config;\npub fn serve() {}\n"),
        ("config.rs", ""),
        (
            "main.rs",
            "use example::config::Settings;\nfn main() { example::serve() }\n",
        ),
    ]);
    assert_eq!(edges(&g), ["main -> config", "main -> crate"]);
}

#[test]
fn a_test_module_s_imports_count_and_its_super_is_its_file() {
    let g = example(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "pub struct A;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::b::helper;\n}\n",
        ),
        ("b.rs", "pub fn helper() -> crate::a::A { crate::a::A }\n"),
    ]);
    assert_eq!(edges(&g), ["a -> b", "b -> a"]);
    assert_eq!(cycles(&g)[0].examples[0], "a.rs:5 imports b (b.rs)");
}

#[test]
fn a_cycle_not_listed_fails_and_so_does_one_listed_that_is_gone() {
    let g = example(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::B;\n"),
        ("b.rs", "use crate::a::A;\n"),
    ]);
    let found = cycles(&g);
    assert!(unlisted_or_gone(&found, &[&["a.rs", "b.rs"]], "x").is_empty());
    let new = unlisted_or_gone(&found, &[], "x");
    assert_eq!(new.len(), 1);
    assert!(new[0].starts_with("a new cycle of 2 files"), "{new:?}");
    let gone = unlisted_or_gone(&found, &[&["a.rs", "b.rs"], &["c.rs", "d.rs"]], "x");
    assert_eq!(
        gone,
        ["no longer a cycle: [\"c.rs\", \"d.rs\"]: remove it from ORIGIN_CYCLES_LEFT\n"]
    );
}

#[test]
fn a_door_naming_the_store_or_the_database_fails() {
    let g = example(&[
        (
            "lib.rs",
            "pub mod routes; pub mod store; pub mod db; pub mod app;",
        ),
        (
            "routes/links.rs",
            "use crate::store::links;\nuse crate::db::Db;",
        ),
        ("store/mod.rs", "pub mod links;"),
        ("store/links.rs", ""),
        ("db.rs", ""),
        ("app.rs", "use crate::db::Db;"),
    ]);
    assert_eq!(
        door_violations(&g),
        [
            "routes/links.rs:1 uses store::links",
            "routes/links.rs:2 uses db"
        ]
    );
}

#[test]
fn an_import_up_a_layer_fails_and_so_does_a_module_in_no_layer() {
    let g = example(&[
        (
            "lib.rs",
            "pub mod model;\npub mod routes;\npub mod gadgets;\n",
        ),
        ("model/mod.rs", "mod link;\n"),
        ("model/link.rs", "use crate::routes::Router;\n"),
        ("routes/mod.rs", "use crate::model::link;\n"),
        ("gadgets.rs", ""),
    ]);
    assert_eq!(
        layer_violations(&g),
        [
            "gadgets: in no layer (add it to LAYERS)",
            "model/link.rs:1 (model) uses routes (interface)",
        ]
    );
}
