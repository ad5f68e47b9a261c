//! Printing AST pieces back as CQL (for DESCRIBE, error messages and logs).
//!
//! The output re-parses to the same tree: identifiers are quoted when they would otherwise be
//! read differently, strings escape `'`.

use std::fmt::{self, Display, Formatter, Write};

use crate::ast::*;
use crate::parser::is_reserved_keyword;

/// Whether an identifier can be printed unquoted (Cassandra's `ColumnIdentifier.maybeQuote`).
fn needs_quotes(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    !(starts_ok && rest_ok) || is_reserved_keyword(name)
}

impl Display for Ident {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if needs_quotes(&self.name) {
            write!(f, "\"{}\"", self.name.replace('"', "\"\""))
        } else {
            f.write_str(&self.name)
        }
    }
}

impl Display for QualifiedName {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(ks) = &self.keyspace {
            write!(f, "{ks}.")?;
        }
        write!(f, "{}", self.name)
    }
}

impl Display for CqlTypeExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            CqlTypeExpr::Native(n) => f.write_str(n.cql_name()),
            CqlTypeExpr::List(t) => write!(f, "list<{t}>"),
            CqlTypeExpr::Set(t) => write!(f, "set<{t}>"),
            CqlTypeExpr::Map(k, v) => write!(f, "map<{k}, {v}>"),
            CqlTypeExpr::Tuple(items) => {
                f.write_str("tuple<")?;
                comma_separated(f, items)?;
                f.write_char('>')
            }
            CqlTypeExpr::Vector(t, n) => write!(f, "vector<{t}, {n}>"),
            CqlTypeExpr::Frozen(t) => write!(f, "frozen<{t}>"),
            CqlTypeExpr::UserDefined(name) => write!(f, "{name}"),
            CqlTypeExpr::Custom(class) => write_string(f, class),
        }
    }
}

fn comma_separated<T: Display>(f: &mut Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

fn write_string(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    write!(f, "'{}'", s.replace('\'', "''"))
}

impl Display for BindMarker {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(n) => write!(
                f,
                ":{}",
                Ident {
                    name: n.clone(),
                    quoted: false
                }
            ),
            None => f.write_char('?'),
        }
    }
}

impl Display for ArithOp {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Rem => "%",
        })
    }
}

impl Display for Term {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Term::Null => f.write_str("null"),
            Term::Bool(b) => write!(f, "{b}"),
            Term::Integer(s) | Term::Float(s) | Term::Uuid(s) | Term::Duration(s) => f.write_str(s),
            Term::String(s) => write_string(f, s),
            Term::Blob(h) => write!(f, "0x{h}"),
            Term::Bind(b) => write!(f, "{b}"),
            Term::List(items) => {
                f.write_char('[')?;
                comma_separated(f, items)?;
                f.write_char(']')
            }
            Term::Set(items) => {
                f.write_char('{')?;
                comma_separated(f, items)?;
                f.write_char('}')
            }
            Term::Map(entries) => {
                f.write_char('{')?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_char('}')
            }
            Term::EmptyBrace => f.write_str("{}"),
            Term::Tuple(items) => {
                f.write_char('(')?;
                comma_separated(f, items)?;
                f.write_char(')')
            }
            Term::Udt(fields) => {
                f.write_char('{')?;
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_char('}')
            }
            Term::FunctionCall { name, args } => {
                write!(f, "{name}(")?;
                comma_separated(f, args)?;
                f.write_char(')')
            }
            Term::TypeHint { ty, term } => write!(f, "({ty}) {term}"),
            Term::Binary { op, left, right } => write!(f, "{left} {op} {right}"),
            Term::Negate(t) => write!(f, "-{t}"),
        }
    }
}

impl Display for Operator {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operator::Eq => "=",
            Operator::Lt => "<",
            Operator::Lte => "<=",
            Operator::Gt => ">",
            Operator::Gte => ">=",
            Operator::Neq => "!=",
            Operator::In => "IN",
            Operator::NotIn => "NOT IN",
            Operator::Contains => "CONTAINS",
            Operator::ContainsKey => "CONTAINS KEY",
            Operator::NotContains => "NOT CONTAINS",
            Operator::NotContainsKey => "NOT CONTAINS KEY",
            Operator::Like => "LIKE",
            Operator::IsNotNull => "IS NOT",
            Operator::Between => "BETWEEN",
        })
    }
}

impl Display for Selector {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Column(c) => write!(f, "{c}"),
            Selector::Term(t) => write!(f, "{t}"),
            Selector::FunctionCall { name, args } => {
                write!(f, "{name}(")?;
                comma_separated(f, args)?;
                f.write_char(')')
            }
            Selector::CountStar => f.write_str("count(*)"),
            Selector::Cast {
                selector, written, ..
            } => write!(f, "cast({selector} AS {written})"),
            Selector::WriteTime(s) => write!(f, "writetime({s})"),
            Selector::MaxWriteTime(s) => write!(f, "maxwritetime({s})"),
            Selector::Ttl(s) => write!(f, "ttl({s})"),
            Selector::Field { selector, field } => write!(f, "{selector}.{field}"),
            Selector::Element { selector, key } => write!(f, "{selector}[{key}]"),
            Selector::Slice { selector, from, to } => {
                write!(f, "{selector}[")?;
                if let Some(a) = from {
                    write!(f, "{a}")?;
                }
                f.write_str("..")?;
                if let Some(b) = to {
                    write!(f, "{b}")?;
                }
                f.write_char(']')
            }
            Selector::TypeHint { ty, selector } => write!(f, "({ty}) {selector}"),
            Selector::Binary { op, left, right } => write!(f, "{left} {op} {right}"),
            Selector::Negate(s) => write!(f, "-{s}"),
            Selector::List(items) => {
                f.write_char('[')?;
                comma_separated(f, items)?;
                f.write_char(']')
            }
            Selector::Set(items) => {
                f.write_char('{')?;
                comma_separated(f, items)?;
                f.write_char('}')
            }
            Selector::Map(entries) => {
                f.write_char('{')?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_char('}')
            }
            Selector::Tuple(items) => {
                f.write_char('(')?;
                comma_separated(f, items)?;
                f.write_char(')')
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_only_when_needed() {
        assert_eq!(Ident::unquoted("abc_1").to_string(), "abc_1");
        assert_eq!(Ident::quoted("MyCol").to_string(), "\"MyCol\"");
        assert_eq!(Ident::quoted("select").to_string(), "\"select\"");
        assert_eq!(Ident::quoted("a\"b").to_string(), "\"a\"\"b\"");
        assert_eq!(Ident::unquoted("key").to_string(), "key");
    }

    #[test]
    fn nested_types_print_as_cql() {
        let t = CqlTypeExpr::Frozen(Box::new(CqlTypeExpr::Map(
            Box::new(CqlTypeExpr::Native(NativeType::Varchar)),
            Box::new(CqlTypeExpr::Vector(
                Box::new(CqlTypeExpr::Native(NativeType::Float)),
                3,
            )),
        )));
        assert_eq!(t.to_string(), "frozen<map<text, vector<float, 3>>>");
    }

    #[test]
    fn strings_escape_single_quotes() {
        assert_eq!(Term::String("it's".into()).to_string(), "'it''s'");
    }
}
