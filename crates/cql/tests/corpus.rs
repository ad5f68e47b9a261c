//! Statement corpus: documented CQL that must parse, invalid CQL that must fail at the right
//! place, random mutations that must never panic, and nesting that must not overflow the stack.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failing test may panic

use helenus_cql::{bind_receivers, parse, parse_script, MAX_NESTING_DEPTH};

fn corpus() -> Vec<String> {
    let text = include_str!("valid_statements.txt");
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(body) = line.strip_suffix('\\') {
            pending.push_str(body);
            pending.push('\n');
            continue;
        }
        pending.push_str(line);
        out.push(std::mem::take(&mut pending));
    }
    out
}

#[test]
fn documented_statements_parse() {
    let stmts = corpus();
    assert!(
        stmts.len() >= 200,
        "corpus has only {} statements",
        stmts.len()
    );
    let failures: Vec<String> = stmts
        .iter()
        .filter_map(|s| parse(s).err().map(|e| format!("{s}\n    -> {e}")))
        .collect();
    assert!(
        failures.is_empty(),
        "{} statements failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn whole_corpus_parses_as_one_script() {
    let stmts = corpus();
    let script: String = stmts
        .iter()
        .map(|s| format!("{}\n;\n", s.trim_end().trim_end_matches(';')))
        .collect();
    let parsed = parse_script(&script).unwrap();
    assert_eq!(parsed.len(), stmts.len());
}

/// (statement, line, column, fragment expected in the message)
const INVALID: &[(&str, usize, usize, &str)] = &[
    (
        "SELECT FOO",
        1,
        10,
        "mismatched input '<EOF>' expecting K_FROM",
    ),
    (
        "SELECT * FROM t x",
        1,
        16,
        "mismatched input 'x' expecting EOF",
    ),
    (
        "SELECT * FORM t",
        1,
        9,
        "mismatched input 'FORM' expecting K_FROM",
    ),
    (
        "SELEC * FROM t",
        1,
        0,
        "no viable alternative at input 'SELEC'",
    ),
    (
        "SELECT * FROM t WHERE",
        1,
        21,
        "no viable alternative at input '<EOF>'",
    ),
    ("SELECT * FROM t WHERE a = ", 1, 26, "no viable alternative"),
    (
        "SELECT * FROM t WHERE a == 1",
        1,
        25,
        "no viable alternative at input '='",
    ),
    (
        "SELECT * FROM select",
        1,
        14,
        "no viable alternative at input 'select'",
    ),
    (
        "SELECT * FROM t\nWHERE a = 1\nAND b = ;",
        3,
        8,
        "no viable alternative at input ';'",
    ),
    ("INSERT INTO t (a) VALUES (1", 1, 27, "expecting ')'"),
    ("INSERT INTO t (a) VALUE (1)", 1, 18, "expecting K_VALUES"),
    (
        "INSERT INTO t (a) VALUES (1) USING TTL 'x'",
        1,
        39,
        "no viable alternative",
    ),
    (
        "UPDATE t SET a = b + 1 WHERE k = 1",
        1,
        21,
        "Only expressions of the form X = X + <value>",
    ),
    (
        "UPDATE t SET WHERE k = 1",
        1,
        13,
        "no viable alternative at input 'WHERE'",
    ),
    (
        "DELETE FROM t WHERE k = 1 IF NOT EXISTS",
        1,
        29,
        "no viable alternative at input 'NOT'",
    ),
    (
        "CREATE TABLE t (k int PRIMARY KEY,, v int)",
        1,
        34,
        "no viable alternative at input ','",
    ),
    (
        "CREATE TABLE t (k list<int PRIMARY KEY)",
        1,
        27,
        "expecting '>'",
    ),
    (
        "CREATE TABLE t (k vector<float, x> PRIMARY KEY)",
        1,
        32,
        "expecting INTEGER",
    ),
    ("CREATE KEYSPACE ks", 1, 18, "expecting K_WITH"),
    ("CREATE FOO x", 1, 7, "no viable alternative at input 'FOO'"),
    ("DROP TABLE", 1, 10, "no viable alternative"),
    (
        "BEGIN BATCH SELECT * FROM t APPLY BATCH",
        1,
        12,
        "no viable alternative at input 'SELECT'",
    ),
    (
        "BEGIN BATCH INSERT INTO t (a) VALUES (1)",
        1,
        40,
        "no viable alternative",
    ),
    (
        "SELECT * FROM t WHERE a = 'unterminated",
        1,
        26,
        "unterminated string literal",
    ),
    (
        "SELECT * FROM t WHERE a = #",
        1,
        26,
        "token recognition error at: '#'",
    ),
    ("SELECT \"\" FROM t", 1, 7, "Empty quoted names"),
    ("USE", 1, 3, "no viable alternative"),
    ("", 1, 0, "no viable alternative at input '<EOF>'"),
];

#[test]
fn invalid_statements_fail_at_the_offending_token() {
    for (cql, line, column, fragment) in INVALID {
        let err = match parse(cql) {
            Ok(p) => panic!("{cql:?} parsed: {:?}", p.statement),
            Err(e) => e,
        };
        assert_eq!((err.line, err.column), (*line, *column), "{cql:?}: {err}");
        assert!(err.to_string().contains(fragment), "{cql:?}: {err}");
        assert!(
            err.to_string()
                .starts_with(&format!("line {line}:{column} ")),
            "{err}"
        );
    }
}

#[test]
fn error_display_matches_cassandra_style() {
    let err = parse("SELECT * FROM t x").unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 1:16 mismatched input 'x' expecting EOF (SELECT * FROM t [x])"
    );
    let err = parse("SELECT FOO BAR FROM t").unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 1:11 mismatched input 'BAR' expecting K_FROM (SELECT FOO [BAR] FROM...)"
    );
}

/// A small deterministic PRNG (xorshift64*), so failures reproduce without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const FRAGMENTS: &[&str] = &[
    "(", ")", "[", "]", "{", "}", ",", ";", ".", "..", ":", "?", "-", "+", "*", "'", "\"", "$$",
    "0x", "--", "/*", "SELECT", "FROM", "WHERE", "AND", "IN", "token", "frozen<", "map<", ">", "=",
    "<", "1", "-1.5e3", "NaN", "P1Y", "1h", "null", "IF", "NOT", "EXISTS", "µ", "é", "\n", " ",
];

fn mutate(rng: &mut Rng, s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    for _ in 0..=rng.below(4) {
        let len = chars.len();
        match rng.below(5) {
            0 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below(4).min(len - i - 1);
                chars.drain(i..i + n);
            }
            1 => {
                let frag = FRAGMENTS[rng.below(FRAGMENTS.len())];
                let i = rng.below(len + 1);
                for (k, c) in frag.chars().enumerate() {
                    chars.insert(i + k, c);
                }
            }
            2 if len > 1 => {
                let (a, b) = (rng.below(len), rng.below(len));
                chars.swap(a, b);
            }
            3 => {
                // Swap two whitespace-separated words.
                let text: String = chars.iter().collect();
                let mut words: Vec<&str> = text.split(' ').collect();
                let (a, b) = (rng.below(words.len()), rng.below(words.len()));
                words.swap(a, b);
                chars = words.join(" ").chars().collect();
            }
            _ if len > 0 => {
                let i = rng.below(len);
                chars.truncate(i);
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

#[test]
fn mutated_statements_never_panic() {
    let stmts = corpus();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut failures = 0usize;
    for round in 0..20_000 {
        let base = &stmts[round % stmts.len()];
        let m = mutate(&mut rng, base);
        let result = std::panic::catch_unwind(|| {
            if let Ok(p) = parse(&m) {
                assert_eq!(bind_receivers(&p).len(), p.bind_count);
            }
            let _ = parse_script(&m);
        });
        assert!(result.is_ok(), "panic on input {m:?}");
        if parse(&m).is_err() {
            failures += 1;
        }
    }
    // Most mutations break the statement; if nearly none do, the mutator is not mutating.
    assert!(
        failures > 1_000,
        "only {failures} mutations failed to parse"
    );
}

/// Issue 11: operator and selector chains are built by loops, so the parenthesis guard did not
/// see them and a 6 KB `1+1+...+1` built an AST that crashed the node when walked.
#[test]
fn operator_and_selector_chains_count_toward_nesting_depth() {
    let chain = |n: usize, link: &str| link.repeat(n);
    for n in [MAX_NESTING_DEPTH + 1, 3_000, 200_000] {
        let plus = vec!["1"; n].join("+");
        for cql in [
            format!("SELECT release_version FROM system.local WHERE key = {plus}"),
            format!("SELECT {plus} FROM system.local"),
            format!("SELECT * FROM t WHERE nosuch = {plus}"),
            format!("SELECT key{} FROM system.local", chain(n, ".a")),
            format!("SELECT key{} FROM system.local", chain(n, "[1]")),
            format!("SELECT a{} FROM t", chain(n, "*2")),
            format!("INSERT INTO t (a) VALUES ({})", vec!["?"; n].join(" - ")),
            format!("UPDATE t SET a = {plus} WHERE k = 1"),
        ] {
            let err = parse(&cql).unwrap_err();
            assert!(err.message.contains("nesting depth"), "{err}");
        }
    }
    // Ordinary lengths still parse.
    let plus = vec!["1"; 40].join("+");
    parse(&format!("SELECT {plus} FROM t WHERE k = {plus}")).unwrap();
    parse(&format!("SELECT m{} FROM t", chain(20, "[1]"))).unwrap();
    parse(&format!("SELECT u{} FROM t", chain(20, ".f"))).unwrap();
}

/// A chain's height adds to the nesting it sits in, so parentheses each holding a chain cannot
/// stack up an AST far taller than the bound (the first operand of a chain is as tall as it
/// was parsed, and the chain grows on top of it).
#[test]
fn nested_chains_are_bounded_by_their_total_height() {
    let inner = vec!["1"; 40].join("+");
    let mut term = inner.clone();
    for _ in 0..10 {
        term = format!("({term}) + {inner}");
    }
    let err = parse(&format!("SELECT * FROM t WHERE k = {term}")).unwrap_err();
    assert!(err.message.contains("nesting depth"), "{err}");
    let mut sel = "a".to_string();
    for _ in 0..10 {
        sel = format!("f({sel}){}", ".x".repeat(20));
    }
    let err = parse(&format!("SELECT {sel} FROM t")).unwrap_err();
    assert!(err.message.contains("nesting depth"), "{err}");
}

/// Issue 11: a type the parser accepted could be one the schema loader refused at the next
/// start; both now share `MAX_TYPE_NESTING`.
#[test]
fn types_nest_up_to_the_shared_limit() {
    let limit = helenus_types::MAX_TYPE_NESTING;
    let nested = |levels: usize| {
        format!(
            "CREATE TABLE t (k int PRIMARY KEY, v {}int{})",
            "frozen<".repeat(levels - 1),
            ">".repeat(levels - 1)
        )
    };
    parse(&nested(limit)).unwrap();
    let err = parse(&nested(limit + 1)).unwrap_err();
    assert!(err.message.contains("nested too deeply"), "{err}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for depth in [MAX_NESTING_DEPTH + 1, 10_000, 100_000] {
        let lists = format!(
            "INSERT INTO t (a) VALUES ({}1{})",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let err = parse(&lists).unwrap_err();
        assert!(err.message.contains("nesting depth"), "{err}");
        let funcs = format!("SELECT {}a{} FROM t", "f(".repeat(depth), ")".repeat(depth));
        assert!(parse(&funcs).unwrap_err().message.contains("nesting depth"));
        let types = format!(
            "CREATE TABLE t (k {}int{} PRIMARY KEY)",
            "list<".repeat(depth),
            ">".repeat(depth)
        );
        assert!(parse(&types)
            .unwrap_err()
            .message
            .contains("nested too deeply"));
        let rels = format!(
            "SELECT * FROM t WHERE {}a = 1{}",
            "(".repeat(depth),
            ")".repeat(depth)
        );
        assert!(parse(&rels).unwrap_err().message.contains("nesting depth"));
        let negs = format!("SELECT * FROM t WHERE a = {}1", "-(".repeat(depth));
        assert!(parse(&negs).is_err());
        let sel_negs = format!("SELECT {}a FROM t", "- ".repeat(depth));
        assert!(parse(&sel_negs).is_err());
        let hints = format!("SELECT {}a FROM t", "(int)".repeat(depth));
        assert!(parse(&hints).is_err());
        let term_hints = format!("INSERT INTO t (a) VALUES ({}?)", "(int)".repeat(depth));
        assert!(parse(&term_hints).is_err());
        let tuples = format!(
            "SELECT * FROM t WHERE a = {}1{}",
            "(1, ".repeat(depth),
            ")".repeat(depth)
        );
        assert!(parse(&tuples).is_err());
        let udts = format!(
            "INSERT INTO t (a) VALUES ({}1{})",
            "{a: ".repeat(depth),
            "}".repeat(depth)
        );
        assert!(parse(&udts).is_err());
    }
    let ok = format!(
        "INSERT INTO t (a) VALUES ({}1{})",
        "[".repeat(20),
        "]".repeat(20)
    );
    assert!(parse(&ok).is_ok());
}
