//! Architecture checks on the source text of `src/`, run by `cargo test`:
//!
//! 1. the file-level dependency graph of non-test code has no cycles;
//! 2. no file depends on a layer above its own ([`LAYERS`]), and the library never depends on
//!    the binary;
//! 3. no file is longer than [`MAX_LINES`] unless [`LONG_FILES`] names it with a reason.
//!
//! There is no `syn` here: a small lexer drops comments, string and character literals, and the
//! items under `#[cfg(test)]` / `#[test]` (test modules, `tests_support` blocks, test-only
//! `mod x;` files), then the module tree is walked from `src/lib.rs` (and `src/main.rs`,
//! `src/bin/*`) through `mod x;` (`x.rs` or `x/mod.rs`) and inline `mod x { … }`.
//!
//! File A depends on file B when A names, through a path that starts with `crate`, `super`,
//! `self`, the library's name (in the binary), a module `use`d or declared in scope, or an item
//! `use`d in scope, an item that B defines. `use` statements (grouped, nested, renamed, glob)
//! and paths in code (`crate::store::Book::open`) both count. A path is followed to the file
//! that *defines* the item: through `pub use` re-exports (and private imports a child can see
//! through `super::`), and through module aliases (`use crate::store::book;` then
//! `book::X` depends on the file defining `X`; on `book`'s own file when `X` cannot be
//! found). A glob (`use super::*`) counts the names the code uses (not `.method`s) that the
//! glob provides. A module's `mod x;` declarations and its `pub use` re-exports of its own
//! descendants are declarations, not dependencies; the code of a `mod.rs` that uses its
//! children does depend on them, so a child using an item the `mod.rs` defines while the
//! `mod.rs` calls into that child is a cycle (move the shared item into a file of its own).
//!
//! `BOOKDB_ARCH_EDGES=1 cargo test --test architecture -- --nocapture` prints every edge with
//! the reference that made it; `BOOKDB_ARCH_SRC=DIR` checks another `src/` directory.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;

/// Longest file allowed in `src/` (lines), unless listed in [`LONG_FILES`].
const MAX_LINES: usize = 800;

/// Files allowed to exceed [`MAX_LINES`]: (path under `src/`, why it cannot be split yet).
/// An entry whose file is gone or no longer too long fails the check: remove it.
const LONG_FILES: &[(&str, &str)] = &[];

/// Layers, bottom up: (name, paths under `src/` — `dir/` for a tree, else one file — and
/// whether the paths of this layer must stay independent of each other). A file may depend on
/// files of its own layer and of the layers below it, never above; a dependency that passes
/// through files in no layer (`lib.rs`, `error.rs`) still counts. Adding a layer or a sibling
/// (a new game codec beside `chess/`) is one line here.
const LAYERS: &[(&str, &[&str], bool)] = &[
    ("store", &["store/"], false), // game-independent storage: keys, bytes, move records
    ("codecs", &["chess/", "othello/"], true), // games, plugged into store::PositionCodec
    ("ops", &["ops/"], false),     // import, probe, verify, interop, rewrites
    ("binary", &["main.rs", "cli/", "bin/", "server/"], false), // CLI and server
];

// ------------------------------------------------------------------------------------------
// The checks on the real tree

/// `src/` of this crate, or `$BOOKDB_ARCH_SRC` (to check another checkout's tree).
fn src_dir() -> std::path::PathBuf {
    match std::env::var_os("BOOKDB_ARCH_SRC") {
        Some(dir) => dir.into(),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
    }
}

fn read_tree(dir: &Path, rel: &str, out: &mut BTreeMap<String, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let r = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if p.is_dir() {
            read_tree(&p, &r, out);
        } else if name.ends_with(".rs") {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {r}: {e}"));
            out.insert(r, text);
        }
    }
}

/// The library's crate name: `[lib] name`, else the package name with `-` as `_`.
fn lib_name() -> String {
    let toml = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .expect("Cargo.toml");
    let mut section = String::new();
    let mut package = None;
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
        } else if let Some(v) = line.strip_prefix("name").map(str::trim_start)
            && let Some(v) = v.strip_prefix('=')
        {
            let v = v.trim().trim_matches('"').replace('-', "_");
            match section.as_str() {
                "[lib]" => return v,
                "[package]" => package = Some(v),
                _ => {}
            }
        }
    }
    package.expect("package name in Cargo.toml")
}

struct Real {
    files: BTreeMap<String, String>,
    graph: Graph,
}

fn real() -> &'static Real {
    static R: OnceLock<Real> = OnceLock::new();
    R.get_or_init(|| {
        let mut files = BTreeMap::new();
        read_tree(&src_dir(), "", &mut files);
        let graph = Graph::build(&files, &lib_name());
        // Straight to stderr, past the test harness's capture: a passing run shows its work.
        let _ = writeln!(std::io::stderr(), "{}", graph.summary());
        if std::env::var_os("BOOKDB_ARCH_EDGES").is_some() {
            for ((a, b), why) in &graph.edges {
                println!("  {a} -> {b}   ({why})");
            }
        }
        Real { files, graph }
    })
}

#[test]
fn no_module_cycles() {
    let g = &real().graph;
    let cycles = g.cycles();
    assert!(
        cycles.is_empty(),
        "{}\nsrc/ has {} module cycle(s) (file-level, non-test code):\n{}",
        g.summary(),
        cycles.len(),
        cycles.join("\n")
    );
}

#[test]
fn layers_are_respected() {
    let g = &real().graph;
    let bad = g.layer_violations(LAYERS);
    assert!(
        bad.is_empty(),
        "{}\n{} layer violation(s) (layers bottom-up: {}):\n{}",
        g.summary(),
        bad.len(),
        LAYERS.iter().map(|l| l.0).collect::<Vec<_>>().join(" <- "),
        bad.join("\n")
    );
}

#[test]
fn files_are_short() {
    let files = &real().files;
    println!("{} files in src/ checked for length", files.len());
    let bad = long_files(files, MAX_LINES, LONG_FILES);
    assert!(
        bad.is_empty(),
        "{} file(s) over {MAX_LINES} lines:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Lines of every file over `max` that `allow` does not list, and stale `allow` entries.
fn long_files(files: &BTreeMap<String, String>, max: usize, allow: &[(&str, &str)]) -> Vec<String> {
    let mut bad = Vec::new();
    for (path, text) in files {
        let n = text.lines().count();
        if n > max && !allow.iter().any(|(p, _)| p == path) {
            bad.push(format!(
                "  src/{path}: {n} lines (limit {max}): split it, or add it to LONG_FILES with a reason"
            ));
        }
    }
    for (path, why) in allow {
        match files.get(*path) {
            None => bad.push(format!("  LONG_FILES lists src/{path} ({why}), which does not exist")),
            Some(t) if t.lines().count() <= max => bad.push(format!(
                "  LONG_FILES lists src/{path} ({why}), which is no longer over {max} lines: remove it"
            )),
            Some(_) => {}
        }
    }
    bad
}

// ------------------------------------------------------------------------------------------
// Lexer

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Punct(char),
    /// A string, character or number literal (its content is dropped).
    Lit,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Skips a quoted string whose opening `"` is at `c[i - 1]`; returns the index after it.
fn skip_string(c: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < c.len() && c[i] != '"' {
        if c[i] == '\\' {
            i += 1;
        }
        if i < c.len() && c[i] == '\n' {
            *line += 1;
        }
        i += 1;
    }
    i + 1
}

/// A literal with a prefix starting at `c[i]` (`r"…"`, `r#"…"#`, `b"…"`, `br#"…"#`, `c"…"`,
/// `b'x'`): the index after it.
fn prefixed_literal(c: &[char], i: usize, line: &mut usize) -> Option<usize> {
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    let mut j = i;
    if at(j) == 'b' || at(j) == 'c' {
        j += 1;
    }
    if at(j) == 'r' {
        j += 1;
        let mut hashes = 0;
        while at(j) == '#' {
            hashes += 1;
            j += 1;
        }
        if at(j) != '"' {
            return None;
        }
        j += 1;
        loop {
            if j >= c.len() {
                return Some(j);
            }
            if c[j] == '\n' {
                *line += 1;
            }
            if c[j] == '"' && (1..=hashes).all(|h| at(j + h) == '#') {
                return Some(j + 1 + hashes);
            }
            j += 1;
        }
    }
    if j > i && at(j) == '"' {
        return Some(skip_string(c, j + 1, line));
    }
    if at(i) == 'b' && at(i + 1) == '\'' {
        return Some(skip_char(c, i + 1));
    }
    None
}

/// Skips a character literal whose `'` is at `c[i]`; returns the index after it.
fn skip_char(c: &[char], i: usize) -> usize {
    let mut j = i + 1;
    if c.get(j) == Some(&'\\') {
        j += 2;
    } else {
        j += 1;
    }
    while j < c.len() && c[j] != '\'' && c[j] != '\n' {
        j += 1;
    }
    j + 1
}

/// Tokens of Rust source without comments (doc comments included) and literal contents.
fn lex(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let n = c.len();
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < n {
        let ch = c[i];
        let start_line = line;
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < n && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < n {
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
        } else if is_ident_start(ch) {
            if let Some(end) = prefixed_literal(&c, i, &mut line) {
                out.push(Token {
                    tok: Tok::Lit,
                    line: start_line,
                });
                i = end;
                continue;
            }
            if ch == 'r' && at(i + 1) == '#' && is_ident_start(at(i + 2)) {
                i += 2; // raw identifier
            }
            let s = i;
            while i < n && is_ident_continue(c[i]) {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(c[s..i].iter().collect()),
                line,
            });
        } else if ch.is_ascii_digit() {
            while i < n && is_ident_continue(c[i]) {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Lit,
                line,
            });
        } else if ch == '"' {
            i = skip_string(&c, i + 1, &mut line);
            out.push(Token {
                tok: Tok::Lit,
                line: start_line,
            });
        } else if ch == '\'' && (at(i + 1) == '\\' || at(i + 2) == '\'') {
            i = skip_char(&c, i);
            out.push(Token {
                tok: Tok::Lit,
                line,
            });
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Token {
                tok: Tok::Sep,
                line,
            });
            i += 2;
        } else {
            // Punctuation, and the `'` of a lifetime or label.
            out.push(Token {
                tok: Tok::Punct(ch),
                line,
            });
            i += 1;
        }
    }
    out
}

fn punct(t: Option<&Token>, p: char) -> bool {
    matches!(t, Some(Token { tok: Tok::Punct(q), .. }) if *q == p)
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t {
        Some(Token {
            tok: Tok::Ident(s), ..
        }) => Some(s),
        _ => None,
    }
}

/// Index of the bracket closing the one at `open` (any of `( [ {`), or `toks.len()`.
fn matching(toks: &[Token], open: usize) -> usize {
    let mut depth = 0i32;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// Whether an attribute's tokens (between `#[` and `]`) make its item test-only: `test`,
/// `cfg(test)`, `cfg(all(…, test, …))`.
fn is_test_attr(a: &[Token]) -> bool {
    let words: Vec<Option<&str>> = a.iter().map(|t| ident(Some(t))).collect();
    match words.as_slice() {
        [Some("test")] => true,
        [Some("cfg"), ..] if a.len() >= 4 => {
            let inner = &a[2..a.len() - 1];
            match inner.first().and_then(|t| ident(Some(t))) {
                Some("test") => inner.len() == 1,
                Some("all") => {
                    let mut depth = 0;
                    inner.iter().any(|t| {
                        match t.tok {
                            Tok::Punct('(') => depth += 1,
                            Tok::Punct(')') => depth -= 1,
                            _ => {}
                        }
                        depth == 1 && ident(Some(t)) == Some("test")
                    })
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// End of the item (or statement, field, arm) starting at `j`: after its `;` or `,`, after the
/// `}` that closes its body, or at the bracket that closes the enclosing one.
fn skip_item(toks: &[Token], j: usize) -> usize {
    let mut depth = 0;
    for (k, t) in toks.iter().enumerate().skip(j) {
        match t.tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(c @ (')' | ']' | '}')) => {
                if depth == 0 {
                    return k;
                }
                depth -= 1;
                if depth == 0 && c == '}' {
                    return k + 1;
                }
            }
            Tok::Punct(';' | ',') if depth == 0 => return k + 1,
            _ => {}
        }
    }
    toks.len()
}

/// The tokens without test-only items; `true` if the file itself is test-only (`#![cfg(test)]`).
fn drop_test_items(toks: Vec<Token>) -> (Vec<Token>, bool) {
    let mut out = Vec::with_capacity(toks.len());
    let mut test_only = false;
    let mut i = 0;
    while i < toks.len() {
        if punct(toks.get(i), '#') {
            let inner = punct(toks.get(i + 1), '!');
            let open = i + 1 + usize::from(inner);
            if punct(toks.get(open), '[') {
                let close = matching(&toks, open);
                if is_test_attr(&toks[open + 1..close.min(toks.len())]) {
                    if inner {
                        test_only = true;
                        i = close + 1;
                        continue;
                    }
                    let mut j = close + 1;
                    while punct(toks.get(j), '#') && punct(toks.get(j + 1), '[') {
                        j = matching(&toks, j + 1) + 1;
                    }
                    i = skip_item(&toks, j);
                    continue;
                }
            }
        }
        out.push(toks[i].clone());
        i += 1;
    }
    (out, test_only)
}

// ------------------------------------------------------------------------------------------
// Items of one module

/// One `use` leaf: the path as written, the name it binds (`None` for a glob).
#[derive(Clone, Debug)]
struct Import {
    segs: Vec<String>,
    alias: Option<String>,
    public: bool,
    line: usize,
}

#[derive(Clone, Debug)]
struct PathRef {
    segs: Vec<String>,
    line: usize,
}

#[derive(Default)]
struct Scanned {
    defs: BTreeSet<String>,
    imports: Vec<Import>,
    paths: Vec<PathRef>,
    idents: BTreeSet<String>,
    mod_decls: Vec<String>,
    /// Inline modules: name, body token range.
    inline: Vec<(String, usize, usize)>,
}

const DEF_KEYWORDS: &[&str] = &[
    "fn",
    "struct",
    "enum",
    "trait",
    "type",
    "union",
    "static",
    "const",
    "macro_rules",
];

/// Keywords after which an identifier is being declared, not used.
const BINDERS: &[&str] = &[
    "fn", "let", "ref", "struct", "enum", "trait", "type", "union", "mod", "const", "static",
];

const KEYWORDS: &[&str] = &[
    "fn", "mut", "unsafe", "async", "extern", "const", "pub", "crate", "self", "super", "Self",
    "impl", "dyn", "for", "where", "static", "type", "_",
];

fn parse_use_tree(
    toks: &[Token],
    j: &mut usize,
    mut segs: Vec<String>,
    public: bool,
    out: &mut Vec<Import>,
) {
    loop {
        let t = toks.get(*j);
        match t.map(|t| &t.tok) {
            Some(Tok::Sep) => {
                if segs.is_empty() {
                    segs.push("::".into()); // `::name`: an external crate
                }
                *j += 1;
            }
            Some(Tok::Punct('{')) => {
                *j += 1;
                loop {
                    if punct(toks.get(*j), '}') {
                        *j += 1;
                        return;
                    }
                    let before = *j;
                    parse_use_tree(toks, j, segs.clone(), public, out);
                    if punct(toks.get(*j), ',') {
                        *j += 1;
                    } else if !punct(toks.get(*j), '}') || *j == before {
                        return; // malformed
                    }
                }
            }
            Some(Tok::Punct('*')) => {
                out.push(Import {
                    segs,
                    alias: None,
                    public,
                    line: t.unwrap().line,
                });
                *j += 1;
                return;
            }
            Some(Tok::Ident(w)) => {
                let line = t.unwrap().line;
                segs.push(w.clone());
                *j += 1;
                if matches!(toks.get(*j).map(|t| &t.tok), Some(Tok::Sep)) {
                    *j += 1;
                    continue;
                }
                let mut alias = None;
                if ident(toks.get(*j)) == Some("as") {
                    alias = ident(toks.get(*j + 1)).map(str::to_string);
                    *j += 2;
                }
                if segs.last().map(String::as_str) == Some("self") {
                    segs.pop();
                }
                let Some(last) = segs.last().cloned() else {
                    return;
                };
                out.push(Import {
                    segs,
                    alias: Some(alias.unwrap_or(last)),
                    public,
                    line,
                });
                return;
            }
            _ => return,
        }
    }
}

/// Whether the `use` at `i` is preceded by a visibility (`pub`, `pub(crate)`, …).
fn is_public(toks: &[Token], lo: usize, i: usize) -> bool {
    if i > lo && ident(toks.get(i - 1)) == Some("pub") {
        return true;
    }
    if i > lo && punct(toks.get(i - 1), ')') {
        let mut k = i - 1;
        while k > lo && !punct(toks.get(k), '(') {
            k -= 1;
        }
        return k > lo && ident(toks.get(k - 1)) == Some("pub");
    }
    false
}

fn scan(toks: &[Token], lo: usize, hi: usize) -> Scanned {
    let mut s = Scanned::default();
    let mut depth = 0i32;
    let mut i = lo;
    while i < hi {
        let t = &toks[i];
        match &t.tok {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => depth -= 1,
            Tok::Ident(w) => {
                let next = toks.get(i + 1).map(|t| &t.tok);
                let prev_sep = i > lo && toks[i - 1].tok == Tok::Sep;
                // Names a glob import could supply: not a method or field (`.name`), not a
                // field or binding being declared (`name: T`, `let name`, `fn name`).
                let prev = (i > lo).then(|| &toks[i - 1].tok);
                let declared = matches!(prev, Some(Tok::Ident(p)) if BINDERS.contains(&p.as_str()));
                if !prev_sep
                    && prev != Some(&Tok::Punct('.'))
                    && next != Some(&Tok::Punct(':'))
                    && !declared
                {
                    s.idents.insert(w.clone());
                }
                if w == "use"
                    && !prev_sep
                    && matches!(
                        next,
                        Some(Tok::Ident(_) | Tok::Sep | Tok::Punct('{') | Tok::Punct('*'))
                    )
                {
                    let public = depth == 0 && is_public(toks, lo, i);
                    let mut j = i + 1;
                    parse_use_tree(toks, &mut j, Vec::new(), public, &mut s.imports);
                    while j < hi && !punct(toks.get(j), ';') {
                        j += 1;
                    }
                    i = j + 1;
                    continue;
                }
                if depth == 0
                    && w == "mod"
                    && let Some(name) = ident(toks.get(i + 1))
                {
                    if punct(toks.get(i + 2), ';') {
                        s.mod_decls.push(name.to_string());
                        i += 3;
                        continue;
                    }
                    if punct(toks.get(i + 2), '{') {
                        let close = matching(toks, i + 2).min(hi);
                        s.inline.push((name.to_string(), i + 3, close));
                        i = close + 1;
                        continue;
                    }
                }
                if depth == 0 && DEF_KEYWORDS.contains(&w.as_str()) {
                    let mut k = i + 1;
                    if w == "macro_rules" && punct(toks.get(k), '!') {
                        k += 1;
                    }
                    if w == "static" && ident(toks.get(k)) == Some("mut") {
                        k += 1;
                    }
                    if let Some(name) = ident(toks.get(k))
                        && !KEYWORDS.contains(&name)
                    {
                        s.defs.insert(name.to_string());
                    }
                }
                // A path: `a::b::c` not itself preceded by `::`.
                if !prev_sep && next == Some(&Tok::Sep) {
                    let mut segs = vec![w.clone()];
                    let mut j = i + 1;
                    while toks.get(j).map(|t| &t.tok) == Some(&Tok::Sep)
                        && let Some(n) = ident(toks.get(j + 1))
                    {
                        segs.push(n.to_string());
                        j += 2;
                    }
                    if segs.len() >= 2 {
                        s.paths.push(PathRef { segs, line: t.line });
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    s
}

// ------------------------------------------------------------------------------------------
// Module tree, resolution, graph

struct Module {
    parent: Option<usize>,
    /// The crate root module.
    root: usize,
    file: String,
    children: BTreeMap<String, usize>,
    defs: BTreeSet<String>,
    imports: Vec<Import>,
    paths: Vec<PathRef>,
    idents: BTreeSet<String>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Res {
    Module(usize),
    /// Defined in this module.
    Item(usize),
    /// Not found in this module (after a module prefix that was found).
    Unresolved(usize),
    /// Not a path into this crate (std, other crates, generic parameters, …).
    External,
}

struct Graph {
    modules: Vec<Module>,
    lib_root: Option<usize>,
    lib_name: String,
    /// Files of non-test modules, with their crate root file.
    files: BTreeMap<String, String>,
    /// `.rs` files under `src/` outside every module tree (test-only files, strays).
    unreached: Vec<String>,
    /// (from, to) → the first reference that made the edge.
    edges: BTreeMap<(String, String), String>,
    warnings: Vec<String>,
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn dir_of(file: &str) -> String {
    file.rsplit_once('/')
        .map(|(d, _)| d.to_string())
        .unwrap_or_default()
}

impl Graph {
    fn build(sources: &BTreeMap<String, String>, lib_name: &str) -> Graph {
        let mut g = Graph {
            modules: Vec::new(),
            lib_root: None,
            lib_name: lib_name.to_string(),
            files: BTreeMap::new(),
            unreached: Vec::new(),
            edges: BTreeMap::new(),
            warnings: Vec::new(),
        };
        let mut roots: Vec<String> = Vec::new();
        for f in sources.keys() {
            let is_bin = f == "main.rs"
                || (f.starts_with("bin/")
                    && (f.matches('/').count() == 1 || f.ends_with("/main.rs")));
            if f == "lib.rs" {
                roots.insert(0, f.clone());
            } else if is_bin {
                roots.push(f.clone());
            }
        }
        for r in &roots {
            let m = g.add_file(sources, r, None, &dir_of(r), r);
            if r == "lib.rs" {
                g.lib_root = m;
            }
        }
        g.unreached = sources
            .keys()
            .filter(|f| !g.files.contains_key(*f))
            .cloned()
            .collect();
        g.link();
        g
    }

    /// Adds the module of `file` (children in `child_dir`); `None` if it is test-only.
    fn add_file(
        &mut self,
        sources: &BTreeMap<String, String>,
        file: &str,
        parent: Option<usize>,
        child_dir: &str,
        krate: &str,
    ) -> Option<usize> {
        if self.files.contains_key(file) {
            self.warnings
                .push(format!("{file} is reached twice in the module trees"));
            return None;
        }
        let (toks, test_only) = drop_test_items(lex(&sources[file]));
        if test_only {
            return None;
        }
        self.files.insert(file.to_string(), krate.to_string());
        Some(self.add_module(
            sources,
            &toks,
            (0, toks.len()),
            parent,
            file,
            child_dir,
            krate,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn add_module(
        &mut self,
        sources: &BTreeMap<String, String>,
        toks: &[Token],
        (lo, hi): (usize, usize),
        parent: Option<usize>,
        file: &str,
        child_dir: &str,
        krate: &str,
    ) -> usize {
        let s = scan(toks, lo, hi);
        let idx = self.modules.len();
        let root = parent.map_or(idx, |p| self.modules[p].root);
        self.modules.push(Module {
            parent,
            root,
            file: file.to_string(),
            children: BTreeMap::new(),
            defs: s.defs,
            imports: s.imports,
            paths: s.paths,
            idents: s.idents,
        });
        for (name, a, b) in s.inline {
            let c = self.add_module(
                sources,
                toks,
                (a, b),
                Some(idx),
                file,
                &join(child_dir, &name),
                krate,
            );
            self.modules[idx].children.insert(name, c);
        }
        for name in s.mod_decls {
            let flat = join(child_dir, &format!("{name}.rs"));
            let nested = join(child_dir, &format!("{name}/mod.rs"));
            let (f, dir) = if sources.contains_key(&flat) {
                (flat, join(child_dir, &name))
            } else if sources.contains_key(&nested) {
                (nested, join(child_dir, &name))
            } else {
                self.warnings
                    .push(format!("{file}: `mod {name};` but no {flat} or {nested}"));
                continue;
            };
            if let Some(c) = self.add_file(sources, &f, Some(idx), &dir, krate) {
                self.modules[idx].children.insert(name, c);
            }
        }
        idx
    }

    /// Resolves a path written in module `m`.
    fn resolve(&self, m: usize, segs: &[String]) -> Res {
        self.resolve_from(m, m, segs, 0, &mut BTreeSet::new())
    }

    /// Whether `imp`, a `use` of module `owner`, is visible from `viewer`: public, or seen
    /// from inside `owner`'s subtree.
    fn visible(&self, imp: &Import, owner: usize, viewer: usize) -> bool {
        imp.public || viewer == owner || self.is_descendant(viewer, owner)
    }

    /// Resolves `segs` relative to module `m`, as seen from module `viewer`; `seen` holds the
    /// (module, name) pairs already searched through glob imports (globs may form cycles).
    fn resolve_from(
        &self,
        viewer: usize,
        m: usize,
        segs: &[String],
        depth: u32,
        seen: &mut BTreeSet<(usize, String)>,
    ) -> Res {
        if depth > 24 {
            return Res::Unresolved(m);
        }
        let mut cur = m;
        for (k, s) in segs.iter().enumerate() {
            let leading = segs[..k].iter().all(|x| x == "super");
            match s.as_str() {
                "::" => return Res::External,
                "crate" if k == 0 => {
                    cur = self.modules[cur].root;
                    continue;
                }
                "self" if k == 0 => continue,
                "super" if leading => match self.modules[cur].parent {
                    Some(p) => {
                        cur = p;
                        continue;
                    }
                    None => return Res::Unresolved(cur),
                },
                _ => {}
            }
            if k == 0
                && *s == self.lib_name
                && let Some(lib) = self.lib_root
                && self.modules[cur].root != lib
            {
                cur = lib;
                continue;
            }
            let md = &self.modules[cur];
            if let Some(&c) = md.children.get(s) {
                cur = c;
                continue;
            }
            if md.defs.contains(s) {
                return Res::Item(cur);
            }
            if let Some(imp) = md
                .imports
                .iter()
                .find(|i| i.alias.as_ref() == Some(s) && self.visible(i, cur, viewer))
            {
                let mut p = imp.segs.clone();
                p.extend_from_slice(&segs[k + 1..]);
                return self.resolve_from(cur, cur, &p, depth + 1, seen);
            }
            if seen.insert((cur, s.clone())) {
                for imp in md.imports.iter() {
                    if imp.alias.is_some() || !self.visible(imp, cur, viewer) {
                        continue;
                    }
                    if let Res::Module(t) = self.resolve_from(cur, cur, &imp.segs, depth + 1, seen)
                    {
                        let r = self.resolve_from(cur, t, &segs[k..], depth + 1, seen);
                        if matches!(r, Res::Item(_) | Res::Module(_)) {
                            return r;
                        }
                    }
                }
            }
            return if k == 0 {
                Res::External
            } else {
                Res::Unresolved(cur)
            };
        }
        Res::Module(cur)
    }

    fn is_descendant(&self, mut m: usize, of: usize) -> bool {
        while let Some(p) = self.modules[m].parent {
            if p == of {
                return true;
            }
            m = p;
        }
        false
    }

    /// Whether a path written in `m` names something inside `m`'s own subtree by its module
    /// path alone (`child::X`, `self::child::X`, `crate::…::child::X`).
    fn names_own_subtree(&self, m: usize, segs: &[String]) -> bool {
        let mut cur = m;
        for (k, s) in segs.iter().enumerate() {
            match (k, s.as_str()) {
                (0, "crate") => cur = self.modules[m].root,
                (0, "self") => {}
                (_, "super") if segs[..k].iter().all(|x| x == "super") => {
                    match self.modules[cur].parent {
                        Some(p) => cur = p,
                        None => return false,
                    }
                }
                _ => match self.modules[cur].children.get(s) {
                    Some(&c) => cur = c,
                    None => break,
                },
            }
        }
        self.is_descendant(cur, m)
    }

    fn add_edge(&mut self, from: usize, to: usize, line: usize, what: &str) {
        let (a, b) = (
            self.modules[from].file.clone(),
            self.modules[to].file.clone(),
        );
        if a != b {
            self.edges
                .entry((a.clone(), b))
                .or_insert_with(|| format!("{a}:{line} `{what}`"));
        }
    }

    fn edge_for(&mut self, m: usize, r: Res, line: usize, what: &str) {
        match r {
            Res::Item(t) | Res::Module(t) => self.add_edge(m, t, line, what),
            Res::Unresolved(t) => {
                let file = &self.modules[m].file;
                self.warnings.push(format!(
                    "{file}:{line}: `{what}` not found in {}; counted as a dependency on it",
                    self.modules[t].file
                ));
                self.add_edge(m, t, line, what);
            }
            Res::External => {}
        }
    }

    fn link(&mut self) {
        for m in 0..self.modules.len() {
            let imports = self.modules[m].imports.clone();
            let paths = self.modules[m].paths.clone();
            for imp in &imports {
                if imp.public && self.names_own_subtree(m, &imp.segs) {
                    continue; // a module re-exporting its own descendants: a declaration
                }
                let text = format!(
                    "use {}{}",
                    imp.segs.join("::"),
                    if imp.alias.is_none() { "::*" } else { "" }
                );
                let r = self.resolve(m, &imp.segs);
                match (&imp.alias, r) {
                    (None, Res::Module(t)) => {
                        // A glob: the names this module's code mentions that `t` provides
                        // (a module only where a path starts with it: `name::…`), unless
                        // this module defines or imports them itself.
                        let own = &self.modules[m];
                        let names: Vec<String> = own
                            .idents
                            .iter()
                            .filter(|n| {
                                !own.defs.contains(*n)
                                    && !own.children.contains_key(*n)
                                    && !own
                                        .imports
                                        .iter()
                                        .any(|i| i.alias.as_deref() == Some(n.as_str()))
                                    && !["crate", "self", "super", "Self"].contains(&n.as_str())
                            })
                            .cloned()
                            .collect();
                        let mut any = false;
                        for n in names {
                            let r = self.resolve_from(
                                m,
                                t,
                                std::slice::from_ref(&n),
                                0,
                                &mut BTreeSet::new(),
                            );
                            let counts = match r {
                                Res::Item(_) => true,
                                Res::Module(_) => paths.iter().any(|p| p.segs[0] == n),
                                _ => false,
                            };
                            if counts {
                                any = true;
                                self.edge_for(m, r, imp.line, &format!("{text} ({n})"));
                            }
                        }
                        if !any {
                            self.add_edge(m, t, imp.line, &text);
                        }
                    }
                    (Some(alias), Res::Module(t)) => {
                        // A module alias: its uses are the paths through it; if none, the module.
                        let used = paths.iter().any(|p| p.segs[0] == *alias)
                            || imports
                                .iter()
                                .any(|i| i.segs.len() > 1 && i.segs[0] == *alias);
                        if !used {
                            self.add_edge(m, t, imp.line, &text);
                        }
                    }
                    (_, r) => self.edge_for(m, r, imp.line, &text),
                }
            }
            for p in &paths {
                let r = self.resolve(m, &p.segs);
                self.edge_for(m, r, p.line, &p.segs.join("::"));
            }
        }
    }

    fn summary(&self) -> String {
        let mut s = format!(
            "architecture: {} files in the module trees, {} dependency edges (non-test code)\n  files: {}",
            self.files.len(),
            self.edges.len(),
            self.files.keys().cloned().collect::<Vec<_>>().join(", ")
        );
        if !self.unreached.is_empty() {
            s += &format!(
                "\n  not in a non-test module tree (no dependencies checked): {}",
                self.unreached.join(", ")
            );
        }
        for w in &self.warnings {
            s += &format!("\n  note: {w}");
        }
        s
    }

    fn successors(&self) -> BTreeMap<&str, Vec<&str>> {
        let mut succ: BTreeMap<&str, Vec<&str>> = self
            .files
            .keys()
            .map(|f| (f.as_str(), Vec::new()))
            .collect();
        for (a, b) in self.edges.keys() {
            succ.entry(a.as_str()).or_default().push(b.as_str());
        }
        succ
    }

    /// Strongly connected components with more than one file (Tarjan).
    fn cyclic_components(&self) -> Vec<Vec<String>> {
        struct T<'a> {
            succ: BTreeMap<&'a str, Vec<&'a str>>,
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on_stack: BTreeSet<&'a str>,
            out: Vec<Vec<String>>,
        }
        fn visit<'a>(t: &mut T<'a>, v: &'a str) {
            let i = t.index.len();
            t.index.insert(v, i);
            t.low.insert(v, i);
            t.stack.push(v);
            t.on_stack.insert(v);
            for w in t.succ.get(v).cloned().unwrap_or_default() {
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let lw = t.low[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if t.on_stack.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if t.low[v] == t.index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = t.stack.pop().unwrap();
                    t.on_stack.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    t.out.push(comp);
                }
            }
        }
        let succ = self.successors();
        let nodes: Vec<&str> = succ.keys().copied().collect();
        let mut t = T {
            succ,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            out: Vec::new(),
        };
        for v in nodes {
            if !t.index.contains_key(v) {
                visit(&mut t, v);
            }
        }
        t.out.sort();
        t.out
    }

    /// Shortest path from `from` to `to` over edges inside `within`.
    fn path(&self, from: &str, to: &str, within: &BTreeSet<&str>) -> Option<Vec<String>> {
        let succ = self.successors();
        let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([from]);
        let mut seen = BTreeSet::from([from]);
        while let Some(v) = queue.pop_front() {
            for &w in succ.get(v).map(Vec::as_slice).unwrap_or(&[]) {
                if !within.contains(w) {
                    continue;
                }
                if w == to {
                    let mut p = vec![w.to_string(), v.to_string()];
                    let mut x = v;
                    while x != from {
                        x = prev[x];
                        p.push(x.to_string());
                    }
                    p.reverse();
                    return Some(p);
                }
                if seen.insert(w) {
                    prev.insert(w, v);
                    queue.push_back(w);
                }
            }
        }
        None
    }

    /// One entry per cyclic component: its files, its shortest cycles, and the references
    /// behind its edges.
    fn cycles(&self) -> Vec<String> {
        let mut out = Vec::new();
        for comp in self.cyclic_components() {
            let within: BTreeSet<&str> = comp.iter().map(String::as_str).collect();
            let mut cycles: BTreeSet<Vec<String>> = BTreeSet::new();
            for v in &comp {
                if let Some(mut c) = self.path(v, v, &within) {
                    c.pop();
                    let start = (0..c.len()).min_by_key(|&i| &c[i]).unwrap();
                    c.rotate_left(start);
                    cycles.insert(c);
                }
            }
            let mut s = format!("- {} files: {}", comp.len(), comp.join(", "));
            for c in &cycles {
                s += &format!("\n    cycle: {} → {}", c.join(" → "), c[0]);
            }
            s += "\n    edges inside:";
            for ((a, b), why) in &self.edges {
                if within.contains(a.as_str()) && within.contains(b.as_str()) {
                    s += &format!("\n      {a} → {b}   ({why})");
                }
            }
            out.push(s);
        }
        out
    }

    fn layer_violations(&self, layers: &[(&str, &[&str], bool)]) -> Vec<String> {
        let layer_of = |f: &str| -> Option<(usize, usize)> {
            layers.iter().enumerate().find_map(|(li, (_, paths, _))| {
                paths
                    .iter()
                    .position(|p| {
                        if p.ends_with('/') {
                            f.starts_with(p)
                        } else {
                            f == *p
                        }
                    })
                    .map(|g| (li, g))
            })
        };
        let lib_file = |f: &str| self.files.get(f).is_some_and(|k| k == "lib.rs");
        let succ = self.successors();
        let mut found: BTreeMap<(String, String), String> = BTreeMap::new();
        for a in self.files.keys() {
            let la = layer_of(a);
            if la.is_none() && !lib_file(a) {
                continue;
            }
            // Breadth-first through files in no layer.
            let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
            let mut queue = VecDeque::from([a.as_str()]);
            let mut seen = BTreeSet::from([a.as_str()]);
            while let Some(v) = queue.pop_front() {
                for &b in succ.get(v).map(Vec::as_slice).unwrap_or(&[]) {
                    if !seen.insert(b) {
                        continue;
                    }
                    prev.insert(b, v);
                    let lb = layer_of(b);
                    let why = match (la, lb) {
                        _ if lib_file(a) && !lib_file(b) => {
                            Some("the library depends on the binary".to_string())
                        }
                        (Some((x, _)), Some((y, _))) if x < y => Some(format!(
                            "layer \"{}\" depends on layer \"{}\" above it",
                            layers[x].0, layers[y].0
                        )),
                        (Some((x, g)), Some((y, h))) if x == y && g != h && layers[x].2 => {
                            Some(format!(
                                "{} and {} are independent siblings in layer \"{}\"",
                                layers[x].1[g], layers[x].1[h], layers[x].0
                            ))
                        }
                        _ => None,
                    };
                    if let Some(why) = why {
                        let mut chain = vec![b];
                        let mut x = b;
                        while x != a.as_str() {
                            x = prev[x];
                            chain.push(x);
                        }
                        chain.reverse();
                        let refs: Vec<&str> = chain
                            .windows(2)
                            .map(|w| self.edges[&(w[0].to_string(), w[1].to_string())].as_str())
                            .collect();
                        found.insert(
                            (a.clone(), b.to_string()),
                            format!("  {}: {why}\n      {}", chain.join(" → "), refs.join("; ")),
                        );
                    }
                    let into_binary = lib_file(a) && !lib_file(b);
                    if lb.is_none() && !into_binary {
                        queue.push_back(b);
                    }
                }
            }
        }
        found.into_values().collect()
    }
}

// ------------------------------------------------------------------------------------------
// The checker checked: a synthetic tree with a known cycle and known layer violations.

fn synthetic() -> BTreeMap<String, String> {
    let files: &[(&str, &str)] = &[
        (
            "lib.rs",
            r#"//! crate::ops::x::fx in a doc comment is no reference.
pub mod chess;
pub mod ops;
pub mod store;
pub use store::A;
pub fn helper() -> chess::Piece { chess::Piece }
"#,
        ),
        (
            "store/mod.rs",
            "pub mod a;\npub mod b;\npub use a::A;\n\
             #[cfg(test)]\nmod tests {\n    use crate::ops::x::fx;\n}\n",
        ),
        (
            "store/a.rs",
            r##"use crate::chess::Piece; // through chess/mod.rs's re-export to chess/piece.rs
pub struct A(Piece);
/* a block comment: crate::ops::y::Y /* nested */ */
pub fn s() -> &'static str { "crate::ops::y::Y \" super::x" }
pub fn r() -> &'static str { r#"crate::ops::x::fx"# }
"##,
        ),
        ("store/b.rs", "pub fn via() { crate::helper(); }\n"),
        (
            "chess/mod.rs",
            "mod piece;\npub use piece::Piece;\npub(crate) use self::piece::helper;\n\
             #[cfg(test)]\npub(crate) mod tests_support {\n    pub fn f() { crate::ops::x::fx() }\n}\n",
        ),
        (
            "chess/piece.rs",
            "pub struct Piece;\npub fn helper() -> char { '\"' }\npub fn l<'a>(x: &'a u8) -> &'a u8 { x }\n",
        ),
        ("ops/mod.rs", "pub mod x;\npub mod y;\n"),
        (
            "ops/x.rs",
            "use super::y::{self, Y, z::{Deep as D}};\npub fn fx() -> Y { let _d: Option<D> = None; y::make() }\n",
        ),
        (
            "ops/y/mod.rs",
            "pub mod z;\npub struct Y;\npub fn make() -> Y { Y }\npub fn back() { super::x::fx(); }\n",
        ),
        (
            "ops/y/z.rs",
            "use crate::store::*;\npub struct Deep;\npub fn up(_: A) {}\n",
        ),
        ("main.rs", "use demo::ops::x;\nfn main() { x::fx(); }\n"),
    ];
    files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

#[test]
fn checker_finds_the_cycle_and_the_layer_violations_of_a_synthetic_tree() {
    let g = Graph::build(&synthetic(), "demo");
    println!("{}", g.summary());
    let edges: BTreeSet<(&str, &str)> = g
        .edges
        .keys()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let expected: BTreeSet<(&str, &str)> = [
        ("lib.rs", "chess/piece.rs"),
        ("store/a.rs", "chess/piece.rs"),
        ("store/b.rs", "lib.rs"),
        ("ops/x.rs", "ops/y/mod.rs"),
        ("ops/x.rs", "ops/y/z.rs"),
        ("ops/y/mod.rs", "ops/x.rs"),
        ("ops/y/z.rs", "store/a.rs"),
        ("main.rs", "ops/x.rs"),
    ]
    .into_iter()
    .collect();
    assert_eq!(edges, expected, "{:#?}", g.edges);
    assert!(g.warnings.is_empty(), "{:?}", g.warnings);

    let cycles = g.cycles();
    assert_eq!(cycles.len(), 1, "{cycles:#?}");
    assert!(
        cycles[0].contains("cycle: ops/x.rs → ops/y/mod.rs → ops/x.rs"),
        "{}",
        cycles[0]
    );

    let bad = g.layer_violations(LAYERS);
    assert_eq!(bad.len(), 2, "{bad:#?}");
    assert!(
        bad[0].starts_with("  store/a.rs → chess/piece.rs: layer \"store"),
        "{}",
        bad[0]
    );
    assert!(
        bad[1].starts_with("  store/b.rs → lib.rs → chess/piece.rs: layer \"store"),
        "{}",
        bad[1]
    );

    // Siblings of an independent layer, and the library depending on the binary.
    let mut files = synthetic();
    files.insert(
        "chess/mod.rs".into(),
        "pub fn f() { crate::othello::g() }".into(),
    );
    files.insert("othello/mod.rs".into(), "pub fn g() {}".into());
    files.insert(
        "lib.rs".into(),
        "pub mod chess;\npub mod othello;\npub mod ops;\npub mod store;\n".into(),
    );
    files.insert("store/a.rs".into(), "pub struct A;".into());
    files.insert("store/b.rs".into(), String::new());
    let g = Graph::build(&files, "demo");
    let bad = g.layer_violations(LAYERS);
    assert_eq!(bad.len(), 1, "{bad:#?}");
    assert!(bad[0].contains("independent siblings"), "{}", bad[0]);
    assert_eq!(g.cycles().len(), 1);
}

/// Glob re-exports and `use super::*` in the children (a glob cycle) resolve, terminate, and
/// count only names the code uses (not methods).
#[test]
fn checker_follows_glob_imports() {
    let files: BTreeMap<String, String> = [
        ("lib.rs", "pub mod book;\n"),
        (
            "book/mod.rs",
            "mod other;\nmod reader;\nmod writer;\npub use reader::*;\npub use writer::*;\npub struct Shared;\n",
        ),
        ("book/reader.rs", "use super::*;\npub struct Book;\npub fn open() -> Compression { Compression }\n"),
        ("book/writer.rs", "use super::*;\npub struct Compression;\npub fn write(_b: &Book) {}\n"),
        ("book/other.rs", "use super::*;\npub fn f(s: Shared) { s.open(); }\n"),
    ]
    .iter()
    .map(|(p, t)| (p.to_string(), t.to_string()))
    .collect();
    let g = Graph::build(&files, "demo");
    let edges: Vec<(&str, &str)> = g
        .edges
        .keys()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(
        edges,
        [
            ("book/other.rs", "book/mod.rs"),
            ("book/reader.rs", "book/writer.rs"),
            ("book/writer.rs", "book/reader.rs"),
        ],
        "{:#?}",
        g.edges
    );
    assert_eq!(g.cycles().len(), 1);
}

#[test]
fn checker_finds_long_files() {
    let mut files = BTreeMap::new();
    files.insert("a.rs".to_string(), "1\n2\n3\n4\n".to_string());
    files.insert("b.rs".to_string(), "1\n2\n".to_string());
    assert_eq!(long_files(&files, 3, &[]).len(), 1);
    assert!(long_files(&files, 3, &[("a.rs", "generated table")]).is_empty());
    let stale = long_files(&files, 3, &[("a.rs", "x"), ("b.rs", "y"), ("c.rs", "z")]);
    assert_eq!(stale.len(), 2, "{stale:#?}");
}
