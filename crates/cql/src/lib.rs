//! CQL 3 as Cassandra 5.0 accepts it: lexer, recursive-descent parser and AST.
//!
//! This crate owns the syntax of CQL: turning statement text into an [`ast::Statement`] with
//! numbered bind markers, and printing types and terms back as CQL. It does not know schemas,
//! resolve names, check types or execute anything (that is `schema` and `server`).
//!
//! Entry points: [`parse`] for one statement, [`parse_script`] for `;`-separated statements,
//! and [`bind_receivers`] for what each bind marker binds to (prepared-statement metadata).
//! Errors are [`ParseError`]s whose `Display` reads like Cassandra's `SyntaxException`
//! messages (`line 1:13 mismatched input 'x' expecting EOF (...)`).
//!
//! ```
//! use helenus_cql::ast::{Statement, Term};
//!
//! let parsed = helenus_cql::parse("SELECT v FROM ks.t WHERE k = ? LIMIT :n").unwrap();
//! assert_eq!(parsed.bind_count, 2);
//! assert_eq!(parsed.bind_names, vec![None, Some("n".to_string())]);
//! let Statement::Select(select) = parsed.statement else { unreachable!() };
//! assert_eq!(select.table.to_string(), "ks.t");
//! assert!(matches!(select.limit, Some(Term::Bind(_))));
//! ```

pub mod ast;
mod display;
pub mod error;
pub mod lexer;
mod parser;
pub mod receivers;

pub use ast::{Parsed, Statement};
pub use error::ParseError;
pub use parser::{is_reserved_keyword, parse, parse_script, MAX_NESTING_DEPTH};
pub use receivers::{bind_receivers, BindReceiver};
