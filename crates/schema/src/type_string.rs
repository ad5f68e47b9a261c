//! Parses CQL type strings as Cassandra prints them in `system_schema` (`frozen<map<text, int>>`,
//! `tuple<int, text>`, `vector<float, 3>`, user type names).

use helenus_types::{CqlType, NativeType, UserType, MAX_TYPE_NESTING};

/// Why a type string does not parse (a damaged schema file, or a type this build does not know).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TypeStringError {
    #[error("trailing characters in type '{0}'")]
    Trailing(String),
    #[error("unterminated quoted name")]
    UnterminatedQuote,
    #[error("{0}")]
    NotUtf8(#[from] std::str::Utf8Error),
    #[error("expected a type name at {0}")]
    ExpectedName(usize),
    #[error("expected '{expected}' at {at}")]
    Expected { expected: char, at: usize },
    #[error("type nested too deeply (more than {MAX_TYPE_NESTING} levels)")]
    TooDeep,
    /// `frozen`, `list` or `set` with other than one argument.
    #[error("{0} takes one type argument")]
    OneArgument(&'static str),
    #[error("map takes two type arguments")]
    MapArguments,
    #[error("vector dimension must be a positive integer")]
    VectorDimension,
    #[error("Unknown type {0}")]
    Unknown(String),
}

type Parsed<T> = Result<T, TypeStringError>;

/// Looks user types up by name while parsing a type string.
pub trait TypeResolver {
    fn user_type(&self, name: &str) -> Option<UserType>;
}

impl TypeResolver for () {
    fn user_type(&self, _name: &str) -> Option<UserType> {
        None
    }
}

/// Parses one type string; user types are looked up through `resolver`.
pub fn parse_type_string(s: &str, resolver: &dyn TypeResolver) -> Parsed<CqlType> {
    let mut p = Parser {
        s: s.as_bytes(),
        pos: 0,
        resolver,
        depth: 0,
    };
    let t = p.parse_type()?;
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(TypeStringError::Trailing(s.to_string()));
    }
    Ok(t)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    resolver: &'a dyn TypeResolver,
    depth: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn ident(&mut self) -> Parsed<String> {
        self.skip_ws();
        if self.s.get(self.pos) == Some(&b'"') {
            let mut out = Vec::new();
            self.pos += 1;
            loop {
                match self.s.get(self.pos) {
                    None => return Err(TypeStringError::UnterminatedQuote),
                    Some(b'"') if self.s.get(self.pos + 1) == Some(&b'"') => {
                        out.push(b'"');
                        self.pos += 2;
                    }
                    Some(b'"') => {
                        self.pos += 1;
                        break;
                    }
                    Some(&c) => {
                        out.push(c);
                        self.pos += 1;
                    }
                }
            }
            return String::from_utf8(out).map_err(|e| e.utf8_error().into());
        }
        let start = self.pos;
        while self.pos < self.s.len()
            && (self.s[self.pos].is_ascii_alphanumeric() || matches!(self.s[self.pos], b'_' | b'.'))
        {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(TypeStringError::ExpectedName(self.pos));
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
    }

    fn expect(&mut self, c: u8) -> Parsed<()> {
        self.skip_ws();
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(TypeStringError::Expected {
                expected: c as char,
                at: self.pos,
            })
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn args(&mut self) -> Parsed<Vec<CqlType>> {
        self.expect(b'<')?;
        let mut out = vec![self.parse_type()?];
        while self.peek() == Some(b',') {
            self.pos += 1;
            out.push(self.parse_type()?);
        }
        self.expect(b'>')?;
        Ok(out)
    }

    fn parse_type(&mut self) -> Parsed<CqlType> {
        self.depth += 1;
        if self.depth > MAX_TYPE_NESTING {
            return Err(TypeStringError::TooDeep);
        }
        let r = self.parse_type_inner();
        self.depth -= 1;
        r
    }

    /// `vector<element, dimension>`, after the name.
    fn vector(&mut self) -> Parsed<CqlType> {
        self.expect(b'<')?;
        let element = self.parse_type()?;
        self.expect(b',')?;
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
            self.pos += 1;
        }
        let dimension: u32 = std::str::from_utf8(&self.s[start..self.pos])?
            .parse()
            .map_err(|_| TypeStringError::VectorDimension)?;
        self.expect(b'>')?;
        Ok(CqlType::Vector {
            element: Box::new(element),
            dimension,
        })
    }

    fn parse_type_inner(&mut self) -> Parsed<CqlType> {
        if self.peek() == Some(b'\'') {
            self.pos += 1;
            let start = self.pos;
            while self.pos < self.s.len() && self.s[self.pos] != b'\'' {
                self.pos += 1;
            }
            let class = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
            self.expect(b'\'')?;
            return Ok(CqlType::Custom(class));
        }
        let name = self.ident()?;
        let lower = name.to_ascii_lowercase();
        if lower == "empty" {
            return Ok(CqlType::empty());
        }
        if let Some(n) = NativeType::from_cql_name(&lower) {
            return Ok(CqlType::Native(n));
        }
        let one = |mut v: Vec<CqlType>, what: &'static str| -> Parsed<CqlType> {
            match (v.pop(), v.is_empty()) {
                (Some(t), true) => Ok(t),
                _ => Err(TypeStringError::OneArgument(what)),
            }
        };
        match lower.as_str() {
            "frozen" => {
                let inner = one(self.args()?, "frozen")?;
                Ok(inner.frozen())
            }
            "list" => Ok(CqlType::List {
                element: Box::new(one(self.args()?, "list")?),
                frozen: false,
            }),
            "set" => Ok(CqlType::Set {
                element: Box::new(one(self.args()?, "set")?),
                frozen: false,
            }),
            "map" => {
                let mut a = self.args()?;
                let (Some(value), Some(key), true) = (a.pop(), a.pop(), a.is_empty()) else {
                    return Err(TypeStringError::MapArguments);
                };
                Ok(CqlType::Map {
                    key: Box::new(key),
                    value: Box::new(value),
                    frozen: false,
                })
            }
            "tuple" => Ok(CqlType::Tuple(self.args()?)),
            "vector" => self.vector(),
            _ => match self.resolver.user_type(&name) {
                Some(def) => Ok(CqlType::Udt {
                    def: Box::new(def),
                    frozen: false,
                }),
                None => Err(TypeStringError::Unknown(name)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_is_wrong_as_before() {
        let err = |s: &str| parse_type_string(s, &()).unwrap_err().to_string();
        assert_eq!(err("int x"), "trailing characters in type 'int x'");
        assert_eq!(err("map<int>"), "map takes two type arguments");
        assert_eq!(err("list<int, int>"), "list takes one type argument");
        assert_eq!(
            err("vector<float, x>"),
            "vector dimension must be a positive integer"
        );
        assert_eq!(err("nope"), "Unknown type nope");
        assert_eq!(err("list<int"), "expected '>' at 8");
        assert_eq!(err("\"abc"), "unterminated quoted name");
    }

    #[test]
    fn round_trips_system_schema_spellings() {
        for s in [
            "int",
            "frozen<map<text, text>>",
            "set<text>",
            "list<int>",
            "frozen<tuple<int, text>>",
            "vector<float, 3>",
            "map<text, frozen<list<int>>>",
        ] {
            let t = parse_type_string(s, &()).unwrap();
            assert_eq!(t.to_string(), s);
        }
    }

    /// Issue 11: the loader's limit was lower than what CREATE TABLE accepted, so the node
    /// refused to start. Every type within `MAX_TYPE_NESTING` must load back.
    #[test]
    fn the_loader_reads_back_every_type_within_the_shared_limit() {
        let mut t = CqlType::Native(NativeType::Int);
        let mut tuple = CqlType::Native(NativeType::Int);
        for _ in 0..40 {
            let spelled = t.to_string();
            let loads = parse_type_string(&spelled, &()).is_ok();
            assert_eq!(loads, t.nesting_depth() <= MAX_TYPE_NESTING, "{spelled}");
            let spelled = tuple.to_string();
            let loads = parse_type_string(&spelled, &()).is_ok();
            assert_eq!(
                loads,
                tuple.nesting_depth() <= MAX_TYPE_NESTING,
                "{spelled}"
            );
            t = CqlType::List {
                element: Box::new(t),
                frozen: true,
            };
            tuple = CqlType::Tuple(vec![tuple]);
        }
    }

    #[test]
    fn unknown_type_is_an_error_not_a_panic() {
        assert!(parse_type_string("foo", &()).is_err());
        assert!(parse_type_string("map<int>", &()).is_err());
        assert!(parse_type_string("list<", &()).is_err());
        let deep = "list<".repeat(100) + "int" + &">".repeat(100);
        assert!(parse_type_string(&deep, &()).is_err());
    }
}
